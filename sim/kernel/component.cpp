#include "sim/kernel/component.h"

#include "sim/kernel/simulation.h"

namespace gpunvme {

Component::Component(const sc_core::sc_module_name& name, ParamValues params)
    : sc_core::sc_module(name), params_(std::move(params)) {
  SC_METHOD(dispatch);
  sensitive << wake_;
  dont_initialize();
}

void Component::schedule_at(Picoseconds when, Callback callback) {
  const Picoseconds t = now();
  if (when < t) when = t;
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(callback));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(callback);
  }
  pending_.push(Pending{when, next_sequence_++, slot});
  // sc_event keeps only the earliest pending notification, so re-arm only
  // when this callback is due before the one already armed.
  // While dispatching, the loop below picks up anything due now and re-arms
  // for the rest once it is done.
  if (dispatching_) return;
  if (!armed_ || when < armed_for_) {
    armed_ = true;
    armed_for_ = when;
    wake_.notify(sc_core::sc_time::from_value(when - t));  // resolution: 1 ps
  }
}

void Component::dispatch() {
  armed_ = false;
  dispatching_ = true;
  const Picoseconds t = now();
  while (!pending_.empty() && pending_.top().when <= t) {
    // Move out before calling: the callback may schedule more work.
    const std::uint32_t slot = pending_.top().slot;
    Callback callback = std::move(callbacks_[slot]);
    callbacks_[slot] = nullptr;
    free_slots_.push_back(slot);
    pending_.pop();
    Simulation::count_event();
    callback();
  }
  dispatching_ = false;
  if (!pending_.empty() && !armed_) {
    armed_ = true;
    armed_for_ = pending_.top().when;
    wake_.notify(sc_core::sc_time::from_value(armed_for_ - t));
  }
}

}  // namespace gpunvme
