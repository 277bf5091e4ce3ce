#include "models/pcie/pcie_specs.h"

namespace gpunvme::pcie {

const ComponentSpec& link_spec() {
  static const ComponentSpec spec{
      "link",
      "A PCIe link between two nodes of a PCIe tree, or an inter-socket link between two CPUs.",
      {
          enum_param(
              "type", "pcie", {"pcie", "inter_socket"},
              "pcie joins PCIe nodes; inter_socket joins CPU sockets (UPI / Infinity Fabric)",
              "topology vocabulary"),
          integer_param("gen", "", 4, 1, 6, "PCIe generation (2.5 to 64 GT/s per lane)",
                        "PCIe base specifications 1.0 to 6.0"),
          integer_choice_param("width", "lanes", 16, {1, 2, 4, 8, 16}, "negotiated link width",
                               "PCIe base specification (x12 and x32 are not modelled)"),
          real_param("latency_ns", "ns", 30.0, 0.0, 1e6,
                     "one-way latency of one traversal: PHY and data-link pipelines of both ports "
                     "plus flight time",
                     "estimate: tens of ns per traversal; with the root complex and memory "
                     "defaults it puts a 64 B DMA read from host memory on Gen3 x8 at ~570 ns, "
                     "the median pcie-bench measured (Neugebauer et al., SIGCOMM 2018)"),
          real_param("bandwidth_gbps", "GB/s", 62.4, 0.1, 1e4,
                     "inter_socket only: usable bandwidth each way",
                     "Intel Xeon 4th gen: 3 UPI 2.0 links x 16 GT/s x 20 lanes ~ 62.4 GB/s each "
                     "way (Intel Xeon Scalable 4th gen platform brief)"),
      }};
  return spec;
}

const ComponentSpec& switch_spec() {
  static const ComponentSpec spec{
      "switch",
      "A PCIe switch: one upstream port, several downstream ports, cut-through forwarding.",
      {
          real_param("latency_ns", "ns", 115.0, 0.0, 1e5, "port-to-port cut-through latency",
                     "~115 ns, Broadcom PEX89100 class (Gen5); ~105 ns PEX88000 (Gen4): Linley "
                     "Group 2019 and vendor briefs (CALIBRATION.md)"),
      }};
  return spec;
}

const ComponentSpec& root_complex_spec() {
  static const ComponentSpec spec{
      "root_complex",
      "A CPU's PCIe root complex: root ports below, the socket's fabric and memory above.",
      {
          string_param("socket", "", "id of the cpu node this root complex belongs to",
                       "topology vocabulary"),
          real_param("latency_ns", "ns", 150.0, 0.0, 1e5,
                     "one traversal of the root complex (root port to memory fabric or to "
                     "another root port)",
                     "estimate: pcie-bench's ~570 ns median 64 B read from host memory (Gen3 x8, "
                     "Xeon E5) less two link traversals, the DRAM access and serialization"),
      }};
  return spec;
}

const ComponentSpec& topology_spec() {
  static const ComponentSpec spec{
      "topology",
      "Top-level fields of a topology file besides nodes and links.",
      {
          string_param("name", "unnamed", "short name of the topology", "user"),
          string_param("doc", "", "one line describing the machine", "user"),
          integer_choice_param("mps", "B", 256, {128, 256, 512, 1024, 2048, 4096},
                               "Max Payload Size used on every link",
                               "common platform setting (CALIBRATION.md, PCIe table)"),
          integer_choice_param("mrrs", "B", 512, {128, 256, 512, 1024, 2048, 4096},
                               "Max Read Request Size of every requester",
                               "common platform setting (CALIBRATION.md, PCIe table)"),
          integer_choice_param("rcb", "B", 64, {64, 128}, "Read Completion Boundary",
                               "PCIe base spec r5.0 2.3.1.1; 64 B on most root ports"),
      }};
  return spec;
}

}  // namespace gpunvme::pcie
