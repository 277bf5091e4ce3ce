#include "models/gpu/gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "models/pcie/dma_engine.h"
#include "models/pcie/pcie_specs.h"
#include "sim/kernel/calendar.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme::gpu {

namespace {
// Which L2 partition holds a 128 B line: the hardware hashes addresses over
// the slices; any well-mixed function of the line index splits them evenly.
std::uint32_t line_partition(std::uint64_t addr) {
  std::uint64_t x = (addr >> 7) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((x ^ (x >> 31)) & 1u);
}
}  // namespace

GpuParams GpuParams::from(const ParamValues& values) {
  GpuParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/gpu/gpu_params.def"
#include "models/pcie/bar_target_params.def"
#undef GPUNVME_PARAM
  out.credits = pcie::PortCredits::from(values);
  return out;
}

const ComponentSpec& gpu_spec() {
  static const ComponentSpec spec = [] {
    ComponentSpec s{
        "gpu",
        "A GPU whose warps run the submission and completion algorithms; its memory is reachable "
        "by peers through its BAR. Defaults describe an H100 SXM; configs/gpu/ holds profiles.",
        {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/gpu/gpu_params.def"
#undef GPUNVME_PARAM
        }};
    // The copy engine and the receive buffers of the GPU's PCIe endpoint.
    std::vector<ParamSpec>& params = s.params;
    for (ParamSpec& p : pcie::bar_target_params()) params.push_back(std::move(p));
    for (ParamSpec& p : pcie::dma_engine_params(
             "copy_engine_", "GPU copy engine (host <-> device copies)", 131072,
             "estimate: a chunk is the burst granularity of the model, not a hardware unit; "
             "128 KiB keeps a copy at one event per hop per 128 KiB, and moves a KV-cache "
             "block or a bounce-buffer copy of up to 128 KiB as one burst. The copy still runs "
             "at link rate: the H200's measured 55.1 GB/s H2D is reached within 6 % "
             "(tests/pcie/dma_engine_test.cpp)",
             64,
             "estimate: 64 chunks in flight cover the bandwidth-delay product of Gen5 x16 (63 GB/s "
             "x ~1.2 us host-read round trip measured on the lent H200, "
             "configs/measurements/gpu-microbench-h200-2026-11-22.json, "
             "zero_copy.host_read_latency_64KiB) many times over, so the fabric's read_tags limit "
             "is what binds, as on hardware")) {
      params.push_back(std::move(p));
    }
    for (ParamSpec& p : pcie::endpoint_credit_params("GPU")) params.push_back(std::move(p));
    return s;
  }();
  return spec;
}

