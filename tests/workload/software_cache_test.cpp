// The GPU software cache: hits and misses, CLOCK's second chance, reference
// counts that keep lines in use from eviction.
#include "sim/system/workload/software_cache.h"

#include <gtest/gtest.h>

namespace gpunvme {
namespace {

TEST(SoftwareCache, MissThenHit) {
  SoftwareCache cache(4);
  auto a = cache.acquire(10);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->hit);
  auto b = cache.acquire(10);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->hit);
  EXPECT_EQ(a->slot, b->slot);
  EXPECT_EQ(cache.users(a->slot), 2u);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
}

TEST(SoftwareCache, LinesInUseAreNeverEvicted) {
  SoftwareCache cache(2);
  auto a = cache.acquire(1);
  auto b = cache.acquire(2);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(cache.acquire(3));  // both slots held
  cache.release(b->slot);
  auto c = cache.acquire(3);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->slot, b->slot);
  EXPECT_TRUE(cache.contains(1));
  EXPECT_FALSE(cache.contains(2));
  EXPECT_EQ(cache.evictions(), 1u);
}

TEST(SoftwareCache, ClockGivesReferencedLinesASecondChance) {
  SoftwareCache cache(3);
  for (std::uint64_t line : {1, 2, 3}) cache.release(cache.acquire(line)->slot);
  // All three have their reference bit set: the hand clears 1, 2, 3 and
  // evicts 1 (the first it finds clear on its second pass).
  cache.release(cache.acquire(4)->slot);
  EXPECT_FALSE(cache.contains(1));
  // 2 and 3 now have clear bits; touch 2, so the next victim is 3.
  cache.release(cache.acquire(2)->slot);
  cache.release(cache.acquire(5)->slot);
  EXPECT_TRUE(cache.contains(2));
  EXPECT_FALSE(cache.contains(3));
  EXPECT_TRUE(cache.contains(4));
  EXPECT_TRUE(cache.contains(5));
}

TEST(SoftwareCache, AnInvalidatedLineMissesAgainAndItsSlotIsReused) {
  SoftwareCache cache(2);
  const auto hold = cache.acquire(7);
  ASSERT_TRUE(hold && !hold->hit);
  cache.invalidate(hold->slot);  // its read failed
  EXPECT_FALSE(cache.contains(7));
  EXPECT_EQ(cache.users(hold->slot), 1u);  // the holder still holds the slot
  cache.release(hold->slot);
  const auto again = cache.acquire(7);
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->hit);
  EXPECT_EQ(cache.misses(), 2u);
  EXPECT_EQ(cache.evictions(), 0u);  // nothing valid was evicted
}

}  // namespace
}  // namespace gpunvme
