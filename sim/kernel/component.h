// Base of every model: a SystemC module that owns its parameters and a queue
// of timed callbacks. One SC_METHOD per component drains the callbacks due
// now, so a model costs one kernel activation per distinct wake-up time, not
// one process per in-flight item.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include <systemc>

#include "sim/kernel/inplace_function.h"
#include "sim/kernel/time.h"
#include "sim/params/param_spec.h"

namespace gpunvme {

class Component : public sc_core::sc_module {
 public:
  // Move-only; captures of up to seven words are kept without allocating.
  using Callback = InplaceFunction<void(), 56>;

  SC_HAS_PROCESS(Component);
  Component(const sc_core::sc_module_name& name, ParamValues params);

  const ParamValues& params() const { return params_; }
  std::string id() const { return basename(); }

  void schedule_at(Picoseconds when, Callback callback);
  void schedule_in(Picoseconds delay, Callback callback) {
    schedule_at(now() + delay, std::move(callback));
  }
  // Inline (sc_time_stamp() is not); the kernel's resolution is 1 ps. The
  // context pointer is read directly: sc_get_curr_simcontext(), which would
  // make a context where none exists, is a call where GCC does not inline it,
  // and a component's constructor has made the context already.
  static Picoseconds now() { return sc_core::sc_curr_simcontext->time_stamp().value(); }

 private:
  // The heap holds small entries; the callbacks wait in a slot table, so
  // reordering the heap does not move std::functions around.
  struct Pending {
    Picoseconds when;
    std::uint64_t sequence;  // ties break in scheduling order: deterministic
    std::uint32_t slot;      // index into callbacks_
  };
  struct Later {
    bool operator()(const Pending& a, const Pending& b) const {
      return a.when != b.when ? a.when > b.when : a.sequence > b.sequence;
    }
  };

  void dispatch();

  ParamValues params_;
  std::priority_queue<Pending, std::vector<Pending>, Later> pending_;
  std::vector<Callback> callbacks_;
  std::vector<std::uint32_t> free_slots_;
  std::uint64_t next_sequence_ = 0;
  sc_core::sc_event wake_;
  Picoseconds armed_for_ = 0;
  bool armed_ = false;
  bool dispatching_ = false;
};

}  // namespace gpunvme
