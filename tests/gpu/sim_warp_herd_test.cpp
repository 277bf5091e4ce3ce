// Fast mode's herd resolution against a scripted herd whose outcome is known
// by hand: waiters on one lock and one entry word (as the reapers of one CQ
// wait on its lock and the entry at its head) all see the entry arrive; the
// first to poll takes the lock and the entry, the others would wake only to
// fail the lock's compare-and-swap. Exact mode wakes every one of them; fast
// mode wakes the winner alone and charges each loser what its failed attempt
// cost in exact mode: the same warp instructions and the same atomics at the
// L2.
#include <gtest/gtest.h>

#include <vector>

#include "tests/gpu/gpu_bench.h"

namespace gpunvme {
namespace {

using testing::GpuBench;

struct HerdOutcome {
  std::vector<int> took;  // the warps that took the entry, in order
  int failed_swaps = 0;   // compare-and-swaps that found the lock held
  std::uint64_t wakeups = 0;
  std::uint64_t instructions = 0;
  std::uint64_t atomics = 0;     // the warps' count
  std::uint64_t l2_atomics = 0;  // bookings at the GPU's L2 atomic units
  Picoseconds took_at = 0;       // when the winner held the lock
};

// `waiters` warps, one per SM, wait from time 0 until the entry word is set
// (at 1 us) while the lock is free, or until `done` is set (at 20 us). A
// waiter that sees the entry tries to take the lock; the one that does
// clears the entry and frees the lock.
HerdOutcome run_herd(int waiters, bool fast) {
  GpuBench bench;
  if (fast) bench.gpu().set_fast_mode(ns_to_ps(500));
  const std::uint64_t base = bench.gpu().allocate(3 * MemorySpace::kLineBytes, 64);
  const std::uint64_t lock = base;
  const std::uint64_t entry = base + MemorySpace::kLineBytes;
  const std::uint64_t done = base + 2 * MemorySpace::kLineBytes;
  HerdOutcome out;
  const std::uint64_t wakeups_before = Simulation::events(Simulation::EventKind::kWarpWakeup);
  for (int i = 0; i < waiters; ++i) {
    bench.spawn({static_cast<std::uint32_t>(i), 0}, [&, i](platform::SimWarp& p) {
      for (;;) {
        p.wait_until(
            [&] {
              return p.load_u32(done) != 0 || (p.load_u32(lock) == 0 && p.load_u32(entry) != 0);
            },
            lock, 4, entry, 4, done, 4);
        if (p.load_u32(done) != 0) return;
        if (p.atomic_cas_u32(lock, 0, 1) != 0) {
          ++out.failed_swaps;
          continue;
        }
        out.took.push_back(i);
        out.took_at = p.clock();
        p.store_u32(entry, 0);
        p.store_u32(lock, 0);
      }
    });
  }
  bench.spawn({static_cast<std::uint32_t>(waiters), 0}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(ns_to_ps(1000));
    p.store_u32(entry, 1);
    GpuBench::idle_for(ns_to_ps(19000));
    p.store_u32(done, 1);
  });
  bench.run();
  out.wakeups = Simulation::events(Simulation::EventKind::kWarpWakeup) - wakeups_before;
  out.instructions = bench.counters().instructions;
  out.atomics = bench.counters().atomics;
  out.l2_atomics = bench.gpu().atomics();
  return out;
}

TEST(SimWarpHerd, FastModeWakesTheWinnerAloneAndChargesTheLosersWhatExactModePays) {
  constexpr int kWaiters = 8;
  const HerdOutcome exact = run_herd(kWaiters, false);
  const HerdOutcome fast = run_herd(kWaiters, true);
  // One entry, one taker: the first waiter, whose poll (all polls fall at
  // the same times: every wait began at 0) was booked first.
  ASSERT_EQ(exact.took, std::vector<int>{0});
  ASSERT_EQ(fast.took, std::vector<int>{0});
  // Exact mode: every waiter wakes for the entry (the seven losers then fail
  // the swap) and again for `done`.
  EXPECT_EQ(exact.failed_swaps, kWaiters - 1);
  EXPECT_EQ(exact.wakeups, 2u * kWaiters);
  // Fast mode: the losers defer to the winner, are polled again once its
  // swap has taken the lock, find it held and go on waiting without a
  // wake-up or a swap of their own; all wake for `done`.
  EXPECT_EQ(fast.failed_swaps, 0);
  EXPECT_EQ(fast.wakeups, 1u + kWaiters);
  // Each loser is charged the winner's path from its wake-up to its swap
  // (the load of `done` and the swap: 2 instructions) and one atomic on the
  // lock: the totals are exact mode's. Per waiter: 1 + 1 instructions for
  // the entry (load, swap), 1 for `done`; the winner's 2 stores and the
  // writer's 2.
  EXPECT_EQ(exact.instructions, 3u * kWaiters + 4u);
  EXPECT_EQ(fast.instructions, exact.instructions);
  EXPECT_EQ(exact.atomics, static_cast<std::uint64_t>(kWaiters));
  EXPECT_EQ(fast.atomics, exact.atomics);
  EXPECT_EQ(fast.l2_atomics, exact.l2_atomics);
  // The winner held the lock when exact mode's did.
  EXPECT_EQ(fast.took_at, exact.took_at);
}

TEST(SimWarpHerd, AWaiterWhoseOwnWordWasWrittenDoesNotDeferToTheClaimant) {
  // The waiters of the herd above, each also waiting for a word of its own
  // line (as a reaper for its completion flags). The entry and waiter 5's
  // word are written at the same time: waiter 0 takes the entry as before,
  // and waiter 5, whose news is its own, wakes too, though the lock its
  // predicate also read is held by then.
  GpuBench bench;
  bench.gpu().set_fast_mode(ns_to_ps(500));
  constexpr int kWaiters = 8;
  const std::uint64_t base = bench.gpu().allocate((3 + kWaiters) * MemorySpace::kLineBytes, 64);
  const std::uint64_t lock = base;
  const std::uint64_t entry = base + MemorySpace::kLineBytes;
  const std::uint64_t done = base + 2 * MemorySpace::kLineBytes;
  auto own = [&](int i) { return base + (3 + static_cast<std::uint64_t>(i)) * 64; };
  std::vector<int> took;
  std::vector<int> saw_own;
  std::vector<Picoseconds> woke(kWaiters, 0);  // each waiter's first wake-up
  const std::uint64_t wakeups_before = Simulation::events(Simulation::EventKind::kWarpWakeup);
  for (int i = 0; i < kWaiters; ++i) {
    bench.spawn({static_cast<std::uint32_t>(i), 0}, [&, i](platform::SimWarp& p) {
      for (;;) {
        p.wait_until(
            [&] {
              return p.load_u32(done) != 0 || p.load_u32(own(i)) != 0 ||
                     (p.load_u32(lock) == 0 && p.load_u32(entry) != 0);
            },
            lock, 4, entry, 4, done, 4, own(i), 4);
        if (woke[i] == 0) woke[i] = p.clock();
        if (p.load_u32(done) != 0) return;
        if (p.load_u32(own(i)) != 0) {
          saw_own.push_back(i);
          p.store_u32(own(i), 0);
          continue;
        }
        if (p.atomic_cas_u32(lock, 0, 1) != 0) continue;
        took.push_back(i);
        p.store_u32(entry, 0);
        p.store_u32(lock, 0);
      }
    });
  }
  bench.spawn({static_cast<std::uint32_t>(kWaiters), 0}, [&](platform::SimWarp& p) {
    GpuBench::idle_for(ns_to_ps(1000));
    p.store_u32(entry, 1);
    p.store_u32(own(5), 1);
    GpuBench::idle_for(ns_to_ps(19000));
    p.store_u32(done, 1);
  });
  bench.run();
  EXPECT_EQ(took, std::vector<int>{0});
  EXPECT_EQ(saw_own, std::vector<int>{5});
  // Waiter 5 woke at its own poll, the winner's (every wait began at 0 and
  // both writes fall between the same two polls), not after the winner's
  // swap.
  EXPECT_EQ(woke[5], woke[0]);
  // The winner and waiter 5 for the entry and the word, then all for `done`.
  EXPECT_EQ(Simulation::events(Simulation::EventKind::kWarpWakeup) - wakeups_before, 2u + kWaiters);
}

}  // namespace
}  // namespace gpunvme
