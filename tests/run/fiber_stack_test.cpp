// The warps' fibre stacks (Calendar::kFiberStackBytes) against the deepest
// stack the warps of every strategy reach: the stack size is a stated
// figure with a check, and a guard page turns an overflow into a fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "sim/kernel/calendar.h"
#include "sim/kernel/fiber.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

TEST(FiberStacks, EveryStrategyStaysWellWithinTheStack) {
  Fiber::measure_abandoned_stacks(true);
  for (const char* strategy :
       {"warp_batch", "all_threads", "bam_ticket", "io_agents", "per_warp_queue"}) {
    SCOPED_TRACE(strategy);
    run(load_config(
        "", "",
        {"scenario.ios=600", "scenario.threads=256", std::string("scenario.strategy=") + strategy},
        1));
  }
  Fiber::measure_abandoned_stacks(false);
  const std::size_t deepest =
      std::max(Fiber::deepest_pooled_stack(), Fiber::deepest_abandoned_stack());
  // The warps ran, and their deepest stack leaves half the stack free.
  EXPECT_GT(deepest, 1024u);
  EXPECT_LT(deepest, Calendar::kFiberStackBytes / 2);
  RecordProperty("deepest_fiber_stack_bytes", std::to_string(deepest));
  std::printf("deepest warp stack: %zu of %zu bytes\n", deepest, Calendar::kFiberStackBytes);
}

}  // namespace
}  // namespace gpunvme
