// Where a fio-style thread's next I/O goes and whether it reads or writes:
// fio's rw (randread, read, randwrite, write, randrw with rwmixread) and
// random_distribution (uniform, zipf:theta), over a span of fixed-size slots.
// Each thread draws from its own generator, so streams do not depend on the
// order in which threads run.
#pragma once

#include <cstdint>
#include <string>

#include "sim/kernel/params/enum_names.h"
#include "sim/kernel/random.h"

namespace gpunvme {

// Zipf-distributed ranks 1..n with P(k) proportional to k^-theta, by
// rejection-inversion (Hormann and Derflinger, "Rejection-inversion to
// generate variates from monotone discrete distributions", ACM TOMACS 1996):
// O(1) per draw and no table, for any theta > 0 and n up to 2^63.
class ZipfSampler {
 public:
  ZipfSampler(std::uint64_t n, double theta);
  std::uint64_t operator()(RandomEngine& rng) const;
  std::uint64_t n() const { return n_; }

 private:
  double h(double x) const;
  double h_integral(double x) const;
  double h_integral_inverse(double x) const;

  std::uint64_t n_;
  double theta_;
  double h_integral_x1_;
  double h_integral_n_;
  double s_;
};

// fio's rw; the names are the scenario's rw choices.
enum class Pattern { RandRead, Read, RandWrite, Write, RandRW };
inline const EnumNameTable& enum_names(Pattern) {
  static const EnumNameTable table("randread, read, randwrite, write, randrw");
  return table;
}
// fio's random_distribution; the names are the scenario's distribution choices.
enum class Distribution { Uniform, Sequential, Zipf };
inline const EnumNameTable& enum_names(Distribution) {
  static const EnumNameTable table("uniform, sequential, zipf");
  return table;
}

struct AddressChoice {
  std::uint64_t slot;  // 0 .. slots-1
  bool write;
};

class AddressStream {
 public:
  // `slots`: I/O-sized slots in the span; `stream`/`streams`: this thread's
  // index and the thread count (sequential streams start evenly spaced).
  AddressStream(Pattern pattern, Distribution distribution, std::uint64_t slots,
                std::uint32_t rwmixread, double zipf_theta, std::uint64_t seed,
                std::uint64_t stream, std::uint64_t streams);
  AddressChoice next();

 private:
  Pattern pattern_;
  Distribution distribution_;
  std::uint64_t slots_;
  std::uint32_t rwmixread_;
  RandomEngine rng_;
  ZipfSampler zipf_;
  std::uint64_t scatter_;  // odd multiplier coprime with slots: spreads hot ranks
  std::uint64_t next_sequential_;
};

}  // namespace gpunvme
