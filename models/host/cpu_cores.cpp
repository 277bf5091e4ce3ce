#include "models/host/cpu_cores.h"

#include <algorithm>
#include <cmath>

#include "models/host/host_specs.h"

namespace gpunvme::host {

const char* to_string(HostCost cost) {
  switch (cost) {
    case HostCost::syscall: return "syscall";
    case HostCost::cufile: return "cufile";
    case HostCost::buffer_lookup: return "buffer_lookup";
    case HostCost::file_system: return "file_system";
    case HostCost::driver_submit: return "driver_submit";
    case HostCost::dma_map: return "dma_map";
    case HostCost::interrupt: return "interrupt";
    case HostCost::completion: return "completion";
    case HostCost::request: return "request";
    case HostCost::notify: return "notify";
    case HostCost::copy_launch: return "copy_launch";
    case HostCost::copy_sync: return "copy_sync";
    case HostCost::memory_stall: return "memory_stall";
    case HostCost::kCount: break;
  }
  return "?";
}

Picoseconds HostCostLedger::total() const {
  Picoseconds t = 0;
  for (Picoseconds s : spent_) t += s;
  return t;
}

nlohmann::json HostCostLedger::per_io_ns(std::uint64_t ios) const {
  nlohmann::json out = nlohmann::json::object();
  const double n = static_cast<double>(std::max<std::uint64_t>(ios, 1));
  auto ns = [&](Picoseconds t) { return std::round(ps_to_ns(t) / n * 1000.0) / 1000.0; };
  for (std::size_t i = 0; i < spent_.size(); ++i) {
    if (spent_[i] != 0) out[to_string(static_cast<HostCost>(i))] = ns(spent_[i]);
  }
  out["total"] = ns(total());
  return out;
}

CpuIoCosts cpu_io_costs(const ParamValues& values) {
  const CpuParams cpu = CpuParams::from(values);
  CpuIoCosts c;
  c.interrupts = cpu.completion == CpuCompletion::interrupt;
  c.submit = cpu.submit_ns;
  c.syscall = cpu.syscall_ns;
  c.complete_poll = cpu.complete_poll_ns;
  c.interrupt = cpu.interrupt_ns;
  c.complete_irq = cpu.complete_irq_ns;
  c.dma_map = cpu.dma_map_ns;
  c.file_system = cpu.fs_ns;
  c.cufile = cpu.cufile_ns;
  c.buffer_lookup = cpu.gpu_buffer_lookup_ns;
  c.request_notice = cpu.request_notice_ns;
  c.poll_period = cpu.poll_period_ns;
  c.request = cpu.request_ns;
  c.notify = cpu.notify_ns;
  c.copy_launch = cpu.copy_launch_ns;
  c.copy_sync = cpu.copy_sync_ns;
  c.fill_buffers = static_cast<std::uint32_t>(cpu.line_fill_buffers);
  c.coalescing_threshold = static_cast<std::uint32_t>(cpu.irq_coalescing_threshold);
  c.coalescing_time_units = static_cast<std::uint32_t>(cpu.irq_coalescing_time_100us);
  return c;
}

Picoseconds CpuIoCosts::per_io(double ios_per_syscall, double ios_per_interrupt, bool mapped,
                               bool from_gpu, bool bounce) const {
  auto share = [](Picoseconds cost, double ios) {
    return static_cast<Picoseconds>(std::llround(static_cast<double>(cost) / std::max(ios, 1.0)));
  };
  Picoseconds t = submit + share(syscall, ios_per_syscall) + (mapped ? dma_map : 0) + file_system;
  t += interrupts ? complete_irq + share(interrupt, ios_per_interrupt) : complete_poll;
  if (from_gpu) t += request + (bounce ? 0 : notify);
  t += bounce ? copy_launch + copy_sync : cufile + buffer_lookup;
  return t;
}

CpuCores::CpuCores(std::uint32_t cores) : cores_(std::max<std::uint32_t>(cores, 1)) {}

nlohmann::json CpuCores::statistics(Picoseconds elapsed) const {
  nlohmann::json cores = nlohmann::json::array();
  Picoseconds total = 0;
  double busiest = 0;
  for (const NextFreeServer& core : cores_) {
    const Picoseconds busy = core.busy_ps();
    const double u = elapsed == 0 ? 0.0 : static_cast<double>(busy) / static_cast<double>(elapsed);
    busiest = std::max(busiest, u);
    total += busy;
    cores.push_back({{"busy_ns", std::round(ps_to_ns(busy) * 1000.0) / 1000.0},
                     {"utilization", std::round(u * 1e6) / 1e6},
                     {"work_items", core.bookings()}});
  }
  const double mean =
      elapsed == 0 ? 0.0
                   : static_cast<double>(total) / (static_cast<double>(elapsed) * cores_.size());
  return {{"cores", cores_.size()},
          {"busy_ns", std::round(ps_to_ns(total) * 1000.0) / 1000.0},
          {"mean_utilization", std::round(mean * 1e6) / 1e6},
          {"max_utilization", std::round(busiest * 1e6) / 1e6},
          {"per_core", std::move(cores)}};
}

}  // namespace gpunvme::host
