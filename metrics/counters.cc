#include "metrics/counters.h"

namespace deep500::metrics {

Rates rates_from(const Counters& c, double seconds) {
  Rates r;
  if (!(seconds > 0)) return r;  // also rejects NaN
  r.flops_per_second = c.flops / seconds;
  r.bytes_per_second = c.bytes / seconds;
  r.items_per_second = c.items / seconds;
  return r;
}

}  // namespace deep500::metrics
