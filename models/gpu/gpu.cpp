#include "models/gpu/gpu.h"

#include "models/pcie/dma_engine.h"
#include "models/pcie/pcie_specs.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/config/config_error.h"
#include "sim/config/json_path.h"

namespace gpunvme::gpu {

namespace {
constexpr const char* kH200 = "configs/measurements/gpu-microbench-h200-2026-11-22.json";

// Which L2 partition holds a 128 B line: the hardware hashes addresses over
// the slices; any well-mixed function of the line index splits them evenly.
std::uint32_t line_partition(std::uint64_t addr) {
  std::uint64_t x = (addr >> 7) + 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((x ^ (x >> 31)) & 1u);
}
}  // namespace

const ComponentSpec& gpu_spec() {
  static const std::string h200 = std::string("measured on the lent H200, 2026-11-22 (") + kH200;
  static const ComponentSpec spec = [] {
    ComponentSpec s{
      "gpu",
      "A GPU whose warps run the submission and completion algorithms; its memory is reachable "
      "by peers through its BAR. Defaults describe an H100 SXM; configs/gpu/ holds profiles.",
      {
          integer_param("sms", "", 132, 1, 1024, "streaming multiprocessors",
                        "NVIDIA H100 SXM5 datasheet: 132 SMs [nvidia-h100-datasheet]"),
          integer_param("max_warps_per_sm", "", 64, 1, 64, "resident warps per SM",
                        "CUDA C Programming Guide, compute capability 9.0: 2048 threads per SM "
                        "[cuda-guide]"),
          integer_param("schedulers_per_sm", "", 4, 1, 8,
                        "warp schedulers per SM, each issuing one warp instruction per cycle",
                        "NVIDIA H100 architecture whitepaper (2022): four SM sub-partitions, each "
                        "with one warp scheduler [nvidia-h100-whitepaper]"),
          integer_list_param(
              "block_sm_order", "", {}, 0, 1023,
              "the SM each thread block goes to, by block index: block b runs on entry b mod "
              "sms, each SM once (none: block b on SM b mod sms)",
              "measured per profile (tests/hardware/block_placement.cu); none where not "
              "measured"),
          integer_list_param(
              "sm_l2_partition", "", {}, 0, 1,
              "which of the two L2 partitions each SM is near, by SM (none: SM s near "
              "partition s mod 2); a line is near when its partition, by address hash, is the "
              "SM's",
              "measured per profile (tests/hardware/block_placement.cu: SMs whose atomic "
              "latency on a word is near or far alike share a partition); none where not "
              "measured"),
          real_param("sm_clock_ghz", "GHz", 1.98, 0.1, 5.0, "SM clock",
                     "NVIDIA H100 SXM5 datasheet: up to 1.98 GHz boost [nvidia-h100-datasheet]"),
          real_param("memory_gib", "GiB", 80.0, 1.0, 1024.0, "device memory exposed by the BAR",
                     "NVIDIA H100 SXM5 datasheet: 80 GB HBM3 [nvidia-h100-datasheet]"),
          real_param("atomic_latency_ns", "ns", 140.0, 1.0, 1e5,
                     "uncontended global atomic on a line in the issuing SM's near L2 "
                     "partition, issue to result",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: ~140 ns"),
          real_param("atomic_far_latency_ns", "ns", 245.0, 1.0, 1e5,
                     "the same on a line in the far L2 partition (half of the lines, by "
                     "address hash, for any SM)",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: one instance read "
                     "~245 ns; the H200 map (" +
                         std::string(kH200) +
                         ", atomic_add_latency_by_sm_and_address) shows the same two modes"),
          real_param("atomic_same_address_ns", "ns", 0.732, 0.01, 1e4,
                     "service interval of one L2 atomic unit: back-to-back atomics on one "
                     "address complete at most this often, whether from one warp's lanes or "
                     "from many warps",
                     h200 + ", l2_same_address_atomic_interval: 1.365 G ops/s saturated); no "
                            "H100 figure"),
          real_param("load_latency_ns", "ns", 134.0, 1.0, 1e5,
                     "global load that hits in L2 (a poll of a queue entry or a flag)",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: ~134 ns"),
          real_param("store_issue_ns", "ns", 3.82, 0.1, 1e4,
                     "issue time of one 16 B-per-lane store instruction to GPU memory",
                     h200 + ", global_store_issue_sustained); no H100 figure"),
          real_param("pcie_store_issue_ns", "ns", 18.0, 0.1, 1e4,
                     "issue time of a posted store that leaves the GPU over PCIe: a doorbell "
                     "(MMIO) or a store to pinned host memory",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: a store to host "
                     "memory issues in ~18 ns"),
          real_param("pcie_load_overhead_ns", "ns", 588.9, 0.0, 1e5,
                     "GPU-internal part of a load that crosses PCIe (SM to the PCIe endpoint "
                     "and back); the fabric adds the links, switches and the target",
                     "derived: H100 zero-copy read ~1150 ns measured on a lent H100, 2026-11 "
                     "[h100-probe-2026-11] minus the fabric's modelled round trip for a 4 B read "
                     "of host memory from a Gen5 x16 GPU on the root complex (561.1 ns, "
                     "tests/gpu/gpu_model_test.cpp)"),
          real_param("fence_block_ns", "ns", 6.11, 0.0, 1e5, "__threadfence_block()",
                     h200 + ", fence_block_idle); no H100 figure"),
          real_param("fence_gpu_ns", "ns", 330.0, 1.0, 1e5,
                     "__threadfence() with nothing outstanding",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: ~330 ns"),
          real_param("fence_gpu_after_store_ns", "ns", 475.5, 1.0, 1e5,
                     "__threadfence() after a store to GPU memory that it must order",
                     "estimate: the H100 idle figure (330 ns [h100-probe-2026-11]) plus the "
                     "increment measured on the H200 (fence_gpu_after_global_store 289.3 - store "
                     "7.9 - idle 135.9 = 145.5 ns, " +
                         std::string(kH200) + ")"),
          real_param("fence_system_ns", "ns", 700.0, 1.0, 1e5,
                     "__threadfence_system() with nothing outstanding (or only stores to GPU "
                     "memory: the H200 shows no difference)",
                     "measured on a lent H100, 2026-11 [h100-probe-2026-11]: ~700 ns"),
          real_param("fence_system_after_pcie_store_ns", "ns", 778.2, 1.0, 1e5,
                     "__threadfence_system() after a posted store over PCIe (host memory, a "
                     "BAR, an SQ in a CMB)",
                     "estimate: the H100 idle figure (700 ns [h100-probe-2026-11]) plus the "
                     "increment measured on the H200 (fence_system_after_host_store 603.6 - store "
                     "7.9 - idle 517.5 = 78.2 ns, " +
                         std::string(kH200) + ")"),
          real_param("lane_loop_iteration_ns", "ns", 101.5, 0.0, 1e5,
                     "one iteration of a warp-uniform loop over a warp's lanes in the "
                     "algorithms' own code (per-lane bookkeeping in Lanes<T> that every lane "
                     "runs through, between platform calls; sim/algo/lanes.h for_each_lane)",
                     "measured on the lent H100, 2026-11-24 (configs/measurements/"
                     "hw-strategies-h100-2026-11-24.json, op-profile runs at 1 warp): the "
                     "warps' own code between platform calls per I/O over the simulator's loop "
                     "passes per I/O (the simulator run at this cost), pooled over five strategies "
                     "(96.5-107.6 ns each)"),
          real_param("bar_access_ns", "ns", 250.0, 0.0, 1e5,
                     "time the GPU takes to serve a peer's read of its memory through the BAR",
                     "estimate: an L2 access (~134-245 ns measured for loads and atomics "
                     "[h100-probe-2026-11]) plus the PCIe endpoint's own pipeline"),
      }};
    // The copy engine and the receive buffers of the GPU's PCIe endpoint.
    std::vector<ParamSpec>& params = s.params;
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
  const ParamValues& p = this->params();
  sms_ = static_cast<std::uint32_t>(p.integer("sms"));
  max_warps_per_sm_ = static_cast<std::uint32_t>(p.integer("max_warps_per_sm"));
  schedulers_per_sm_ = static_cast<std::uint32_t>(p.integer("schedulers_per_sm"));
  costs_.cycle = ns_to_ps(1.0 / p.real("sm_clock_ghz"));
  costs_.atomic_near = ns_to_ps(p.real("atomic_latency_ns"));
  costs_.atomic_far = ns_to_ps(p.real("atomic_far_latency_ns"));
  costs_.atomic_same_address_interval = ns_to_ps(p.real("atomic_same_address_ns"));
  costs_.load_latency = ns_to_ps(p.real("load_latency_ns"));
  costs_.store_issue = ns_to_ps(p.real("store_issue_ns"));
  costs_.pcie_store_issue = ns_to_ps(p.real("pcie_store_issue_ns"));
  costs_.pcie_load_overhead = ns_to_ps(p.real("pcie_load_overhead_ns"));
  costs_.fence_block = ns_to_ps(p.real("fence_block_ns"));
  costs_.fence_gpu = ns_to_ps(p.real("fence_gpu_ns"));
  costs_.fence_gpu_after_store = ns_to_ps(p.real("fence_gpu_after_store_ns"));
  costs_.fence_system = ns_to_ps(p.real("fence_system_ns"));
  costs_.fence_system_after_pcie_store = ns_to_ps(p.real("fence_system_after_pcie_store_ns"));
  costs_.lane_loop_iteration = ns_to_ps(p.real("lane_loop_iteration_ns"));
  warp_schedulers_.assign(std::size_t{sms_} * schedulers_per_sm_, NextFreeServer{});
  for (std::int64_t sm : p.integer_list("block_sm_order")) {
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
                        render_value(p.json().at("block_sm_order")),
                        fmt::format("expected each of the {} SMs once, or none", sms_));
    }
  }
  for (std::int64_t part : p.integer_list("sm_l2_partition")) {
    sm_partition_.push_back(static_cast<std::uint32_t>(part));
  }
  if (!sm_partition_.empty() && sm_partition_.size() != sms_) {
    throw ConfigError("", fmt::format("$.nodes[{}].sm_l2_partition", node),
                      render_value(p.json().at("sm_l2_partition")),
                      fmt::format("expected one entry per SM ({}), or none", sms_));
  }
  const auto bytes = static_cast<std::uint64_t>(p.real("memory_gib") * (1ull << 30));
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
  NextFreeServer& issuer = warp_schedulers_[std::size_t{sm % sms_} * schedulers_per_sm_ +
                                            scheduler % schedulers_per_sm_];
  const NextFreeServer::Booking issue = issuer.book(at, Picoseconds{cycles} * costs_.cycle);
  issue_stall_ps_ += issue.queued();
  return issue.start;
}

std::uint32_t Gpu::block_sm(std::uint32_t block) const {
  return block_sm_order_.empty() ? block % sms_
                                 : block_sm_order_[block % block_sm_order_.size()];
}

Picoseconds Gpu::atomic_latency(std::uint32_t sm, std::uint64_t addr) const {
  const std::uint32_t near =
      sm_partition_.empty() ? (sm & 1u) : sm_partition_[std::size_t{sm % sms_}];
  return line_partition(addr) == near ? costs_.atomic_near : costs_.atomic_far;
}

Picoseconds Gpu::book_atomic(std::uint64_t addr, Picoseconds issue, std::uint32_t sm) {
  ++atomics_;
  const NextFreeServer::Booking unit =
      atomic_units_[addr].book(issue, costs_.atomic_same_address_interval);
  atomic_queueing_ps_ += unit.queued();
  return unit.start + atomic_latency(sm, addr);
}

}  // namespace gpunvme::gpu
