#include "sim/kernel/calendar.h"

#include <algorithm>
#include <stdexcept>

#include "sim/kernel/simulation.h"
#include "sim/kernel/time_queue.h"

namespace gpunvme {

namespace {
Calendar* current_calendar = nullptr;
}  // namespace

Calendar::Calendar(const sc_core::sc_module_name& name)
    : sc_core::sc_module(name), queue_(std::make_unique<TimeQueue<Target>>()) {
  SC_METHOD(fire);
  sensitive << due_;
  dont_initialize();
  current_calendar = this;
  clock_ = 0;
}

Calendar::~Calendar() {
  if (current_calendar == this) current_calendar = nullptr;
}

Calendar& Calendar::current() {
  if (current_calendar == nullptr) {
    throw std::logic_error("models are made and run inside a gpunvme::Simulation");
  }
  return *current_calendar;
}

void Calendar::schedule_at(Picoseconds when, Callback callback) {
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(callback));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(callback);
  }
  push(when, Target{nullptr, slot});
}

void Calendar::wake_at(Picoseconds when, sc_core::sc_event& event) {
  push(when, Target{&event, 0});
}

void Calendar::push(Picoseconds when, const Target& target) {
  when = std::max(when, now());
  queue_->push(when, target);
  // While firing, fire() takes whatever is due now and re-arms for the rest.
  if (firing_) return;
  // sc_event keeps only its earliest pending notification: re-arm only for
  // an earlier time.
  if (!armed_ || when < armed_for_) {
    armed_ = true;
    armed_for_ = when;
    due_.notify(delay_until(when));
  }
}

void Calendar::fire() {
  armed_ = false;
  firing_ = true;
  clock_ = now();
  for (;;) {
    run_due();
    if (queue_->empty()) break;
    const Picoseconds next = queue_->earliest();
    if (!may_run_ahead_to(next)) break;
    clock_ = next;
  }
  firing_ = false;
  if (!queue_->empty()) {
    armed_ = true;
    armed_for_ = queue_->earliest();
    due_.notify(delay_until(armed_for_));
  }
}

void Calendar::run_due() {
  TimeQueue<Target>::Entry due;
  while (queue_->take_due(clock_, due)) {
    const Target target = due.payload;
    if (target.event != nullptr) {
      // The woken warp counts its own wait.
      target.event->notify();
      continue;
    }
    Simulation::count_event(Simulation::EventKind::kModelCallback);
    // Moved out before the call: the callback may schedule more work.
    Callback callback = std::move(callbacks_[target.slot]);
    callbacks_[target.slot] = nullptr;
    free_slots_.push_back(target.slot);
    callback();
  }
}

bool Calendar::advance_alone_to(Picoseconds when) {
  if (firing_ || (!queue_->empty() && queue_->earliest() <= when)) return false;
  if (!may_run_ahead_to(when)) return false;
  clock_ = std::max(clock_, when);
  return true;
}

bool Calendar::may_run_ahead_to(Picoseconds next) const {
  // sc_start(duration) triggers what is due at its end but runs it in the
  // next sc_start: the calendar stops short of the limit, as the kernel does.
  if (stopped_ || next >= horizon_) return false;
  // Zero while a process is runnable or a delta notification is pending
  // (a warp was woken); else the time to the kernel's next timed
  // notification, which must come after `next`: at the same time, the
  // kernel's heap would decide the order.
  const sc_core::sc_simcontext* context = sc_core::sc_curr_simcontext;
  const Picoseconds to_kernel_activity = sc_core::sc_time_to_pending_activity(context).value();
  return to_kernel_activity != 0 && kernel_now() + to_kernel_activity > next;
}

}  // namespace gpunvme
