#include "sim/kernel/calendar.h"

#include <algorithm>
#include <stdexcept>

#include "sim/kernel/fiber.h"
#include "sim/kernel/simulation.h"
#include "sim/kernel/time_queue.h"

namespace gpunvme {

namespace {
Calendar* current_calendar = nullptr;

// Of a fibre's stack, the cache lines fetched ahead of its resume: the frames
// from its saved context up that a warp's step returns through. On the fast
// speed reference at 200,000 I/Os (CPU seconds, medians of five alternating
// runs on a shared 2-core machine): without any prefetching 10.3 s, with 4
// lines 8.4 s, 8 lines 8.6 s, 16 lines 8.8 s.
constexpr int kPrefetchStackLines = 4;
}  // namespace

Calendar::Calendar(const sc_core::sc_module_name& name)
    : sc_core::sc_module(name), queue_(std::make_unique<TimeQueue<Target>>()) {
  SC_METHOD(fire);
  sensitive << due_;
  dont_initialize();
  current_calendar = this;
  clock_ = 0;
}

// Fibres that never finished are abandoned with their stacks (Fiber).
Calendar::~Calendar() {
  if (current_calendar == this) current_calendar = nullptr;
}

FiberEvent::~FiberEvent() {
  if (timed_calendar_ != nullptr) timed_calendar_->cancel(*this);
}

Calendar& Calendar::current() {
  if (current_calendar == nullptr) {
    throw std::logic_error("models are made and run inside a gpunvme::Simulation");
  }
  return *current_calendar;
}

// Inline: every callback scheduled and every wake-up pushes once.
[[gnu::always_inline]] inline void Calendar::push(Picoseconds when, Target target) {
  when = std::max(when, now());
  queue_->push(when, target);
  // While firing, fire() takes whatever is due now and re-arms for the rest.
  if (firing_) return;
  // sc_event keeps only its earliest pending notification: re-arm only for
  // an earlier time.
  if (!armed_ || when < armed_for_) arm(when);
}

void Calendar::arm(Picoseconds when) {
  armed_ = true;
  armed_for_ = when;
  due_.notify(delay_until(when));
}

void Calendar::schedule_at(Picoseconds when, Callback callback) {
  std::uint32_t slot;
  if (free_slots_.empty()) {
    if (callback_slots_ % kCallbackChunk == 0) {
      callback_chunks_.push_back(std::make_unique<Callback[]>(kCallbackChunk));
    }
    slot = callback_slots_++;
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  callback_at(slot) = std::move(callback);
  push(when, Target::callback(slot));
}

// Inline: run_due frees each callback's slot.
[[gnu::always_inline]] inline void Calendar::release_callback(std::uint32_t slot) {
  callback_at(slot) = nullptr;
  free_slots_.push_back(slot);
}

void Calendar::wake_at(Picoseconds when, sc_core::sc_event& event) {
  push(when, Target::thread(event));
}

void Calendar::wake_at(Picoseconds when, FiberEvent& event) { push(when, Target::fiber(event)); }

// Inline: fire() asks once per time it reaches, advance_alone_to once per
// warp step that might go on alone.
[[gnu::always_inline]] inline bool Calendar::may_run_ahead_to(Picoseconds next) const {
  // sc_start(duration) triggers what is due at its end but runs it in the
  // next sc_start: the calendar stops short of the limit, as the kernel does.
  if (stopped_ || next >= horizon_) return false;
  // Not while a process is runnable or a delta notification is pending (a
  // thread was woken); and the kernel's next timed notification, if any,
  // must come after `next`: at the same time, the kernel's heap would decide
  // the order. (What sc_time_to_pending_activity() tells, asked of the
  // context directly: it runs once per time the calendar reaches.)
  const sc_core::sc_simcontext* context = sc_core::sc_curr_simcontext;
  if (context->pending_activity_at_current_time()) return false;
  sc_core::sc_time kernel_next;
  return !context->next_time(kernel_next) || kernel_next.value() > next;
}

// Inline: fire() asks once per time it reaches.
inline bool Calendar::next_time(Picoseconds& next) const {
  if (queue_->empty() && timeouts_.empty()) return false;
  next = ~Picoseconds{0};
  if (!queue_->empty()) next = queue_->earliest();
  if (!timeouts_.empty()) next = std::min(next, timeouts_.begin()->first.first);
  return true;
}

void Calendar::fire() {
  armed_ = false;
  firing_ = true;
  clock_ = now();
  // Fibres spawned before the run: the kernel would have made their threads
  // runnable at its initialization, before any this method wakes.
  if (!spawned_.empty()) {
    runnable_.insert(runnable_.end(), spawned_.begin(), spawned_.end());
    spawned_.clear();
  }
  for (;;) {
    // One evaluation phase at the calendar's clock. Most times hold model
    // callbacks only: the calls that would find nothing to do are skipped.
    if (!deltas_.empty()) trigger_deltas();
    if (!timeouts_.empty()) trigger_timeouts();
    run_due();
    if (!runnable_.empty() || !spawned_.empty()) run_fibres();
    // sc_stop finishes the evaluation phase in progress, no more.
    if (stopped_) break;
    // The timed notifications due now were taken: a next time at the clock is
    // work asked for now.
    Picoseconds next = 0;
    const bool more = next_time(next);
    if (!deltas_.empty() || (more && next <= clock_)) {
      // Another phase at this time, unless the kernel has something of its
      // own to run in between.
      if (sc_core::sc_pending_activity_at_current_time(sc_core::sc_curr_simcontext)) break;
      continue;
    }
    if (!more || !may_run_ahead_to(next)) break;
    clock_ = next;
  }
  firing_ = false;
  Picoseconds next = 0;
  if (delta_pending()) {
    arm(clock_);
  } else if (next_time(next)) {
    arm(next);
  }
}

bool Calendar::delta_pending() const {
  return !deltas_.empty() || (!queue_->empty() && queue_->earliest() <= clock_);
}

// The work after the entry just taken, four entries deep, each a step
// further along the pointers it will follow: the event of the fourth (or the
// callback of a model), the fibre record of the third, whose event the last
// call fetched, the fibre of the second, whose record the last call fetched,
// and the stack of the next. A warp step touches its event, its fibre's
// record, its fibre and the top of its stack, each in memory of its own,
// which after the turns of thousands of other warps is seldom cached: fetched
// ahead, the misses overlap the work of the entries before. Only hints: an
// entry pushed meanwhile may come first, and nothing here changes what runs.
// Inline: run_due calls it once per entry it takes, and as a call it cost
// its frame each time.
[[gnu::always_inline]] inline void Calendar::prefetch_upcoming() {
  const TimeQueue<Target>::Entry* upcoming = nullptr;
  const std::size_t count = queue_->upcoming_run(upcoming);
  const auto waiter = [&](std::size_t ahead) -> const FiberThread* {
    if (ahead >= count) return nullptr;
    const FiberEvent* event = upcoming[ahead].payload.fiber_event();
    return event == nullptr ? nullptr : event->waiter_;
  };
  if (count > 3) {
    const Target& target = upcoming[3].payload;
    if (const FiberEvent* event = target.fiber_event()) {
      __builtin_prefetch(event);
    } else if (target.is_callback()) {
      __builtin_prefetch(&callback_at(target.slot()));
    }
  }
  if (const FiberThread* thread = waiter(2)) __builtin_prefetch(thread);
  if (const FiberThread* thread = waiter(1)) __builtin_prefetch(thread->fiber.get());
  if (const FiberThread* thread = waiter(0)) {
    if (thread->fiber != nullptr) thread->fiber->prefetch_stack(kPrefetchStackLines);
  }
}

// Inline: run_due calls it for every warp's wake-up.
[[gnu::always_inline]] inline void Calendar::make_runnable(FiberEvent& event) {
  FiberThread* thread = event.waiter_;
  if (thread == nullptr) return;  // nobody waits on it now: the notification is lost
  // Woken by one event, the fibre no longer waits on the other.
  for (FiberEvent*& waited : thread->waiting_on) {
    if (waited != nullptr) waited->waiter_ = nullptr;
    waited = nullptr;
  }
  runnable_.push_back(thread);
}

void Calendar::run_due() {
  TimeQueue<Target>::Entry due;
  while (queue_->take_due(clock_, due)) {
    prefetch_upcoming();
    const Target target = due.payload;
    if (FiberEvent* fiber_event = target.fiber_event()) {
      // The woken warp counts its own wait.
      make_runnable(*fiber_event);
      continue;
    }
    if (sc_core::sc_event* event = target.event()) {
      event->notify();
      continue;
    }
    Simulation::count_event(Simulation::EventKind::kModelCallback);
    // Run in place (the chunks do not move while it schedules more work);
    // its slot is freed once it has returned.
    try {
      callback_at(target.slot())();
    } catch (...) {
      release_callback(target.slot());
      throw;
    }
    release_callback(target.slot());
  }
}

// Inline in advance_alone_to and step_to.
[[gnu::always_inline]] inline bool Calendar::go_on_alone_to(Picoseconds when) {
  // Only a running fibre goes on alone, and only when no other fibre is
  // runnable or spawned, no delta notification is pending, and no timed one
  // nor calendar entry comes before or at `when`.
  if (current_thread_ == nullptr) return false;
  if (!queue_->empty() && queue_->earliest() <= when) return false;
  if (next_runnable_ < runnable_.size() || !spawned_.empty() || !deltas_.empty()) return false;
  if (!timeouts_.empty() && timeouts_.begin()->first.first <= when) return false;
  if (!may_run_ahead_to(when)) return false;
  clock_ = std::max(clock_, when);
  return true;
}

bool Calendar::advance_alone_to(Picoseconds when) { return go_on_alone_to(when); }

void Calendar::spawn(std::function<void()> body) {
  auto thread = std::make_unique<FiberThread>();
  thread->fiber = std::make_unique<Fiber>(std::move(body), kFiberStackBytes);
  spawned_.push_back(thread.get());
  threads_.push_back(std::move(thread));
  // Outside the method (before the run): it runs them when next activated.
  if (!firing_ && (!armed_ || now() < armed_for_)) arm(now());
}

// Inline in wait(event) and step_to.
[[gnu::always_inline]] inline void Calendar::suspend_on(FiberEvent& event) {
  FiberThread* self = current_thread_;
  if (self == nullptr) throw std::logic_error("a warp waits on its fibre (Calendar::spawn)");
  event.waiter_ = self;
  self->waiting_on[0] = &event;
  self->waiting_on[1] = nullptr;
  Fiber::suspend();
}

void Calendar::wait(FiberEvent& event) { suspend_on(event); }

void Calendar::step_to(Picoseconds when, FiberEvent& event) {
  if (go_on_alone_to(when)) return;
  push(when, Target::fiber(event));
  suspend_on(event);
}

void Calendar::wait(FiberEvent& first, FiberEvent& second) {
  FiberThread* self = current_thread_;
  if (self == nullptr) throw std::logic_error("a warp waits on its fibre (Calendar::spawn)");
  first.waiter_ = self;
  second.waiter_ = self;
  self->waiting_on[0] = &first;
  self->waiting_on[1] = &second;
  Fiber::suspend();
}

void Calendar::notify_delta(FiberEvent& event) {
  if (event.delta_pending_) return;
  event.delta_pending_ = true;
  deltas_.push_back(&event);
  if (!firing_ && (!armed_ || now() < armed_for_)) arm(now());
}

void Calendar::notify_at(FiberEvent& event, Picoseconds when) {
  if (when <= now()) {
    notify_delta(event);
    return;
  }
  if (event.delta_pending_) return;
  if (event.timed_calendar_ != nullptr) {
    if (event.timed_key_.first <= when) return;
    cancel(event);
  }
  event.timed_calendar_ = this;
  event.timed_key_ = {when, next_timeout_++};
  timeouts_.emplace(event.timed_key_, &event);
  if (!firing_ && (!armed_ || when < armed_for_)) arm(when);
}

void Calendar::cancel(FiberEvent& event) {
  if (event.timed_calendar_ == nullptr) return;
  timeouts_.erase(event.timed_key_);
  event.timed_calendar_ = nullptr;
}

void Calendar::trigger_deltas() {
  if (deltas_.empty()) return;
  triggering_.swap(deltas_);
  // The kernel triggers its delta events last notified first.
  for (std::size_t i = triggering_.size(); i > 0; --i) {
    FiberEvent& event = *triggering_[i - 1];
    event.delta_pending_ = false;
    make_runnable(event);
  }
  triggering_.clear();
}

void Calendar::trigger_timeouts() {
  while (!timeouts_.empty() && timeouts_.begin()->first.first <= clock_) {
    FiberEvent& event = *timeouts_.begin()->second;
    timeouts_.erase(timeouts_.begin());
    event.timed_calendar_ = nullptr;
    make_runnable(event);
  }
}

void Calendar::run_fibres() {
  for (;;) {
    // The fibres runnable in this phase, in order (none is made runnable
    // while they run: wake-ups go through the calendar).
    while (next_runnable_ < runnable_.size()) {
      FiberThread* thread = runnable_[next_runnable_++];
      if (next_runnable_ < runnable_.size() && runnable_[next_runnable_]->fiber != nullptr) {
        runnable_[next_runnable_]->fiber->prefetch_stack(kPrefetchStackLines);
      }
      current_thread_ = thread;
      try {
        thread->fiber->resume();
      } catch (...) {
        current_thread_ = nullptr;
        throw;
      }
      current_thread_ = nullptr;
      if (thread->fiber->finished()) thread->fiber.reset();  // its stack goes back to the pool
    }
    runnable_.clear();
    next_runnable_ = 0;
    // Then the fibres spawned meanwhile, as the kernel runs spawning methods
    // after the threads and their threads after them.
    if (spawned_.empty()) return;
    runnable_.swap(spawned_);
  }
}

std::size_t Calendar::deepest_fiber_stack() const {
  std::size_t deepest = Fiber::deepest_pooled_stack();
  for (const auto& thread : threads_) {
    if (thread->fiber != nullptr) deepest = std::max(deepest, thread->fiber->stack_bytes_used());
  }
  return deepest;
}

}  // namespace gpunvme
