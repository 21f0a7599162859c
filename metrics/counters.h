// Work counters of one repetition and the rates derived from a time.
#pragma once

namespace deep500::metrics {

// Work done by ONE repetition of a workload (0 = not counted).
struct Counters {
  double flops = 0;  // floating-point operations
  double bytes = 0;  // compulsory memory traffic (inputs read + outputs written)
  double items = 0;  // domain items (samples, tokens, messages, ...)
};

// Counters divided by a time; 0 where the counter (or the time) is 0.
struct Rates {
  double flops_per_second = 0;
  double bytes_per_second = 0;
  double items_per_second = 0;
};

// Rates of one repetition that took `seconds` (pass the median: it is the
// statistic the rates are reported for).
Rates rates_from(const Counters& c, double seconds);

}  // namespace deep500::metrics
