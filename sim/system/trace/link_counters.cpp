#include "sim/system/trace/link_counters.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>

namespace gpunvme::trace {

std::function<void(TraceWriter&, Picoseconds)> link_utilization_sampler(
    const pcie::Fabric& fabric) {
  struct State {
    Picoseconds last = 0;
    std::map<std::string, double> busy_ps;  // by direction, at `last`
  };
  auto state = std::make_shared<State>();
  return [&fabric, state](TraceWriter& trace, Picoseconds now) {
    if (now <= state->last) return;
    const nlohmann::json links = fabric.statistics(now);
    const double interval = static_cast<double>(now - state->last);
    for (const nlohmann::json& link : links) {
      const std::string name = link.at("direction").get<std::string>();
      // Servers book ahead, so the busy time may include work scheduled
      // past `now`; the fraction is clamped to [0, 1].
      const double busy = link.at("utilization").get<double>() * static_cast<double>(now);
      const double before = state->busy_ps[name];
      trace.counter("pcie", name, now, std::clamp((busy - before) / interval, 0.0, 1.0));
      state->busy_ps[name] = busy;
    }
    state->last = now;
  };
}

}  // namespace gpunvme::trace
