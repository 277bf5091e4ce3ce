// The calendar's queue, checked against an independent oracle (a sorted
// set), and the calendar outside a Simulation. The calendar's order inside a
// run is tested in same_time_order_test.cpp.
#include "sim/kernel/calendar.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/kernel/simulation.h"
#include "sim/kernel/time_queue.h"

namespace gpunvme {
namespace {

// The earliest entry, as the calendar takes one: what is due at its time.
template <class Payload>
typename TimeQueue<Payload>::Entry take_earliest(TimeQueue<Payload>& queue) {
  typename TimeQueue<Payload>::Entry entry{};
  const bool taken = queue.take_due(queue.earliest(), entry);
  EXPECT_TRUE(taken);
  return entry;
}

// Throws, so it runs before any test of this program that runs threads:
// under AddressSanitizer, an exception thrown after SystemC has run threads
// in the same process is misreported (google/sanitizers#189).
TEST(Calendar, OnlyInsideASimulation) {
  {
    Simulation simulation;
    EXPECT_NO_THROW(Calendar::current());
  }
  EXPECT_THROW(Calendar::current(), std::logic_error);
}

// Random pushes and takes against a set ordered by (time, push order): ties
// at one time, entries within a slot, across the wheel, and beyond its
// horizon (up to 10 ms ahead), in bursts.
TEST(TimeQueue, TakesInTheOrderOfASortedOracle) {
  std::mt19937_64 random(20261125);
  TimeQueue<int> queue;
  std::set<std::pair<Picoseconds, std::uint64_t>> oracle;
  std::uint64_t pushed = 0;
  Picoseconds now = 0;
  std::uint64_t beyond_horizon = 0;
  std::uint64_t ties = 0;
  for (int step = 0; step < 400000; ++step) {
    const int burst = static_cast<int>(random() % 4);
    for (int i = 0; i < burst; ++i) {
      Picoseconds ahead = 0;
      switch (random() % 5) {
        case 0: ahead = 0; break;                              // now: a tie
        case 1: ahead = random() % 40'000; break;              // within a slot or two
        case 2: ahead = random() % 2'000'000; break;           // a few microseconds
        case 3: ahead = random() % 100'000'000; break;         // within the horizon
        default: ahead = random() % 10'000'000'000ull; break;  // beyond it
      }
      if (ahead > 134'000'000) ++beyond_horizon;
      const Picoseconds when = now + ahead;
      if (oracle.lower_bound({when, 0}) != oracle.end() &&
          oracle.lower_bound({when, 0})->first == when) {
        ++ties;
      }
      queue.push(when, static_cast<int>(pushed));
      oracle.insert({when, pushed});
      ++pushed;
    }
    const int takes = static_cast<int>(random() % 4);
    for (int i = 0; i < takes && !oracle.empty(); ++i) {
      ASSERT_EQ(queue.size(), oracle.size());
      ASSERT_EQ(queue.earliest(), oracle.begin()->first) << "step " << step;
      const auto entry = take_earliest(queue);
      ASSERT_EQ(entry.when, oracle.begin()->first) << "step " << step;
      ASSERT_EQ(static_cast<std::uint64_t>(entry.payload), oracle.begin()->second)
          << "step " << step;
      now = entry.when;
      oracle.erase(oracle.begin());
    }
  }
  while (!oracle.empty()) {
    const auto entry = take_earliest(queue);
    ASSERT_EQ(static_cast<std::uint64_t>(entry.payload), oracle.begin()->second);
    oracle.erase(oracle.begin());
  }
  EXPECT_TRUE(queue.empty());
  // The draw reached every case it is meant to.
  EXPECT_GT(beyond_horizon, 10000u);
  EXPECT_GT(ties, 10000u);
}

// As the calendar uses it: time moves on (by a little, or to the earliest
// entry), everything due by then is taken, and pushes are due no earlier
// than the time reached.
TEST(TimeQueue, TakeDueTakesExactlyWhatIsDueInOrder) {
  std::mt19937_64 random(42);
  TimeQueue<std::uint64_t> queue;
  std::set<std::pair<Picoseconds, std::uint64_t>> oracle;
  std::uint64_t pushed = 0;
  std::uint64_t taken = 0;
  Picoseconds now = 0;
  for (int step = 0; step < 200000; ++step) {
    const int burst = static_cast<int>(random() % 4);
    for (int i = 0; i < burst; ++i) {
      const std::uint64_t kind = random() % 4;
      const Picoseconds ahead = kind == 0   ? 0
                                : kind == 1 ? random() % 50'000
                                : kind == 2 ? random() % 5'000'000
                                            : random() % 1'000'000'000;
      queue.push(now + ahead, pushed);
      oracle.insert({now + ahead, pushed});
      ++pushed;
    }
    if (random() % 2 == 0 && !oracle.empty()) {
      now = std::max(now, oracle.begin()->first);
    } else {
      now += random() % 100'000;
    }
    TimeQueue<std::uint64_t>::Entry entry{};
    while (queue.take_due(now, entry)) {
      ASSERT_FALSE(oracle.empty());
      ASSERT_EQ(entry.when, oracle.begin()->first) << "step " << step;
      ASSERT_EQ(entry.payload, oracle.begin()->second) << "step " << step;
      oracle.erase(oracle.begin());
      ++taken;
    }
    ASSERT_TRUE(oracle.empty() || oracle.begin()->first > now) << "step " << step;
    ASSERT_EQ(queue.size(), oracle.size());
  }
  EXPECT_GT(taken, 100000u);
}

// upcoming(k) and upcoming_run(), which the calendar prefetches from, name
// the entry k takes after the next one only, and only the next ones in queue order: checked
// against the sorted oracle after every take, with pushes landing in the slot
// being taken from (ahead of entries already there) and beyond it.
TEST(TimeQueue, UpcomingNamesTheEntriesTakenNext) {
  std::mt19937_64 random(20261128);
  TimeQueue<std::uint64_t> queue;
  std::set<std::pair<Picoseconds, std::uint64_t>> oracle;
  std::uint64_t pushed = 0;
  std::uint64_t named[4] = {};
  Picoseconds now = 0;
  for (int step = 0; step < 100000; ++step) {
    const int burst = static_cast<int>(random() % 4);
    for (int i = 0; i < burst; ++i) {
      const Picoseconds ahead = random() % 2 == 0 ? random() % 40'000 : random() % 5'000'000;
      queue.push(now + ahead, pushed);
      oracle.insert({now + ahead, pushed});
      ++pushed;
    }
    TimeQueue<std::uint64_t>::Entry entry{};
    const int takes = static_cast<int>(random() % 4);
    for (int i = 0; i < takes && !oracle.empty(); ++i) {
      ASSERT_TRUE(queue.take_due(queue.earliest(), entry));
      oracle.erase(oracle.begin());
      now = entry.when;
      // upcoming_run() names the same entries as upcoming(k), in one run.
      const TimeQueue<std::uint64_t>::Entry* run = nullptr;
      const std::size_t run_length = queue.upcoming_run(run);
      for (std::size_t k = 0; k < 6; ++k) {
        ASSERT_EQ(k < run_length ? run + k : nullptr, queue.upcoming(k))
            << "step " << step << ", " << k << " ahead";
      }
      auto expected = oracle.begin();
      for (std::size_t k = 0; k < 4; ++k) {
        const TimeQueue<std::uint64_t>::Entry* next = queue.upcoming(k);
        if (expected == oracle.end()) {
          ASSERT_EQ(next, nullptr) << "step " << step << ", " << k << " ahead";
          break;
        }
        if (next != nullptr) {
          ASSERT_EQ(next->when, expected->first) << "step " << step << ", " << k << " ahead";
          ASSERT_EQ(next->payload, expected->second) << "step " << step << ", " << k << " ahead";
          ++named[k];
        }
        ++expected;
      }
    }
  }
  // Every depth named entries often: the check ran.
  for (std::uint64_t count : named) EXPECT_GT(count, 10000u);
}

// earliest() only looks: an entry earlier than it may still be pushed.
TEST(TimeQueue, EarliestLeavesRoomForEarlierEntries) {
  TimeQueue<char> queue;
  queue.push(1'000'000'000, 'a');  // 1 ms: beyond the horizon
  queue.push(5'000'000, 'b');      // 5 us: on the wheel
  EXPECT_EQ(queue.earliest(), 5'000'000u);
  queue.push(10'000, 'c');
  queue.push(10'000, 'd');
  EXPECT_EQ(queue.earliest(), 10'000u);
  std::string order;
  while (!queue.empty()) order += take_earliest(queue).payload;
  EXPECT_EQ(order, "cdba");
}

// A callback runs where it waits in the calendar's slot table. One that
// schedules thousands more (the table grows by several chunks meanwhile)
// still reads its own captures afterwards, and everything runs in time,
// then scheduling, order; slots freed by callbacks that ran are reused.
TEST(Calendar, CallbackSchedulingManyWhileItRuns) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<int> order;
  const std::uint64_t a = 0x1111, b = 0x2222, c = 0x3333, d = 0x4444, e = 0x5555;
  constexpr int kMany = 5000;
  calendar.schedule_at(100, [&, a, b, c, d, e] {
    for (int i = 0; i < kMany; ++i) {
      // Later ones first in time: the order is time, then scheduling.
      calendar.schedule_at(200 + static_cast<Picoseconds>((kMany - i) % 3),
                           [&order, i] { order.push_back(i); });
    }
    order.push_back(a + b + c + d + e == 0xffff ? -1 : -2);
  });
  simulation.run();
  ASSERT_EQ(order.size(), static_cast<std::size_t>(kMany) + 1);
  EXPECT_EQ(order.front(), -1);
  std::vector<int> expected;
  for (Picoseconds t = 200; t < 203; ++t) {
    for (int i = 0; i < kMany; ++i) {
      if (200 + static_cast<Picoseconds>((kMany - i) % 3) == t) expected.push_back(i);
    }
  }
  EXPECT_EQ(std::vector<int>(order.begin() + 1, order.end()), expected);
}

}  // namespace
}  // namespace gpunvme
