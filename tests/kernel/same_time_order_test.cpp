// The run's calendar inside a run: work due at one picosecond runs in the
// order it was asked for, whatever the SystemC kernel's heap would do. It
// runs SystemC threads, so its file sorts after the tests of this program
// that throw (see calendar_test.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/kernel/calendar.h"
#include "sim/kernel/simulation.h"

namespace gpunvme {
namespace {

// Callbacks and thread wake-ups due at one time run in the order asked for:
// the callbacks in the calendar's method, then the woken threads, in the
// order notified.
TEST(SameTimeOrder, CallbacksThenWokenThreadsInTheOrderAsked) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<std::string> log;
  sc_core::sc_event first_thread;
  sc_core::sc_event second_thread;
  const Picoseconds t = 2'000'000;
  sc_core::sc_spawn([&] {
    sc_core::wait(second_thread);
    log.push_back("thread B at " + std::to_string(Simulation::now()));
  });
  sc_core::sc_spawn([&] {
    sc_core::wait(first_thread);
    log.push_back("thread A at " + std::to_string(Simulation::now()));
  });
  calendar.schedule_at(t, [&] { log.push_back("callback 1"); });
  calendar.wake_at(t, first_thread);
  calendar.schedule_at(t, [&] {
    log.push_back("callback 2");
    // Due now, asked for while the calendar runs: after what was asked before.
    calendar.schedule_at(t, [&] { log.push_back("callback 4"); });
  });
  calendar.wake_at(t, second_thread);
  calendar.schedule_at(t, [&] { log.push_back("callback 3"); });
  calendar.schedule_at(t - 1, [&] { log.push_back("callback 0"); });
  simulation.run();
  const std::string at = std::to_string(t);
  EXPECT_EQ(log,
            (std::vector<std::string>{"callback 0", "callback 1", "callback 2", "callback 3",
                                      "callback 4", "thread A at " + at, "thread B at " + at}));
}

// Times that hold callbacks only run in the calendar's method, ahead of the
// kernel's time, as one time step each would run them: each callback sees
// its own time, and the kernel's time lags (the run ran ahead).
TEST(SameTimeOrder, CallbackOnlyTimesRunAheadOfTheKernel) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<std::string> log;
  Picoseconds kernel_at_last = 0;
  for (const Picoseconds t : {3000, 1000, 2000}) {
    calendar.schedule_at(t, [&, t] {
      log.push_back(std::to_string(t) + " at " + std::to_string(Simulation::now()));
      kernel_at_last = Calendar::kernel_now();
    });
  }
  simulation.run();
  EXPECT_EQ(log, (std::vector<std::string>{"1000 at 1000", "2000 at 2000", "3000 at 3000"}));
  EXPECT_EQ(kernel_at_last, 1000u);
  EXPECT_EQ(Simulation::now(), 3000u);
}

// A thread woken while the calendar ran ahead runs at the calendar's time;
// its SystemC timed wait (delay_until) lands at the absolute time asked for,
// and the calendar does not run ahead past it: the callback due later runs
// after the thread, and sees its write.
TEST(SameTimeOrder, RunAheadStopsBeforeTheKernelsTimedNotifications) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<std::string> log;
  sc_core::sc_event wake;
  auto note = [&](const std::string& what) {
    log.push_back(what + " at " + std::to_string(Simulation::now()));
  };
  sc_core::sc_spawn([&] {
    sc_core::wait(wake);
    note("thread");
    sc_core::wait(Calendar::delay_until(3400));
    note("thread");
  });
  calendar.schedule_at(1000, [&] { note("callback"); });
  calendar.schedule_at(2000, [&] { note("callback"); });
  calendar.wake_at(3000, wake);
  calendar.schedule_at(3300, [&] { note("callback"); });
  calendar.schedule_at(3600, [&] { note("callback"); });
  simulation.run();
  EXPECT_EQ(log,
            (std::vector<std::string>{"callback at 1000", "callback at 2000", "thread at 3000",
                                      "callback at 3300", "thread at 3400", "callback at 3600"}));
}

// A run with a time limit ends at it, from the calendar's time, and a
// stopped run runs nothing later, though the calendar could run ahead.
TEST(SameTimeOrder, RunAheadKeepsTheLimitAndTheStop) {
  {
    Simulation simulation;
    Calendar& calendar = Calendar::current();
    std::vector<Picoseconds> ran;
    for (const Picoseconds t : {1000, 2000, 2500, 4000}) {
      calendar.schedule_at(t, [&, t] { ran.push_back(t); });
    }
    simulation.run(1500);  // 0 .. 1500
    EXPECT_EQ(ran, (std::vector<Picoseconds>{1000}));
    EXPECT_EQ(Simulation::now(), 1500u);
    // 1500 .. 2500: what is due at 2500 itself runs at the start of the next
    // run, as SystemC's sc_start leaves it, not ahead of the kernel now.
    simulation.run(1000);
    EXPECT_EQ(ran, (std::vector<Picoseconds>{1000, 2000}));
    simulation.run();
    EXPECT_EQ(ran, (std::vector<Picoseconds>{1000, 2000, 2500, 4000}));
  }
  {
    Simulation simulation;
    Calendar& calendar = Calendar::current();
    std::vector<Picoseconds> ran;
    calendar.schedule_at(1000, [&] {
      ran.push_back(1000);
      Simulation::stop();
    });
    calendar.schedule_at(2000, [&] { ran.push_back(2000); });
    simulation.run();
    EXPECT_EQ(ran, (std::vector<Picoseconds>{1000}));
  }
}

// Callbacks run at their time, in the order of (time, order asked), with
// 120,000 pending at once, so that their slots in the callback table go well
// beyond 2^16 (the calendar's queue keeps a callback's slot with its kind in
// one word); those that run ask for more, due from now on, reusing freed
// slots. Checked against a sorted set of (time, order asked).
TEST(SameTimeOrder, ManyCallbacksRunInTheOrderOfASortedOracle) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::mt19937_64 random(20261129);
  std::set<std::pair<Picoseconds, std::uint64_t>> oracle;
  std::vector<std::uint64_t> ran;
  std::uint64_t asked = 0;
  std::uint64_t wrong_time = 0;
  const auto ahead = [&random]() -> Picoseconds {
    switch (random() % 4) {
      case 0: return random() % 4;               // ties
      case 1: return random() % 40'000;          // within a slot of the queue or two
      case 2: return random() % 60'000'000;      // across its wheel
      default: return random() % 1'000'000'000;  // beyond its horizon
    }
  };
  std::function<void(Picoseconds)> ask = [&](Picoseconds when) {
    const std::uint64_t order = asked++;
    oracle.insert({when, order});
    calendar.schedule_at(when, [&, when, order] {
      ran.push_back(order);
      if (Simulation::now() != when) ++wrong_time;
      if (order % 3 == 0 && asked < 200'000) ask(Simulation::now() + ahead());
    });
  };
  for (int i = 0; i < 120'000; ++i) ask(1 + ahead());
  simulation.run();
  EXPECT_EQ(wrong_time, 0u);
  ASSERT_EQ(ran.size(), oracle.size());
  EXPECT_GT(ran.size(), 150'000u);
  std::uint64_t out_of_order = 0;
  auto expected = oracle.begin();
  for (const std::uint64_t order : ran) out_of_order += order != (expected++)->second ? 1 : 0;
  EXPECT_EQ(out_of_order, 0u);
}

}  // namespace
}  // namespace gpunvme
