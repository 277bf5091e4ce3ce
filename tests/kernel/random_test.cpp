// The portable random functions against hand-worked values: a scripted
// engine hands out chosen 64-bit words, and each expected draw follows from
// Boost.Random's documented method (one bucket of floor((2^64 - 1) / n)
// words per value, words past the last whole bucket rejected; a real in
// [0, 1) as word * 2^-64, a word that rounds to 1.0 rejected).
#include "sim/kernel/random.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <limits>
#include <vector>

#include "tests/kernel/scripted_engine.h"

namespace gpunvme {
namespace {

using test::ScriptedEngine;

constexpr std::uint64_t kAllOnes = std::numeric_limits<std::uint64_t>::max();

TEST(PortableRandom, TheEngineIsTheStandardsMt19937_64) {
  // [rand.predef]: the 10000th consecutive output of a default-constructed
  // mt19937_64 is 9981545732273789042.
  RandomEngine engine;
  engine.discard(9999);
  EXPECT_EQ(engine(), 9981545732273789042ull);
}

TEST(PortableRandom, BelowThreeUsesBucketsOfAThirdAndRejectsTheRemainder) {
  // (2^64 - 1) / 3 = 6148914691236517205 exactly, so buckets are that wide
  // and the single word 2^64 - 1 (bucket 3) is rejected.
  const std::uint64_t bucket = 6148914691236517205ull;
  ScriptedEngine e{{0, bucket - 1, bucket, 2 * bucket + 7, kAllOnes, 3 * bucket - 1}};
  EXPECT_EQ(random_below(e, 3), 0u);
  EXPECT_EQ(random_below(e, 3), 0u);
  EXPECT_EQ(random_below(e, 3), 1u);
  EXPECT_EQ(random_below(e, 3), 2u);
  EXPECT_EQ(random_below(e, 3), 2u);  // kAllOnes rejected, then 3 * bucket - 1
  EXPECT_TRUE(e.words.empty());
}

TEST(PortableRandom, BelowAPowerOfTwoTakesTheTopBits) {
  // n = 4 divides 2^64: buckets of 2^62 words, the value is word >> 62.
  ScriptedEngine e{{0x3FFFFFFFFFFFFFFFull, 0x4000000000000000ull, kAllOnes}};
  EXPECT_EQ(random_below(e, 4), 0u);
  EXPECT_EQ(random_below(e, 4), 1u);
  EXPECT_EQ(random_below(e, 4), 3u);
  ScriptedEngine one{{12345}};
  EXPECT_EQ(random_below(one, 1), 0u);  // one value: no word drawn
  EXPECT_EQ(one.words.size(), 1u);
}

TEST(PortableRandom, BetweenOffsetsBelow) {
  // [10, 12] is three values: as random_below(3) plus 10.
  const std::uint64_t bucket = 6148914691236517205ull;
  ScriptedEngine e{{2 * bucket}};
  EXPECT_EQ(random_between(e, 10, 12), 12u);
}

TEST(PortableRandom, UnitIsTheWordTimesTwoToTheMinus64) {
  // 2^63 -> 0.5; 2^62 -> 0.25; 2^64 - 1 rounds to 2^64 as a double, which
  // would give 1.0, so it is rejected and the next word (0) gives 0.0.
  ScriptedEngine e{{1ull << 63, 1ull << 62, kAllOnes, 0}};
  EXPECT_EQ(random_unit(e), 0.5);
  EXPECT_EQ(random_unit(e), 0.25);
  EXPECT_EQ(random_unit(e), 0.0);
  EXPECT_TRUE(e.words.empty());
}

TEST(PortableRandom, ShuffleIsFisherYatesFromTheBack) {
  // Four elements: positions 3, 2, 1 swap with random_below(4), (3), (2).
  // Words: 0 -> j = 0 (swap 3 and 0); bucket(3) -> j = 1 (swap 2 and 1);
  // 2^63 -> random_below(2) = 1 (position 1 stays).
  const std::uint64_t third = 6148914691236517205ull;
  ScriptedEngine e{{0, third, 1ull << 63}};
  std::vector<int> v{10, 20, 30, 40};
  random_shuffle(v, e);
  EXPECT_EQ(v, (std::vector<int>{40, 30, 20, 10}));
  EXPECT_TRUE(e.words.empty());
}

}  // namespace
}  // namespace gpunvme
