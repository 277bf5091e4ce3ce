// Threads on fibres (sim/kernel/threads.h, Calendar::spawn): they run in the
// order SystemC would run one thread per warp. The oracle is SystemC itself:
// the same script runs once on SystemC threads and events, once on fibres
// and the calendar's fibre events, and the two logs must match. It runs
// SystemC threads, so its file sorts after the tests of this program that
// throw (see calendar_test.cpp).
#include "sim/kernel/threads.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "sim/kernel/calendar.h"
#include "sim/kernel/simulation.h"

namespace gpunvme {
namespace {

std::string at(const std::string& what) { return what + " @" + std::to_string(Simulation::now()); }

// Threads spawned from a callback start in index order, after the threads
// the callback's time had already woken, each body once.
TEST(SpawnThreads, IndexOrderAfterTheWokenThreads) {
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<std::string> log;
  FiberEvent woken;
  calendar.spawn([&] {
    calendar.wait(woken);
    log.push_back(at("woken"));
  });
  calendar.wake_at(1000, woken);
  calendar.schedule_at(1000, [&] {
    spawn_threads(0, [&](std::size_t) { ADD_FAILURE() << "no thread was asked for"; });
    spawn_threads(3, [&](std::size_t i) {
      log.push_back(at("worker " + std::to_string(i)));
      FiberEvent step;
      calendar.wake_at(Simulation::now() + 100 * (3 - i), step);
      calendar.wait(step);
      log.push_back(at("worker " + std::to_string(i) + " done"));
    });
    log.push_back(at("callback"));
  });
  simulation.run();
  EXPECT_EQ(log,
            (std::vector<std::string>{"callback @1000", "woken @1000", "worker 0 @1000",
                                      "worker 1 @1000", "worker 2 @1000", "worker 2 done @1100",
                                      "worker 1 done @1200", "worker 0 done @1300"}));
  EXPECT_GT(calendar.deepest_fiber_stack(), 0u);
  EXPECT_LT(calendar.deepest_fiber_stack(), Calendar::kFiberStackBytes);
}

// The two backends of the script below: SystemC threads and events, or the
// calendar's fibres and fibre events.
struct SystemCBackend {
  using Event = sc_core::sc_event;
  static void spawn(std::function<void()> body) { sc_core::sc_spawn(std::move(body)); }
  static void wait(Event& e) { sc_core::wait(e); }
  static void wait(Event& a, Event& b) { sc_core::wait(a | b); }
  static void notify_delta(Event& e) { e.notify(sc_core::SC_ZERO_TIME); }
  static void notify_at(Event& e, Picoseconds when) { e.notify(Calendar::delay_until(when)); }
  static void cancel(Event& e) { e.cancel(); }
};
struct FiberBackend {
  using Event = FiberEvent;
  static void spawn(std::function<void()> body) { Calendar::current().spawn(std::move(body)); }
  static void wait(Event& e) { Calendar::current().wait(e); }
  static void wait(Event& a, Event& b) { Calendar::current().wait(a, b); }
  static void notify_delta(Event& e) { Calendar::current().notify_delta(e); }
  static void notify_at(Event& e, Picoseconds when) { Calendar::current().notify_at(e, when); }
  static void cancel(Event& e) { Calendar::current().cancel(e); }
};

// Workers that step through the ways a warp waits, with many of them due at
// the same picoseconds: a calendar wake-up (a warp's step), a callback's
// delta notification (a PCIe read's return, possibly while the worker is
// not yet waiting), a wait with a deadline that a callback may beat, work
// asked for at the current time, and threads spawned mid-run. Every worker
// logs what it sees, and callbacks log too.
template <class Backend>
std::vector<std::string> run_script() {
  using Event = typename Backend::Event;
  Simulation simulation;
  Calendar& calendar = Calendar::current();
  std::vector<std::string> log;
  constexpr int kWorkers = 7;
  constexpr int kSteps = 6;
  struct Worker {
    Event wake;
    Event returned;
    Event timeout;
    bool done = false;
  };
  auto workers = std::make_shared<std::vector<Worker>>(kWorkers);
  auto worker_body = [&, workers](int i) {
    Worker& self = (*workers)[static_cast<std::size_t>(i)];
    const std::string name = "w" + std::to_string(i);
    for (int step = 0; step < kSteps; ++step) {
      log.push_back(at(name + " step " + std::to_string(step)));
      const Picoseconds now = Simulation::now();
      switch ((i + step) % 5) {
        case 0:  // a step: the calendar wakes it (ties between workers)
          calendar.wake_at(now + 1000 * (1 + step % 2), self.wake);
          Backend::wait(self.wake);
          break;
        case 1:  // a read's return: a callback's delta notification
          self.done = false;
          calendar.schedule_at(now + 500 + 100 * (i % 3), [&log, &self, name] {
            log.push_back(at("return to " + name));
            self.done = true;
            Backend::notify_delta(self.returned);
          });
          while (!self.done) Backend::wait(self.returned);
          break;
        case 2: {  // a wait with a deadline; even workers are woken before it, odd
                   // ones time out at a time others wake at
          Backend::cancel(self.timeout);
          Backend::notify_at(self.timeout,
                             now + (i % 2 == 0 ? 1500 + 7 * static_cast<Picoseconds>(i) : 2000));
          if (i % 2 == 0) calendar.wake_at(now + 800, self.wake);
          Backend::wait(self.wake, self.timeout);
          Backend::cancel(self.timeout);
          log.push_back(at(name + " waited"));
          break;
        }
        case 3:  // work asked for now, then a step at the same time as others
          calendar.schedule_at(now, [&log, name] { log.push_back(at("now for " + name)); });
          calendar.wake_at(now + 2000, self.wake);
          Backend::wait(self.wake);
          break;
        default: {  // a notification for a neighbour, lost unless it waits on it
          Worker& other = (*workers)[static_cast<std::size_t>((i + 1) % kWorkers)];
          Backend::notify_delta(other.returned);
          calendar.wake_at(now + 300, self.wake);
          Backend::wait(self.wake);
          break;
        }
      }
    }
    log.push_back(at(name + " ends"));
  };
  for (int i = 0; i < 3; ++i) Backend::spawn([worker_body, i] { worker_body(i); });
  calendar.schedule_at(0, [&log] { log.push_back(at("callback at start")); });
  // The rest start mid-run, from a callback, as a path spawns its warps.
  calendar.schedule_at(2000, [&, worker_body] {
    log.push_back(at("spawning"));
    for (int i = 3; i < kWorkers; ++i) Backend::spawn([worker_body, i] { worker_body(i); });
  });
  simulation.run();
  return log;
}

TEST(SpawnThreads, FibresRunInTheOrderOfSystemCThreads) {
  const std::vector<std::string> threads = run_script<SystemCBackend>();
  const std::vector<std::string> fibres = run_script<FiberBackend>();
  ASSERT_GT(threads.size(), 70u);
  EXPECT_EQ(fibres, threads);
}

}  // namespace
}  // namespace gpunvme
