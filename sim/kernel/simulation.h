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

  // What a timed activation of the kernel was for. Their count is the
  // simulator's cost measure (summary.events, and events_by_kind).
  enum class EventKind : int {
    kModelCallback,   // a model's timed callback (controller, fabric, flash, DMA, host)
    kWarpStep,        // a warp resuming once the time charged to its last operations
                      // has passed, before its next operation
    kWarpWakeup,      // a waiting warp resuming on the write it polls for, or its deadline
    kWarpReadReturn,  // a warp resuming when its PCIe read has returned
    kCount
  };
  static constexpr int kEventKinds = static_cast<int>(EventKind::kCount);
  // Their names in results.
  static constexpr const char* kEventKindNames[kEventKinds] = {"model_callbacks", "warp_steps",
                                                               "warp_wakeups", "warp_read_returns"};
  // Activations so far in this run: all of them, or of one kind.
  static std::uint64_t events();
  static std::uint64_t events(EventKind kind) { return event_counts_[static_cast<int>(kind)]; }
  static void count_event(EventKind kind) { ++event_counts_[static_cast<int>(kind)]; }

 private:
  static inline std::uint64_t event_counts_[kEventKinds] = {};
  // The run's calendar (sim/kernel/calendar.h): made with the context, so
  // that every model made in this Simulation schedules on it.
  std::unique_ptr<Calendar> calendar_;
};

}  // namespace gpunvme