Gpu::Gpu(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
         MemorySpace& memory)
    : Component(name, std::move(params)), node_(node) {
  const GpuParams p = GpuParams::from(this->params());
  sms_ = static_cast<std::uint32_t>(p.sms);
  max_warps_per_sm_ = static_cast<std::uint32_t>(p.max_warps_per_sm);
  schedulers_per_sm_ = static_cast<std::uint32_t>(p.schedulers_per_sm);
  costs_.cycle = ns_to_ps(1.0 / p.sm_clock_ghz);
  costs_.atomic_near = p.atomic_latency_ns;
  costs_.atomic_far = p.atomic_far_latency_ns;
  costs_.atomic_same_address_interval = p.atomic_same_address_ns;
  costs_.load_latency = p.load_latency_ns;
  costs_.store_issue = p.store_issue_ns;
  costs_.pcie_store_issue = p.pcie_store_issue_ns;
  costs_.entry_store = p.entry_store_ns;
  costs_.first_lane_pass = p.first_lane_pass_ns;
  costs_.pcie_load_overhead = p.pcie_load_overhead_ns;
  costs_.fence_block = p.fence_block_ns;
  costs_.fence_gpu = p.fence_gpu_ns;
  costs_.fence_gpu_after_store = p.fence_gpu_after_store_ns;
  costs_.fence_system = p.fence_system_ns;
  costs_.fence_system_after_pcie_store = p.fence_system_after_pcie_store_ns;
  costs_.fence_l1_reload = p.fence_l1_reload_ns;
  costs_.lane_loop_iteration = p.lane_loop_iteration_ns;
  costs_.agent_lane_loop_iteration = p.agent_lane_loop_iteration_ns;
  costs_.turn_pass = p.turn_pass_ns;
  costs_.turn_descriptor = p.turn_descriptor_ns;
  costs_.cq_scan_co_waiter = p.cq_scan_co_waiter_ns;
  costs_.cross_sm_turn_breaks = p.cross_sm_turn_breaks;
  cq_scan_waiters_.assign(sms_, 0);
  costs_.host_poll_read = p.host_poll_read_ns;
  costs_.host_read_interval = std::max<Picoseconds>(1, ns_to_ps(1e3 / p.host_reads_per_us));
  costs_.host_line_read_interval = p.host_line_read_interval_ns;
  costs_.copy_op_host_reads = p.copy_op_host_reads;
  costs_.host_poll_fence_system = p.host_poll_fence_system_ns;
  costs_.host_pollers_before_fence_cost =
      static_cast<std::uint32_t>(p.host_pollers_before_fence_cost);
  costs_.host_poller_fence_gpu = p.host_poller_fence_gpu_ns;
  costs_.host_poller_fence_system = p.host_poller_fence_system_ns;
  warp_schedulers_.assign(std::size_t{sms_} * schedulers_per_sm_, NextFreeServer{});
  for (std::int64_t sm : p.block_sm_order) {
    block_sm_order_.push_back(static_cast<std::uint32_t>(sm));
  }
  if (!block_sm_order_.empty()) {
    std::vector<bool> seen(sms_, false);
    bool permutation = block_sm_order_.size() == sms_;
    for (std::uint32_t sm : block_sm_order_) {
      if (!permutation || sm >= sms_ || seen[sm]) {
        permutation = false;
        break;
      }
      seen[sm] = true;
    }
    if (!permutation) {
      throw ConfigError("", fmt::format("$.nodes[{}].block_sm_order", node),
                        render_value(this->params().json().at("block_sm_order")),
                        fmt::format("expected each of the {} SMs once, or none", sms_));
    }
  }
  // Each placed launch size once, and as many SMs listed as the sizes sum to.
  std::size_t listed = 0;
  for (std::int64_t blocks : p.placed_launch_blocks) listed += static_cast<std::size_t>(blocks);
  if (listed != p.placed_launch_sms.size()) {
    throw ConfigError("", fmt::format("$.nodes[{}].placed_launch_sms", node),
                      render_value(this->params().json().at("placed_launch_sms")),
                      fmt::format("expected {} SMs, one per block of the launches "
                                  "placed_launch_blocks names",
                                  listed));
  }
  std::size_t next = 0;
  for (std::int64_t blocks : p.placed_launch_blocks) {
    std::vector<std::uint32_t> sms;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t sm = p.placed_launch_sms[next++];
      if (sm >= static_cast<std::int64_t>(sms_)) {
        throw ConfigError("", fmt::format("$.nodes[{}].placed_launch_sms", node),
                          render_value(this->params().json().at("placed_launch_sms")),
                          fmt::format("expected SMs below {} (the GPU's sms)", sms_));
      }
      sms.push_back(static_cast<std::uint32_t>(sm));
    }
    if (!placed_launches_.emplace(static_cast<std::uint32_t>(blocks), std::move(sms)).second) {
      throw ConfigError("", fmt::format("$.nodes[{}].placed_launch_blocks", node),
                        render_value(this->params().json().at("placed_launch_blocks")),
                        fmt::format("expected each launch size once ({} twice)", blocks));
    }
  }
  for (std::int64_t part : p.sm_l2_partition) {
    sm_partition_.push_back(static_cast<std::uint32_t>(part));
  }
  if (!sm_partition_.empty() && sm_partition_.size() != sms_) {
    throw ConfigError("", fmt::format("$.nodes[{}].sm_l2_partition", node),
                      render_value(this->params().json().at("sm_l2_partition")),
                      fmt::format("expected one entry per SM ({}), or none", sms_));
  }
  const auto bytes = static_cast<std::uint64_t>(p.memory_gib * (1ull << 30));
  memory_region_ = &memory.allocate(bytes, node, RegionKind::DeviceMemory, id() + ".hbm");
  next_free_ = memory_region_->base;
}

std::uint64_t Gpu::allocate(std::uint64_t bytes, std::uint64_t alignment) {
  std::uint64_t base = (next_free_ + alignment - 1) / alignment * alignment;
  if (base + bytes > memory_region_->base + memory_region_->size) {
    throw std::runtime_error(id() + ": GPU memory exhausted while placing queues and buffers");
  }
  next_free_ = base + bytes;
  return base;
}

Picoseconds Gpu::book_issue(std::uint32_t sm, std::uint32_t scheduler, Picoseconds at,
                            std::uint32_t cycles) {
  const std::size_t index =
      std::size_t{sm % sms_} * schedulers_per_sm_ + scheduler % schedulers_per_sm_;
  if (fast_quantum_ != 0) return book_issue_fast(index, at, cycles);
  NextFreeServer& issuer = warp_schedulers_[index];
  const NextFreeServer::Booking issue = issuer.book(at, Picoseconds{cycles} * costs_.cycle);
  issue_stall_ps_ += issue.queued();
  return issue.start;
}

std::uint32_t Gpu::block_sm(std::uint32_t block) const {
  return block_sm_order_.empty() ? block % sms_ : block_sm_order_[block % block_sm_order_.size()];
}

double Gpu::turn_sharers_elsewhere(std::uint64_t turn_word, const void* warp, std::uint32_t sm) {
  TurnSharers& sharers = turn_sharers_[turn_word];
  if (sharers.warps.insert(warp).second) ++sharers.warps_on_sm[sm];
  // The warp itself is one of the queue's warps and one of its SM's.
  const std::size_t others = sharers.warps.size() - 1;
  const std::size_t elsewhere = sharers.warps.size() - sharers.warps_on_sm[sm];
  return others == 0 ? 0.0 : static_cast<double>(elsewhere) / static_cast<double>(others);
}

