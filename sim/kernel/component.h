// Base of every model: a SystemC module that owns its parameters and
// schedules timed callbacks on the run's calendar (sim/kernel/calendar.h), so
// a model costs no kernel process per in-flight item, and work due at one
// picosecond runs in the order it was scheduled.
#pragma once

#include <string>
#include <systemc>

#include "sim/kernel/calendar.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/kernel/time.h"

namespace gpunvme {

class Component : public sc_core::sc_module {
 public:
  using Callback = Calendar::Callback;

  Component(const sc_core::sc_module_name& name, ParamValues params);

  const ParamValues& params() const { return params_; }
  std::string id() const { return basename(); }

  void schedule_at(Picoseconds when, Callback callback) {
    calendar_.schedule_at(when, std::move(callback));
  }
  void schedule_in(Picoseconds delay, Callback callback) {
    schedule_at(now() + delay, std::move(callback));
  }
  static Picoseconds now() { return Calendar::now(); }

 private:
  ParamValues params_;
  Calendar& calendar_;
};

}  // namespace gpunvme
