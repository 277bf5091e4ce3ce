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
//
// Most times the calendar reaches hold model callbacks only. A SystemC time
// step for each would cost more than the callbacks (the kernel's timed heap,
// its evaluate, update and notify phases, the method's activation). So once
// the work due at one time has run, the method goes on to the next time in
// the calendar itself, as long as the kernel would do nothing else before:
// no process is runnable and no delta notification is pending (no warp was
// woken), no SystemC timed notification is due at or before that time (a
// warp's deadline), that time is before the run's limit and the run was not
// stopped. The calendar's clock then runs ahead of SystemC's; now() is the
// later of the two, and every SystemC notification the calendar or a warp
// makes is timed from the kernel's own time, so that it lands at the same
// absolute time, and work due at the calendar's time is a delta
// notification, as it would be were the kernel's time the calendar's. What
// runs, and in what order, is what one time step per time would run.
//
// Warps run on fibres (sim/kernel/fiber.h) that the calendar's method resumes
// itself, not on SystemC threads: a wake-up is a switch to the warp's stack
// and back, without the kernel's events, runnable queues and coroutines. The
// method keeps the order the kernel would give the warps' threads (IEEE 1666
// scheduling, as the Debian SystemC implements it), so that results are what
// they were with one SystemC thread per warp:
//  - an evaluation phase runs the calendar's due work (the method), then the
//    fibres made runnable, in the order they were: those woken by a delta
//    notification at the phase's start (in reverse order of notification, as
//    the kernel triggers its delta events), those whose timed wait ended,
//    then those the due work woke, in the order woken;
//  - threads spawned (spawn_threads) run after the fibres runnable when they
//    were spawned, as the kernel runs a spawning method after the threads;
//  - work a fibre asks for at the current time, and its delta notifications,
//    make another evaluation phase at that time; the calendar then moves to
//    its next time, with the fibres' timed waits in it (in booking order).
// The method hands back to the kernel whenever the kernel has anything of
// its own to run first (a SystemC process, a timed notification), as it does
// when running ahead.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/kernel/inplace_function.h"
#include "sim/kernel/time.h"

namespace gpunvme {

template <class Payload>
class TimeQueue;
class Fiber;
class Calendar;

// What a fibre waits on: the calendar's stand-in for a SystemC event, with
// the same notifications (immediate, delta, timed) and the same rule that a
// notification wakes only the fibre waiting on the event when it triggers.
class FiberEvent {
 public:
  FiberEvent() = default;
  ~FiberEvent();
  FiberEvent(const FiberEvent&) = delete;
  FiberEvent& operator=(const FiberEvent&) = delete;

 private:
  friend class Calendar;
  struct FiberThread* waiter_ = nullptr;  // the fibre waiting on it now
  bool delta_pending_ = false;
  Calendar* timed_calendar_ = nullptr;  // where a timed notification is pending, if one is
  std::pair<Picoseconds, std::uint64_t> timed_key_{};  // its time and booking there
};

// A fibre run by the calendar, and what it waits on.
struct FiberThread {
  std::unique_ptr<Fiber> fiber;
  FiberEvent* waiting_on[2] = {nullptr, nullptr};
};

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
  static Picoseconds now() {
    const Picoseconds kernel = kernel_now();
    return kernel > clock_ ? kernel : clock_;
  }
  // The SystemC kernel's own time, which lags now() while the calendar runs
  // ahead of it.
  static Picoseconds kernel_now() { return sc_core::sc_curr_simcontext->time_stamp().value(); }
  // The delay of a SystemC notification due at `when` (now at the earliest):
  // from the kernel's time, and a delta notification for now().
  static sc_core::sc_time delay_until(Picoseconds when) {
    const Picoseconds kernel = kernel_now();
    return when <= clock_ || when <= kernel ? sc_core::SC_ZERO_TIME
                                            : sc_core::sc_time::from_value(when - kernel);
  }