std::uint32_t Gpu::block_sm(std::uint32_t block, std::uint32_t launch_blocks) const {
  const auto placed = placed_launches_.find(launch_blocks);
  if (placed == placed_launches_.end() || block >= launch_blocks) return block_sm(block);
  return placed->second[block];
}

Picoseconds Gpu::atomic_latency(std::uint32_t sm, std::uint64_t addr) const {
  const std::uint32_t near =
      sm_partition_.empty() ? (sm & 1u) : sm_partition_[std::size_t{sm % sms_}];
  return line_partition(addr) == near ? costs_.atomic_near : costs_.atomic_far;
}

Picoseconds Gpu::book_atomic(std::uint64_t addr, Picoseconds issue, std::uint32_t sm) {
  if (fast_quantum_ != 0) return book_atomic_fast(addr, issue, sm);
  ++atomics_;
  const NextFreeServer::Booking unit =
      atomic_units_[addr].book(issue, costs_.atomic_same_address_interval);
  atomic_queueing_ps_ += unit.queued();
  return unit.start + atomic_latency(sm, addr);
}

void Gpu::set_fast_mode(Picoseconds quantum) {
  fast_quantum_ = quantum;
  fast_schedulers_.assign(warp_schedulers_.size(), IntervalServer{});
}

// Bookings come at the warps' own times, no earlier than the simulation's.
Picoseconds Gpu::book_issue_fast(std::size_t issuer, Picoseconds at, std::uint32_t cycles) {
  const NextFreeServer::Booking issue =
      fast_schedulers_[issuer].book(at, Picoseconds{cycles} * costs_.cycle, Calendar::now());
  issue_stall_ps_ += issue.queued();
  return issue.start;
}

Picoseconds Gpu::book_atomic_fast(std::uint64_t addr, Picoseconds issue, std::uint32_t sm) {
  ++atomics_;
  const NextFreeServer::Booking unit =
      fast_atomic_units_[addr].book(issue, costs_.atomic_same_address_interval, Calendar::now());
  atomic_queueing_ps_ += unit.queued();
  return unit.start + atomic_latency(sm, addr);
}

void Gpu::add_host_poll_lines(const std::uint64_t* lines, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!owns(lines[i] * MemorySpace::kLineBytes, MemorySpace::kLineBytes)) {
      ++host_line_pollers_[lines[i]];
    }
  }
}

void Gpu::remove_host_poll_lines(const std::uint64_t* lines, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const auto it = host_line_pollers_.find(lines[i]);
    if (it == host_line_pollers_.end()) continue;  // a line of GPU memory
    if (--it->second == 0) host_line_pollers_.erase(it);
  }
}

std::uint32_t Gpu::host_line_pollers(std::uint64_t line) const {
  const auto it = host_line_pollers_.find(line);
  return it == host_line_pollers_.end() ? 0 : it->second;
}

std::uint64_t Gpu::extra_host_line_pollers(
    const std::function<bool(std::uint64_t)>& counted) const {
  std::uint64_t extra = 0;
  for (const auto& [line, pollers] : host_line_pollers_) {
    if (pollers > 1 && counted(line)) extra += pollers - 1;
  }
  return extra;
}

std::uint64_t Gpu::add_host_sweep(const std::uint64_t* lines, std::size_t count) {
  std::vector<std::uint64_t> host;
  for (std::size_t i = 0; i < count; ++i) {
    if (!owns(lines[i] * MemorySpace::kLineBytes, MemorySpace::kLineBytes)) {
      host.push_back(lines[i]);
    }
  }
  // A scan reads a line's entries one after another, with other reads
  // between: each line once.
  std::sort(host.begin(), host.end());
  host.erase(std::unique(host.begin(), host.end()), host.end());
  const std::uint64_t key = next_sweep_key_++;
  host_sweeps_.emplace(key, std::move(host));
  return key;
}

void Gpu::remove_host_sweep(std::uint64_t key) { host_sweeps_.erase(key); }

std::uint64_t Gpu::extra_ring_sweepers(
    const std::function<std::int64_t(std::uint64_t)>& ring_of) const {
  std::map<std::int64_t, std::uint64_t> sweepers;  // by ring
  std::map<std::int64_t, std::uint32_t> lines_of;  // one warp's lines, by ring
  for (const auto& [key, lines] : host_sweeps_) {
    lines_of.clear();
    for (const std::uint64_t line : lines) {
      const std::int64_t ring = ring_of(line);
      if (ring >= 0) ++lines_of[ring];
    }
    for (const auto& [ring, count] : lines_of) {
      if (count >= 2) ++sweepers[ring];
    }
  }
  std::uint64_t extra = 0;
  for (const auto& [ring, count] : sweepers) extra += count - 1;
  return extra;
}

std::uint32_t Gpu::busiest_host_line(const std::uint64_t* lines, std::size_t count) const {
  std::uint32_t most = 1;
  for (std::size_t i = 0; i < count; ++i) most = std::max(most, host_line_pollers(lines[i]));
  return most;
}

}  // namespace gpunvme::gpu
