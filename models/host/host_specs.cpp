#include "models/host/host_specs.h"

namespace gpunvme::host {

const ComponentSpec& cpu_spec() {
  static const ComponentSpec spec{
      "cpu",
      "A CPU socket: cores that run the host's I/O stack; its root complexes and memory name it "
      "as their socket.",
      {
          integer_param("cores", "", 32, 1, 1024, "cores available to the I/O path",
                        "Intel Xeon Platinum 8480+ has 56; 32 is a common partition"),
          real_param("clock_ghz", "GHz", 2.0, 0.1, 10.0, "core clock",
                     "Intel Xeon Platinum 8480+ base clock 2.0 GHz (Intel ARK)"),
          // Per-I/O costs of the CPU-initiated paths (gds, bounce). With the
          // defaults a polling core spends submit + complete_poll + syscall /
          // 32 = 100 ns per I/O: 10 M IOPS per core, the figure CALIBRATION.md
          // gives for io_uring polled and the Linux driver in passthrough.
          enum_param("completion", "polling", {"polling", "interrupt"},
                     "how a core learns that a command completed: it polls the CQ (io_uring "
                     "IOPOLL, SPDK) or the SSD's MSI-X interrupt wakes it",
                     "io_uring IORING_SETUP_IOPOLL and SPDK poll; the Linux default is interrupts"),
          real_param("submit_ns", "ns", 50.0, 0.0, 1e6,
                     "core time to turn one request into an NVMe command and place it in the SQ "
                     "(block layer, driver, SQE)",
                     "estimate: with complete_poll_ns and syscall_ns / 32 this is 100 ns per "
                     "I/O, ~10 M IOPS per core: io_uring polled, 512 B (CALIBRATION.md, io_uring "
                     "author's 2021 results) and the Linux driver's 8-12 M per core in IOMMU "
                     "passthrough (seed 000)"),
          real_param("syscall_ns", "ns", 300.0, 0.0, 1e6,
                     "core time of one submission system call (io_uring_enter), paid once per "
                     "batch of commands a core submits together",
                     "estimate: system call entry and exit with speculative-execution "
                     "mitigations costs a few hundred ns on current x86 servers"),
          real_param("complete_poll_ns", "ns", 40.0, 0.0, 1e6,
                     "core time to reap one completion entry by polling (CQE, request "
                     "completion, CQ head)",
                     "estimate: the rest of the 100 ns per I/O of a 10 M IOPS polling core "
                     "(CALIBRATION.md, CPU-side I/O cost)"),
          real_param("interrupt_ns", "ns", 1500.0, 0.0, 1e6,
                     "core time of one interrupt: MSI-X delivery, hard and soft interrupt, "
                     "waking the waiting task (completion = interrupt)",
                     "estimate: interrupt entry plus a task wake-up and context switch, ~1-2 us "
                     "on Linux (lmbench lat_ctx class measurements)"),
          real_param("complete_irq_ns", "ns", 60.0, 0.0, 1e6,
                     "core time per completion entry handled in an interrupt",
                     "estimate: complete_poll_ns plus the block layer's softirq completion"),
          real_param("dma_map_ns", "ns", 400.0, 0.0, 1e6,
                     "core time to map and unmap one command's buffer in the IOMMU",
                     "seed 000: ~8-12 M IOPS per core in IOMMU passthrough, ~2 M with DMA "
                     "mapping, i.e. ~100 ns vs ~500 ns per I/O"),
          enum_param("iommu_dma_map", "auto", {"auto", "on", "off"},
                     "charge dma_map_ns per command: auto = when the SSD's DMA enters a root "
                     "complex whose IOMMU translates (root_complex iommu = translate)",
                     "Linux DMA API: streaming mappings cost an IOMMU map only when the device "
                     "is translated (not with iommu=pt)"),
          real_param("request_notice_ns", "ns", 100.0, 0.0, 1e6,
                     "time a polling core takes to see a request the GPU posted to host memory",
                     "estimate: one DRAM cache miss, ~100 ns (as the NVMe driver's admin CQ "
                     "notice)"),
          real_param("request_ns", "ns", 50.0, 0.0, 1e6,
                     "core time to take one GPU request from its ring (read the descriptor, find "
                     "the blocks)",
                     "estimate: one 64 B descriptor already in cache plus a table lookup"),
          real_param("notify_ns", "ns", 20.0, 0.0, 1e6,
                     "core time to post a completion flag to GPU memory (a store to the GPU's "
                     "BAR)",
                     "estimate: an uncached posted store issues in tens of ns"),
          real_param("copy_launch_ns", "ns", 2000.0, 0.0, 1e7,
                     "core time to start one copy between a pinned bounce buffer and GPU memory "
                     "(cudaMemcpyAsync)",
                     "estimate: small cudaMemcpyAsync calls cost a few us of host time; the low "
                     "end of the commonly measured 2-5 us"),
      }};
  return spec;
}

const ComponentSpec& host_memory_spec() {
  static const ComponentSpec spec{
      "host_memory",
      "DRAM behind a CPU socket, reachable by DMA through that socket's root complexes.",
      {
          string_param("socket", "", "id of the cpu node this memory belongs to",
                       "topology vocabulary"),
          real_param("capacity_gib", "GiB", 512.0, 1.0, 1e6, "capacity",
                     "seed 000: host DRAM tier 512 GB - 2 TB"),
          real_param("dma_latency_ns", "ns", 200.0, 0.0, 1e5,
                     "time memory takes to serve an inbound DMA read or absorb a write (DRAM "
                     "access plus coherence)",
                     "estimate: with the link and root complex defaults, a 64 B DMA read on "
                     "Gen3 x8 takes ~570 ns round trip, pcie-bench's measured median "
                     "(Neugebauer et al., SIGCOMM 2018)"),
          real_param(
              "bandwidth_gbps", "GB/s", 300.0, 1.0, 1e4, "DRAM bandwidth of the socket",
              "8 channels DDR5-4800 x 38.4 GB/s = 307 GB/s (JEDEC DDR5; Intel 4th gen Xeon)"),
      }};
  return spec;
}

}  // namespace gpunvme::host
