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
          real_param("bandwidth_gbps", "GB/s", 300.0, 1.0, 1e4, "DRAM bandwidth of the socket",
                     "8 channels DDR5-4800 x 38.4 GB/s = 307 GB/s (JEDEC DDR5; Intel 4th gen Xeon)"),
      }};
  return spec;
}

}  // namespace gpunvme::host
