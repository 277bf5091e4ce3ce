// fio-style address streams: Zipf ranks against the closed-form probability
// mass, the read/write mix against rwmixread, sequential streams.
#include "sim/system/workload/address_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <vector>

namespace gpunvme {
namespace {

// P(rank k) = k^-theta / H(n, theta), summed directly.
double zipf_pmf(std::uint64_t k, std::uint64_t n, double theta) {
  double h = 0;
  for (std::uint64_t i = 1; i <= n; ++i) h += std::pow(static_cast<double>(i), -theta);
  return std::pow(static_cast<double>(k), -theta) / h;
}

void expect_zipf(std::uint64_t n, double theta) {
  ZipfSampler zipf(n, theta);
  std::mt19937_64 rng(42);
  constexpr int kDraws = 100000;
  std::vector<int> count(n + 1, 0);
  for (int i = 0; i < kDraws; ++i) {
    const std::uint64_t k = zipf(rng);
    ASSERT_GE(k, 1u);
    ASSERT_LE(k, n);
    ++count[k];
  }
  for (std::uint64_t k : std::vector<std::uint64_t>{1, 2, 5, n}) {
    const double p = zipf_pmf(k, n, theta);
    const double sd = std::sqrt(p * (1 - p) / kDraws);
    EXPECT_NEAR(static_cast<double>(count[k]) / kDraws, p, 5 * sd + 1e-4)
        << "rank " << k << " n " << n << " theta " << theta;
  }
}

TEST(Zipf, RankFrequenciesMatchThePmf) {
  expect_zipf(100, 0.99);
  expect_zipf(100, 1.0);
  expect_zipf(1000, 1.2);
  expect_zipf(50, 0.5);
}

TEST(Zipf, HugeRangesStayInBounds) {
  ZipfSampler zipf(1ull << 40, 0.99);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t k = zipf(rng);
    EXPECT_GE(k, 1u);
    EXPECT_LE(k, 1ull << 40);
  }
}

TEST(AddressStream, RandrwFollowsRwmixread) {
  AddressStream s(Pattern::RandRW, Distribution::Uniform, 1000, 70, 0.99, 7, 0, 1);
  constexpr int kDraws = 100000;
  int writes = 0;
  for (int i = 0; i < kDraws; ++i) writes += s.next().write ? 1 : 0;
  const double sd = std::sqrt(0.3 * 0.7 / kDraws);
  EXPECT_NEAR(static_cast<double>(writes) / kDraws, 0.3, 5 * sd);
}

TEST(AddressStream, PatternsDecideReadOrWrite) {
  AddressStream reads(Pattern::RandRead, Distribution::Uniform, 10, 50, 0.99, 1, 0, 1);
  AddressStream writes(Pattern::Write, Distribution::Uniform, 10, 50, 0.99, 1, 0, 1);
  for (int i = 0; i < 100; ++i) {
    EXPECT_FALSE(reads.next().write);
    EXPECT_TRUE(writes.next().write);
  }
}

TEST(AddressStream, SequentialStreamsStartSpacedAndWrap) {
  // 4 streams over 100 slots start at 0, 25, 50, 75 and step by one.
  for (std::uint64_t stream = 0; stream < 4; ++stream) {
    AddressStream s(Pattern::Read, Distribution::Uniform, 100, 100, 0.99, 1, stream, 4);
    for (std::uint64_t i = 0; i < 30; ++i) EXPECT_EQ(s.next().slot, (stream * 25 + i) % 100);
  }
}

TEST(AddressStream, ZipfHotBlocksAreScatteredOverTheSpan) {
  // The hottest ranks map to distinct slots spread over the span, not to
  // the first few slots.
  AddressStream s(Pattern::RandRead, Distribution::Zipf, 1 << 20, 100, 1.2, 3, 0, 1);
  std::set<std::uint64_t> slots;
  std::uint64_t beyond_first_percent = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::uint64_t slot = s.next().slot;
    EXPECT_LT(slot, 1u << 20);
    slots.insert(slot);
    beyond_first_percent += slot >= (1u << 20) / 100 ? 1 : 0;
  }
  EXPECT_GT(beyond_first_percent, 1000u);
  EXPECT_LT(slots.size(), 2000u);  // skewed: repeats
}

}  // namespace
}  // namespace gpunvme
