#include "sim/kernel/component.h"

#include "sim/kernel/simulation.h"

namespace gpunvme {

Component::Component(const sc_core::sc_module_name& name, ParamValues params)
    : sc_core::sc_module(name), params_(std::move(params)) {
  SC_METHOD(dispatch);
  sensitive << wake_;
  dont_initialize();
}

Picoseconds Component::now() { return sc_core::sc_time_stamp().value(); }

void Component::schedule_at(Picoseconds when, Callback callback) {
  const Picoseconds t = now();
  if (when < t) when = t;
  pending_.push(Pending{when, next_sequence_++, std::move(callback)});
  // sc_event keeps only the earliest pending notification, so re-arm only
  // when this callback is due before the one already armed.
  // While dispatching, the loop below picks up anything due now and re-arms
  // for the rest once it is done.
  if (dispatching_) return;
  if (!armed_ || when < armed_for_) {
    armed_ = true;
    armed_for_ = when;
    wake_.notify(sc_core::sc_time(static_cast<double>(when - t), sc_core::SC_PS));
  }
}

void Component::dispatch() {
  armed_ = false;
  dispatching_ = true;
  const Picoseconds t = now();
  while (!pending_.empty() && pending_.top().when <= t) {
    // Move out before popping: the callback may schedule more work.
    Callback callback = std::move(const_cast<Pending&>(pending_.top()).callback);
    pending_.pop();
    Simulation::count_event();
    callback();
  }
  dispatching_ = false;
  if (!pending_.empty() && !armed_) {
    armed_ = true;
    armed_for_ = pending_.top().when;
    wake_.notify(sc_core::sc_time(static_cast<double>(armed_for_ - t), sc_core::SC_PS));
  }
}

}  // namespace gpunvme
