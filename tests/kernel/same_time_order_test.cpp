// The run's calendar inside a run: work due at one picosecond runs in the
// order it was asked for, whatever the SystemC kernel's heap would do. It
// runs SystemC threads, so its file sorts after the tests of this program
// that throw (see calendar_test.cpp).
#include <gtest/gtest.h>

#include <string>
#include <systemc>
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

}  // namespace
}  // namespace gpunvme
