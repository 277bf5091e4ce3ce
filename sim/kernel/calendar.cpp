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
  const Picoseconds t = now();
  when = std::max(when, t);
  queue_->push(when, target);
  // While firing, fire() takes whatever is due now and re-arms for the rest.
  if (firing_) return;
  // sc_event keeps only its earliest pending notification: re-arm only for
  // an earlier time.
  if (!armed_ || when < armed_for_) {
    armed_ = true;
    armed_for_ = when;
    due_.notify(sc_core::sc_time::from_value(when - t));
  }
}

void Calendar::fire() {
  armed_ = false;
  firing_ = true;
  const Picoseconds t = now();
  TimeQueue<Target>::Entry due;
  while (queue_->take_due(t, due)) {
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
  firing_ = false;
  if (!queue_->empty()) {
    armed_ = true;
    armed_for_ = queue_->earliest();
    due_.notify(sc_core::sc_time::from_value(armed_for_ - t));
  }
}

}  // namespace gpunvme
