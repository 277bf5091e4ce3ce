#include "models/host/cpu_cores.h"

#include <algorithm>
#include <cmath>

namespace gpunvme::host {

CpuIoCosts cpu_io_costs(const ParamValues& cpu) {
  CpuIoCosts c;
  c.interrupts = cpu.string("completion") == "interrupt";
  c.submit = ns_to_ps(cpu.real("submit_ns"));
  c.syscall = ns_to_ps(cpu.real("syscall_ns"));
  c.complete_poll = ns_to_ps(cpu.real("complete_poll_ns"));
  c.interrupt = ns_to_ps(cpu.real("interrupt_ns"));
  c.complete_irq = ns_to_ps(cpu.real("complete_irq_ns"));
  c.dma_map = ns_to_ps(cpu.real("dma_map_ns"));
  c.request_notice = ns_to_ps(cpu.real("request_notice_ns"));
  c.request = ns_to_ps(cpu.real("request_ns"));
  c.notify = ns_to_ps(cpu.real("notify_ns"));
  c.copy_launch = ns_to_ps(cpu.real("copy_launch_ns"));
  return c;
}

Picoseconds CpuIoCosts::per_io(std::uint32_t batch, bool mapped, bool from_gpu, bool bounce) const {
  batch = std::max<std::uint32_t>(batch, 1);
  Picoseconds t = submit + syscall / batch + (mapped ? dma_map : 0);
  t += interrupts ? complete_irq + interrupt / batch : complete_poll;
  if (from_gpu) t += request + (bounce ? 0 : notify);
  if (bounce) t += copy_launch;
  return t;
}

CpuCores::CpuCores(std::uint32_t cores)
    : free_at_(std::max<std::uint32_t>(cores, 1), 0),
      busy_(free_at_.size(), 0),
      items_(free_at_.size(), 0) {}

Picoseconds CpuCores::book(std::uint32_t core, Picoseconds at, Picoseconds work) {
  const Picoseconds start = std::max(at, free_at_[core]);
  free_at_[core] = start + work;
  busy_[core] += work;
  ++items_[core];
  return free_at_[core];
}

nlohmann::json CpuCores::statistics(Picoseconds elapsed) const {
  nlohmann::json cores = nlohmann::json::array();
  Picoseconds total = 0;
  double busiest = 0;
  for (std::size_t c = 0; c < free_at_.size(); ++c) {
    const double u =
        elapsed == 0 ? 0.0 : static_cast<double>(busy_[c]) / static_cast<double>(elapsed);
    busiest = std::max(busiest, u);
    total += busy_[c];
    cores.push_back({{"busy_ns", std::round(ps_to_ns(busy_[c]) * 1000.0) / 1000.0},
                     {"utilization", std::round(u * 1e6) / 1e6},
                     {"work_items", items_[c]}});
  }
  const double mean =
      elapsed == 0 ? 0.0
                   : static_cast<double>(total) / (static_cast<double>(elapsed) * free_at_.size());
  return {{"cores", free_at_.size()},
          {"busy_ns", std::round(ps_to_ns(total) * 1000.0) / 1000.0},
          {"mean_utilization", std::round(mean * 1e6) / 1e6},
          {"max_utilization", std::round(busiest * 1e6) / 1e6},
          {"per_core", std::move(cores)}};
}

}  // namespace gpunvme::host
