// One simulation run on the SystemC kernel. SystemC keeps a single global
// kernel context; a fresh context per run lets the library run many
// configurations in one process (tests, the Python module) with every run
// starting at time zero.
#pragma once

#include <cstdint>
#include <memory>

#include "sim/kernel/time.h"

namespace gpunvme {

class Calendar;

class Simulation {
 public:
  Simulation();
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  // Runs until no activity is left, or until `limit` of simulated time.
  void run(Picoseconds limit = 0);
  // Ends the run at the current time (from inside a callback).
  static void stop();

  static Picoseconds now();
  // Timed callbacks dispatched so far in this run: the simulator's cost measure.
  static std::uint64_t events();
  static void count_event() { ++event_count_; }

 private:
  static inline std::uint64_t event_count_ = 0;
  // The run's calendar (sim/kernel/calendar.h): made with the context, so
  // that every model made in this Simulation schedules on it.
  std::unique_ptr<Calendar> calendar_;
};

}  // namespace gpunvme