  // A thread that would sleep until `when` (a warp's step) may go on at
  // once instead when nothing else would run before it: nothing in the
  // calendar is due before or at `when`, no process is runnable, no delta
  // notification is pending and the kernel's next timed notification comes
  // later. The calendar's clock is then `when`, and the thread runs on as
  // the kernel would have resumed it, without the time step. Says whether
  // it did; if not, the thread waits as usual (wake_at).
  bool advance_alone_to(Picoseconds when);
  // A fibre's timed step, in one call: goes on at once where
  // advance_alone_to(when) allows, else wakes `event` at `when` (wake_at)
  // and waits on it (wait). A warp's every step takes it.
  void step_to(Picoseconds when, FiberEvent& event);

  // Simulation::run's limit: the calendar runs ahead only to earlier times
  // (work due at the limit runs in the next run, as sc_start leaves it).
  void set_horizon(Picoseconds horizon) { horizon_ = horizon; }
  // The run was stopped (Simulation::stop): the calendar finishes the time
  // in progress and runs ahead no further.
  void stop() { stopped_ = true; }

  // Runs `callback` at `when` (now at the earliest).
  void schedule_at(Picoseconds when, Callback callback);
  // Notifies `event` at `when` (now at the earliest), immediately, so that
  // the thread waiting on it runs in that evaluation phase. The event belongs
  // to the waiting thread and outlives the wake-up.
  void wake_at(Picoseconds when, sc_core::sc_event& event);
  // The same for a fibre's event.
  void wake_at(Picoseconds when, FiberEvent& event);

  // Fibres (see the top of this file). Each runs `body` on a stack of
  // kFiberStackBytes. Spawned from a running callback or fibre, they run
  // after the fibres runnable now, in spawn order; spawned before the run,
  // they run at its start, after the work due then, in spawn order.
  void spawn(std::function<void()> body);
  // From a fibre: waits until `event` (or either event) is notified.
  void wait(FiberEvent& event);
  void wait(FiberEvent& first, FiberEvent& second);
  // Notifies `event` in the next evaluation phase at the current time (a
  // SystemC delta notification).
  void notify_delta(FiberEvent& event);
  // Notifies `event` at `when`, later than now (a SystemC timed notification:
  // an earlier one pending stays); cancel() drops a pending one.
  void notify_at(FiberEvent& event, Picoseconds when);
  void cancel(FiberEvent& event);
  // The fibres' stacks. The deepest warp stack of every strategy is 9,841
  // bytes (tests/run/fiber_stack_test.cpp checks it stays under half); a
  // guard page below each stack turns an overflow into a fault. Sanitizers
  // need room for their redzones.
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::size_t kFiberStackBytes = 512 * 1024;
#else
  static constexpr std::size_t kFiberStackBytes = 64 * 1024;
#endif
  // The deepest any fibre has written its stack so far: this calendar's live
  // ones and the stacks that finished fibres of the process left for reuse
  // (Fiber::stack_bytes_used).
  std::size_t deepest_fiber_stack() const;

 private:
  // What an entry is for: a fibre's wake-up (its FiberEvent), a SystemC
  // thread's (its sc_event), or the callback in callbacks_[slot]. One word,
  // told apart by its low two bits (both events are at least 4-byte
  // aligned): the queue moves and sorts its entries, and each is then 24
  // bytes rather than 40.
  class Target {
   public:
    Target() = default;
    static Target fiber(FiberEvent& event) { return Target{address(&event) | kFiberEvent}; }
    static Target thread(sc_core::sc_event& event) { return Target{address(&event) | kEvent}; }
    static Target callback(std::uint32_t slot) {
      return Target{(std::uintptr_t{slot} << kTagBits) | kCallback};
    }
    // The fibre's event, or nullptr when the entry is not a fibre's wake-up.
    FiberEvent* fiber_event() const {
      return tag() == kFiberEvent ? reinterpret_cast<FiberEvent*>(word_ & ~kTagMask) : nullptr;
    }
    sc_core::sc_event* event() const {
      return tag() == kEvent ? reinterpret_cast<sc_core::sc_event*>(word_ & ~kTagMask) : nullptr;
    }
    std::uint32_t slot() const { return static_cast<std::uint32_t>(word_ >> kTagBits); }
    bool is_callback() const { return tag() == kCallback; }

