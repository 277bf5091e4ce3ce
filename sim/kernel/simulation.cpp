#include "sim/kernel/simulation.h"

#include <systemc>
#include <vector>

#include "sim/kernel/calendar.h"

namespace gpunvme {

namespace {
// Old contexts are kept, not deleted: SystemC's own static objects register
// with the first context and unregister at process exit, so deleting a
// context would leave them dangling. Each kept context is a few kilobytes.
std::vector<sc_core::sc_simcontext*>& retired_contexts() {
  static auto* contexts = new std::vector<sc_core::sc_simcontext*>();
  return *contexts;
}
bool first_run = true;
}  // namespace

Simulation::Simulation() {
  if (!first_run) {
    retired_contexts().push_back(sc_core::sc_curr_simcontext);
    sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
    sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  }
  first_run = false;
  // The copyright banner would pollute every run's stdout.
  sc_core::sc_report_handler::set_actions("/IEEE_Std_1666/deprecated", sc_core::SC_DO_NOTHING);
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  for (std::uint64_t& count : event_counts_) count = 0;
  calendar_ = std::make_unique<Calendar>("calendar");
}

Simulation::~Simulation() = default;

void Simulation::run(Picoseconds limit) {
  if (limit == 0) {
    calendar_->set_horizon(~Picoseconds{0});
    sc_core::sc_start();
    return;
  }
  // `limit` from now(), which the calendar's clock may have run ahead of the
  // kernel's: the run ends at the same time either way.
  const Picoseconds until = Calendar::now() + limit;
  calendar_->set_horizon(until);
  sc_core::sc_start(sc_core::sc_time::from_value(until - Calendar::kernel_now()));
  calendar_->set_horizon(~Picoseconds{0});
}

void Simulation::stop() {
  Calendar::current().stop();
  // SystemC reports the stop ("Simulation stopped by user.") on stdout,
  // where a run's summary or JSON result goes.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  sc_core::sc_stop();
}

Picoseconds Simulation::now() { return Calendar::now(); }

std::uint64_t Simulation::events() {
  std::uint64_t total = 0;
  for (const std::uint64_t count : event_counts_) total += count;
  return total;
}

}  // namespace gpunvme
