// Embedding gather: I/O counts and read amplification against the layout
// computed by hand.
#include "sim/system/workload/gather.h"

#include <gtest/gtest.h>

#include <cmath>

#include "workload_test_util.h"

namespace gpunvme {
namespace {

TEST(Gather, LayoutPacksWholeRowsIntoUnits) {
  const GatherLayout small = gather_layout(1000, 768, 4096);
  EXPECT_EQ(small.rows_per_extent, 5u);  // 5 x 768 = 3840 <= 4096
  EXPECT_EQ(small.extent_bytes, 4096u);
  EXPECT_EQ(small.extents, 200u);
  const GatherLayout large = gather_layout(10, 6000, 4096);
  EXPECT_EQ(large.rows_per_extent, 1u);
  EXPECT_EQ(large.extent_bytes, 8192u);
}

TEST(Gather, EveryLookupIsOneIoWithoutCoalescing) {
  const nlohmann::json r = run(test::scenario(
      "gather-gds", {"scenario.rows=1000", "scenario.row_bytes=768", "scenario.lookups=500",
                     "scenario.batch_lookups=100", "scenario.coalesce=false"}));
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 500u);
  EXPECT_EQ(r["gather"]["batches"].get<std::uint64_t>(), 5u);
  EXPECT_DOUBLE_EQ(r["gather"]["read_amplification"].get<double>(),
                   std::round(4096.0 / 768 * 1e6) / 1e6);
  EXPECT_EQ(r["gather"]["bytes_read"].get<std::uint64_t>(), 500u * 4096);
  EXPECT_EQ(r["gather"]["useful_bytes"].get<std::uint64_t>(), 500u * 768);
}

TEST(Gather, CoalescingMergesLookupsOfOneUnit) {
  // All 5 rows share one unit: one I/O per batch.
  const nlohmann::json r =
      run(test::scenario("gather-gpu", {"scenario.rows=5", "scenario.row_bytes=768",
                                        "scenario.lookups=300", "scenario.batch_lookups=100"}));
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 3u);
  // Rows larger than a unit take whole units of their own.
  const nlohmann::json big = run(test::scenario(
      "gather-bounce", {"scenario.rows=100", "scenario.row_bytes=6000", "scenario.lookups=64",
                        "scenario.batch_lookups=64", "scenario.coalesce=false"}));
  EXPECT_EQ(big["gather"]["bytes_read"].get<std::uint64_t>(), 64u * 8192);
  EXPECT_EQ(big["summary"]["bandwidth_gbps"].get<double>() > 0, true);
}

}  // namespace
}  // namespace gpunvme