   private:
    static constexpr unsigned kTagBits = 2;
    static constexpr std::uintptr_t kTagMask = (std::uintptr_t{1} << kTagBits) - 1;
    static constexpr std::uintptr_t kFiberEvent = 0;
    static constexpr std::uintptr_t kEvent = 1;
    static constexpr std::uintptr_t kCallback = 2;
    explicit Target(std::uintptr_t word) : word_(word) {}
    template <class T>
    static std::uintptr_t address(T* object) {
      static_assert(alignof(T) > kTagMask, "the tag lives in the pointer's low bits");
      return reinterpret_cast<std::uintptr_t>(object);
    }
    std::uintptr_t tag() const { return word_ & kTagMask; }
    std::uintptr_t word_ = kCallback;
  };
  void push(Picoseconds when, Target target);
  void fire();
  // Runs the work due at the calendar's clock, in order.
  void run_due();
  // Fetches into the cache what the next entries of the queue will touch
  // (calendar.cpp).
  void prefetch_upcoming();
  // Whether the kernel would do nothing before `next`, the calendar's next
  // time (see the top of this file).
  bool may_run_ahead_to(Picoseconds next) const;
  // The fibres' side of an evaluation phase.
  void trigger_deltas();
  void trigger_timeouts();
  void run_fibres();
  void make_runnable(FiberEvent& event);
  // The bodies of advance_alone_to and wait(event), shared with step_to.
  bool go_on_alone_to(Picoseconds when);
  void suspend_on(FiberEvent& event);
  // Whether anything is due at the calendar's clock in another evaluation
  // phase: delta notifications, work asked for now.
  bool delta_pending() const;
  // The earliest time of the calendar's entries and the fibres' timed
  // notifications (false when there is none).
  bool next_time(Picoseconds& next) const;
  void arm(Picoseconds when);

  // The calendar's time: the kernel's, or later where the calendar has run
  // ahead of it. One run at a time: a new calendar starts it at zero.
  static inline Picoseconds clock_ = 0;

  std::unique_ptr<TimeQueue<Target>> queue_;  // sim/kernel/time_queue.h
  // Callbacks wait in a slot table, so that the queue moves small values, not
  // functions. The table grows by chunks that never move, so a callback runs
  // where it waits (work it schedules may grow the table meanwhile) and is
  // not moved out first.
  static constexpr std::uint32_t kCallbackChunk = 1024;
  Callback& callback_at(std::uint32_t slot) {
    return callback_chunks_[slot / kCallbackChunk][slot % kCallbackChunk];
  }
  void release_callback(std::uint32_t slot);
  std::vector<std::unique_ptr<Callback[]>> callback_chunks_;
  std::uint32_t callback_slots_ = 0;  // slots made so far
  std::vector<std::uint32_t> free_slots_;
  sc_core::sc_event due_;
  Picoseconds armed_for_ = 0;
  bool armed_ = false;
  bool firing_ = false;
  // The fibres: every one spawned (a finished one's fibre is released, its
  // record kept for the timeouts that name it), those runnable in the phase
  // in progress, those spawned for the next round, and the events with a
  // delta notification pending, in the order notified.
  std::vector<std::unique_ptr<FiberThread>> threads_;
  std::vector<FiberThread*> runnable_;
  std::size_t next_runnable_ = 0;
  std::vector<FiberThread*> spawned_;
  std::vector<FiberEvent*> deltas_;
  std::vector<FiberEvent*> triggering_;    // scratch for trigger_deltas
  FiberThread* current_thread_ = nullptr;  // the fibre running now
  // The fibres' timed notifications, by time, then booking order. Few: only
  // waits with a deadline book one, and a cancelled one leaves at once.
  std::map<std::pair<Picoseconds, std::uint64_t>, FiberEvent*> timeouts_;
  std::uint64_t next_timeout_ = 0;
  bool stopped_ = false;
  Picoseconds horizon_ = ~Picoseconds{0};
};

}  // namespace gpunvme
