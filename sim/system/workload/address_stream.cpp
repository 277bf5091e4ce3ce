#include "sim/system/workload/address_stream.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace gpunvme {

namespace {
// log1p(x) / x and expm1(x) / x, accurate near 0 (where theta is close to 1).
double log1p_over_x(double x) {
  if (std::abs(x) > 1e-8) return std::log1p(x) / x;
  return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}
double expm1_over_x(double x) {
  if (std::abs(x) > 1e-8) return std::expm1(x) / x;
  return 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}
}  // namespace

ZipfSampler::ZipfSampler(std::uint64_t n, double theta)
    : n_(std::max<std::uint64_t>(n, 1)), theta_(theta) {
  h_integral_x1_ = h_integral(1.5) - 1.0;
  h_integral_n_ = h_integral(static_cast<double>(n_) + 0.5);
  s_ = 2.0 - h_integral_inverse(h_integral(2.5) - h(2.0));
}

double ZipfSampler::h(double x) const { return std::exp(-theta_ * std::log(x)); }

double ZipfSampler::h_integral(double x) const {
  const double log_x = std::log(x);
  return expm1_over_x((1.0 - theta_) * log_x) * log_x;
}

double ZipfSampler::h_integral_inverse(double x) const {
  double t = x * (1.0 - theta_);
  t = std::max(t, -1.0);
  return std::exp(log1p_over_x(t) * x);
}

std::uint64_t ZipfSampler::operator()(RandomEngine& rng) const {
  for (;;) {
    const double u = h_integral_n_ + random_unit(rng) * (h_integral_x1_ - h_integral_n_);
    const double x = h_integral_inverse(u);
    double k = std::floor(x + 0.5);
    k = std::clamp(k, 1.0, static_cast<double>(n_));
    if (k - x <= s_ || u >= h_integral(k + 0.5) - h(k)) return static_cast<std::uint64_t>(k);
  }
}

AddressStream::AddressStream(Pattern pattern, Distribution distribution, std::uint64_t slots,
                             std::uint32_t rwmixread, double zipf_theta, std::uint64_t seed,
                             std::uint64_t stream, std::uint64_t streams)
    : pattern_(pattern),
      distribution_(distribution),
      slots_(std::max<std::uint64_t>(slots, 1)),
      rwmixread_(rwmixread),
      rng_(seed * 0x9E3779B97F4A7C15ull + stream),
      zipf_(slots_, zipf_theta),
      scatter_(1) {
  // fio's read and write are sequential whatever the distribution.
  if (pattern_ == Pattern::Read || pattern_ == Pattern::Write) {
    distribution_ = Distribution::Sequential;
  }
  const std::uint64_t per_stream =
      std::max<std::uint64_t>(1, slots_ / std::max<std::uint64_t>(streams, 1));
  next_sequential_ = (stream * per_stream) % slots_;
  // A large odd multiplier coprime with the span maps rank r to slot
  // (r * scatter) mod slots: a bijection that scatters the hot ranks.
  std::uint64_t m = 0x9E3779B97F4A7C15ull % slots_;
  while (slots_ > 1 && std::gcd(m, slots_) != 1) m = (m + 1) % slots_;
  scatter_ = slots_ > 1 ? m : 0;
}

AddressChoice AddressStream::next() {
  AddressChoice c{};
  switch (pattern_) {
    case Pattern::RandWrite:
    case Pattern::Write: c.write = true; break;
    case Pattern::RandRW: c.write = random_below(rng_, 100) >= rwmixread_; break;
    default: c.write = false; break;
  }
  switch (distribution_) {
    case Distribution::Sequential:
      c.slot = next_sequential_;
      next_sequential_ = (next_sequential_ + 1) % slots_;
      break;
    case Distribution::Zipf: {
      const std::uint64_t rank = zipf_(rng_) - 1;
      c.slot =
          static_cast<std::uint64_t>((static_cast<unsigned __int128>(rank) * scatter_) % slots_);
      break;
    }
    case Distribution::Uniform: c.slot = random_below(rng_, slots_); break;
  }
  return c;
}

}  // namespace gpunvme
