#include "models/gpu/gpu.h"

#include <stdexcept>

namespace gpunvme::gpu {

const ComponentSpec& gpu_spec() {
  static const ComponentSpec spec{
      "gpu",
      "A GPU whose warps run the submission and completion algorithms; its memory is reachable "
      "by peers through its BAR.",
      {
          integer_param("sms", "", 132, 1, 1024, "streaming multiprocessors",
                        "NVIDIA H100 SXM5 datasheet: 132 SMs"),
          integer_param("max_warps_per_sm", "", 64, 1, 64, "resident warps per SM",
                        "CUDA C Programming Guide, compute capability 9.0: 2048 threads per SM"),
          real_param("sm_clock_ghz", "GHz", 1.98, 0.1, 5.0, "SM clock",
                     "NVIDIA H100 SXM5 datasheet: up to 1.98 GHz boost"),
          real_param("memory_gib", "GiB", 80.0, 1.0, 1024.0, "device memory exposed by the BAR",
                     "NVIDIA H100 SXM5 datasheet: 80 GB HBM3"),
          real_param("atomic_latency_ns", "ns", 140.0, 1.0, 1e5,
                     "uncontended global atomic, L2 hit, issue to result",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): ~140 ns"),
          real_param("atomic_same_address_ns", "ns", 2.0, 0.01, 1e4,
                     "service interval of one L2 atomic unit: back-to-back atomics on one "
                     "address complete at most this often",
                     "estimate (one L2 slice operation per ~1-2 ns at the L2 clock); see "
                     "configs/measurements for the hardware figure"),
          real_param("load_latency_ns", "ns", 134.0, 1.0, 1e5,
                     "global load that hits in L2 (a poll of a queue entry)",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): ~134 ns"),
          real_param("store_issue_ns", "ns", 18.0, 0.1, 1e4,
                     "issue time of one 16 B-per-lane store instruction (posted, no fence)",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): store issues in ~18 ns"),
          real_param("fence_gpu_ns", "ns", 330.0, 1.0, 1e5,
                     "__threadfence() with nothing outstanding",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): ~330 ns"),
          real_param("fence_system_ns", "ns", 700.0, 1.0, 1e5,
                     "__threadfence_system() with nothing outstanding",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): ~700 ns"),
          real_param("mmio_store_issue_ns", "ns", 18.0, 0.1, 1e4,
                     "issue time of a posted MMIO store to a device BAR (a doorbell)",
                     "taken equal to a posted store to host memory, measured ~18 ns on a lent "
                     "H100, 2026-11 (CALIBRATION.md)"),
          real_param("zero_copy_read_ns", "ns", 1150.0, 1.0, 1e6,
                     "dependent read of pinned host memory over PCIe",
                     "measured on a lent H100, 2026-11 (CALIBRATION.md): ~1.15 us"),
          real_param("bar_access_ns", "ns", 250.0, 0.0, 1e5,
                     "time the GPU takes to serve a peer's read of its memory through the BAR",
                     "estimate: an L2 access (~134-245 ns measured for loads and atomics) plus "
                     "the PCIe endpoint's own pipeline"),
      }};
  return spec;
}

Gpu::Gpu(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
         MemorySpace& memory)
    : Component(name, std::move(params)), node_(node) {
  const ParamValues& p = this->params();
  costs_.atomic_latency = ns_to_ps(p.real("atomic_latency_ns"));
  costs_.atomic_same_address_interval = ns_to_ps(p.real("atomic_same_address_ns"));
  costs_.load_latency = ns_to_ps(p.real("load_latency_ns"));
  costs_.store_issue = ns_to_ps(p.real("store_issue_ns"));
  costs_.fence_gpu = ns_to_ps(p.real("fence_gpu_ns"));
  costs_.fence_system = ns_to_ps(p.real("fence_system_ns"));
  costs_.mmio_store_issue = ns_to_ps(p.real("mmio_store_issue_ns"));
  costs_.zero_copy_read = ns_to_ps(p.real("zero_copy_read_ns"));
  costs_.instruction = ns_to_ps(1.0 / p.real("sm_clock_ghz"));
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

Picoseconds Gpu::book_atomic(std::uint64_t addr, Picoseconds issue) {
  ++atomics_;
  Picoseconds& free_at = atomic_unit_free_at_[addr];
  const Picoseconds start = std::max(issue, free_at);
  atomic_queueing_ps_ += start - issue;
  free_at = start + costs_.atomic_same_address_interval;
  return start + costs_.atomic_latency;
}

}  // namespace gpunvme::gpu
