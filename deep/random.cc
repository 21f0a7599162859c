#include "deep/random.h"

#include <cmath>

namespace deep500 {

uint64_t Random::next_u64() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double Random::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

double Random::uniform(double lo, double hi) {
  return lo + (hi - lo) * uniform();
}

double Random::normal(double mean, double stddev) {
  double u1 = uniform();
  double u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

namespace {
template <class Gen>
void fill(Tensor& t, Gen gen) {
  if (t.dtype() == DataType::Bool) {
    bool* d = t.data<bool>();
    for (int64_t i = 0; i < t.numel(); ++i) d[i] = gen() >= 0.5;
    return;
  }
  dispatch_numeric(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* d = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double v = gen();
      if constexpr (std::is_integral_v<T>) {
        d[i] = static_cast<T>(std::llround(v));
      } else {
        d[i] = T(static_cast<float>(v));
        if constexpr (std::is_same_v<T, double>) d[i] = v;
      }
    }
  });
}
}  // namespace

void Random::fill_uniform(Tensor& t, double lo, double hi) {
  fill(t, [&] { return uniform(lo, hi); });
}

void Random::fill_normal(Tensor& t, double mean, double stddev) {
  fill(t, [&] { return normal(mean, stddev); });
}

}  // namespace deep500
