// The run's calendar of timed work: every model's callbacks and every warp's
// timed wake-up, in one order.
//
// SystemC keeps timed notifications in a heap whose order among
// notifications due at the same picosecond depends on the heap's history.
// Were each component and each waiting warp to keep its own SystemC event,
// adding or removing one event anywhere could reorder unrelated work due at
// the same time, and results would depend on the SystemC build. The calendar
// orders all of it by time, then by the order it was asked for, and arms one
// SystemC event for the earliest entry. At that time one method runs the due
// callbacks and notifies the due warps' events immediately, in that order;
// the warps run after it, in the order notified, in the same evaluation
// phase (as SystemC runs threads after methods).
//
// One queue for the whole run (a timing wheel, sim/kernel/time_queue.h) also
// costs less than SystemC's heap, which is left with the calendar's event and
// the timeouts of warps that wait with a deadline.
#pragma once

#include <cstdint>
#include <memory>
#include <systemc>
#include <vector>

#include "sim/kernel/inplace_function.h"
#include "sim/kernel/time.h"

namespace gpunvme {

template <class Payload>
class TimeQueue;

class Calendar : public sc_core::sc_module {
 public:
  // Move-only; captures of up to seven words are kept without allocating.
  using Callback = InplaceFunction<void(), 56>;

  SC_HAS_PROCESS(Calendar);
  explicit Calendar(const sc_core::sc_module_name& name);
  ~Calendar() override;

  // The calendar of the Simulation in progress (sim/kernel/simulation.h);
  // models are made and run inside one.
  static Calendar& current();

  // The kernel's time. Its resolution is 1 ps (Simulation), so the raw value
  // is picoseconds. Inline, as sc_time_stamp() is not: models and warps read
  // it on every operation. The context pointer is read directly:
  // sc_get_curr_simcontext(), which would make a context where none exists,
  // is a call where GCC does not inline it, and the Simulation has made the
  // context already.
  static Picoseconds now() { return sc_core::sc_curr_simcontext->time_stamp().value(); }

  // Runs `callback` at `when` (now at the earliest).
  void schedule_at(Picoseconds when, Callback callback);
  // Notifies `event` at `when` (now at the earliest), immediately, so that
  // the thread waiting on it runs in that evaluation phase. The event belongs
  // to the waiting thread and outlives the wake-up.
  void wake_at(Picoseconds when, sc_core::sc_event& event);

 private:
  // What an entry is for: a wake-up, or callbacks_[slot] when event is null.
  struct Target {
    sc_core::sc_event* event;
    std::uint32_t slot;
  };
  void push(Picoseconds when, const Target& target);
  void fire();

  std::unique_ptr<TimeQueue<Target>> queue_;  // sim/kernel/time_queue.h
  // Callbacks wait in a slot table, so that the queue moves small values, not
  // functions.
  std::vector<Callback> callbacks_;
  std::vector<std::uint32_t> free_slots_;
  sc_core::sc_event due_;
  Picoseconds armed_for_ = 0;
  bool armed_ = false;
  bool firing_ = false;
};

}  // namespace gpunvme
