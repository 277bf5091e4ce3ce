#include "models/pcie/pcie_specs.h"

namespace gpunvme::pcie {

namespace {

// Receive-buffer credits of one port, declared the same way for switches and root complexes.
// 0 advertises infinite credit (PCIe Base Spec r5.0 §2.6.1: a zero credit field means
// "infinite").
std::vector<ParamSpec> credit_params(const std::string& owner, std::int64_t posted_header,
                                     std::int64_t posted_data, std::int64_t non_posted_header,
                                     std::int64_t non_posted_data, std::int64_t completion_header,
                                     std::int64_t completion_data, const std::string& source,
                                     const std::string& completion_source) {
  const std::string each =
      " advertised by each " + owner + " port for what it receives (0 = infinite)";
  return {
      integer_param("posted_header_credits", "TLPs", posted_header, 0, 4096,
                    "PH: posted request headers" + each, source),
      integer_param("posted_data_credits", "16 B", posted_data, 0, 65536,
                    "PD: posted request data, in 16 B units" + each, source),
      integer_param("non_posted_header_credits", "TLPs", non_posted_header, 0, 4096,
                    "NPH: non-posted request headers (one per read request)" + each, source),
      integer_param("non_posted_data_credits", "16 B", non_posted_data, 0, 65536,
                    "NPD: non-posted request data (memory reads carry none)" + each, source),
      integer_param("completion_header_credits", "TLPs", completion_header, 0, 4096,
                    "CplH: completion headers" + each, completion_source),
      integer_param("completion_data_credits", "16 B", completion_data, 0, 65536,
                    "CplD: completion data, in 16 B units" + each, completion_source),
  };
}

std::vector<ParamSpec> join(std::vector<ParamSpec> a, const std::vector<ParamSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Buffers that keep a Gen5 x16 port at line rate: bandwidth x credit loop. A TLP's room in a
// switch port comes back after its serialization in (~4.4 ns at x16), the link (30 ns), the
// switch (115 ns), its serialization out on an x4 port (~18 ns) and the UpdateFC flight back
// (30 ns): ~200 ns, i.e. ~13 KB at 63 GB/s. Several times that as headroom for a congested
// egress. Intel's IIO advertised 64 PH / 320 PD per Gen2 x16 root port (Xeon C5500/C3500
// datasheet vol. 1, Table 76); Intel's Gen5 x16 R-Tile port 784 PH / 1456 PD (R-Tile Avalon-ST
// user guide, RX flow control interface). Switch vendors claim line rate on every port, which
// needs at least the bandwidth-delay product.
const char* kLineRateBufferSource =
    "estimate: bandwidth x per-TLP credit loop of a Gen5 x16 port fanning out to x4 ports (~63 "
    "GB/s x ~200 ns = ~13 KB), about five times that as headroom for a congested egress, as "
    "vendors' line-rate claims need; cf. Intel IIO 64 PH / 320 PD per Gen2 x16 port (Xeon C5500 "
    "datasheet Table 76) at an 8x lower rate, Intel R-Tile Gen5 x16 784 PH / 1456 PD (R-Tile "
    "Avalon-ST IP for PCIe user guide, 683501, RX flow control interface) [intel-xeon-c5500] "
    "[intel-rtile-683501]";

}  // namespace

std::vector<ParamSpec> endpoint_credit_params(const std::string& owner) {
  // Credits flow per TLP, so an endpoint that sinks into its memory at line rate (a GPU's HBM,
  // an SSD's buffer) needs only the bandwidth-delay product of its link: ~63 GB/s x ~70 ns
  // (TLP, 30 ns flight, 30 ns UpdateFC back) = ~4.4 KB at Gen5 x16. No GPU or SSD vendor
  // publishes its buffers; the defaults are a published Gen5 x16 endpoint's.
  return credit_params(
      owner, 784, 1456, 784, 392, 0, 0,
      "Intel R-Tile Avalon-ST IP for PCIe user guide (683501), RX flow control interface: a Gen5 "
      "x16 endpoint port advertises 784 PH / 1456 PD (23 KB) / 784 NPH / 392 NPD; 5x the ~4.4 KB "
      "bandwidth-delay product of a Gen5 x16 link's per-TLP credit loop. No GPU or SSD vendor "
      "publishes its buffers [intel-rtile-683501]",
      "PCIe Base Spec r5.0 §2.6.1: endpoints advertise infinite completion credits; a requester "
      "bounds its completions by its outstanding tags (R-Tile: 0 = infinite) [pcie-base-5.0] "
      "[intel-rtile-683501]");
}

const ComponentSpec& link_spec() {
  static const ComponentSpec spec{
      "link",
      "A PCIe link between two nodes of a PCIe tree, or an inter-socket link between two CPUs.",
      {
          enum_param(
              "type", "pcie", {"pcie", "inter_socket"},
              "pcie joins PCIe nodes; inter_socket joins CPU sockets (UPI / Infinity Fabric)",
              "topology vocabulary [topology-file]"),
          integer_param("gen", "", 4, 1, 6, "PCIe generation (2.5 to 64 GT/s per lane)",
                        "PCIe base specifications 1.0 to 6.0 [pcie-base-6.0]"),
          integer_choice_param("width", "lanes", 16, {1, 2, 4, 8, 16}, "negotiated link width",
                               "PCIe base specification (x12 and x32 are not modelled) "
                               "[pcie-base-5.0]"),
          real_param("latency_ns", "ns", 30.0, 0.0, 1e6,
                     "one-way latency of one traversal: PHY and data-link pipelines of both ports "
                     "plus flight time; also the flight of the UpdateFC DLLPs that return "
                     "credits. For inter_socket links set the socket-to-socket figure (50-100 ns, "
                     "seed 000)",
                     "estimate: tens of ns per traversal; with the root complex and memory "
                     "defaults it puts a 64 B DMA read from host memory on Gen3 x8 at ~575 ns, the "
                     "median pcie-bench measured is ~570 ns (Neugebauer et al., SIGCOMM 2018) "
                     "[pcie-bench]"),
          real_param("bandwidth_gbps", "GB/s", 62.4, 0.1, 1e4,
                     "inter_socket only: usable bandwidth each way",
                     "Intel Xeon 4th gen: 3 UPI 2.0 links x 16 GT/s x 20 lanes ~ 62.4 GB/s each "
                     "way (Intel Xeon Scalable 4th gen platform brief) [intel-xeon-4th-gen]"),
      }};
  return spec;
}

const ComponentSpec& switch_spec() {
  static const ComponentSpec spec{
      "switch",
      "A PCIe switch: one upstream port, several downstream ports, cut-through forwarding, "
      "ACS on its downstream ports.",
      join(
          {
              real_param("latency_ns", "ns", 115.0, 0.0, 1e5, "port-to-port cut-through latency",
                         "~115 ns, Broadcom PEX89100 class (Gen5); ~105 ns PEX88000 (Gen4): Linley "
                         "Group 2019 and vendor briefs [broadcom-pex] [linley-2019]"),
              bool_param("acs_request_redirect", false,
                         "ACS P2P Request Redirect on the downstream ports: requests (writes and "
                         "read requests) from a device below this switch to another device "
                         "below it go up to the root complex instead of turning in the switch",
                         "off on bare-metal GPU storage servers so peer traffic stays below the "
                         "switch (seed 003, P2P truth table); Linux sets it on every ACS-capable "
                         "downstream port once an IOMMU driver asks for ACS (pci_enable_acs) "
                         "[linux] [seed-003]"),
              bool_param("acs_completion_redirect", false,
                         "ACS P2P Completion Redirect on the downstream ports: completions a "
                         "device below this switch returns to a peer below it go up to the root "
                         "complex too",
                         "PCIe Base Spec r5.0 §6.12; Linux sets it together with Request Redirect "
                         "(pci_std_enable_acs) [pcie-base-5.0] [linux]"),
              bool_param("acs_upstream_forwarding", true,
                         "ACS Upstream Forwarding on the downstream ports: TLPs that a switch "
                         "below redirected travel on up through this switch; without it they "
                         "fail (Unsupported Request)",
                         "PCIe Base Spec r5.0 §6.12.1.1; Linux sets it on every ACS-capable "
                         "downstream port (pci_std_enable_acs) [pcie-base-5.0] [linux]"),
              string_list_param("acs_ports", {},
                                "ids of the nodes directly below this switch whose downstream "
                                "ports the acs_* settings apply to; empty = every downstream "
                                "port (the others keep ACS off)",
                                "PCIe Base Spec r5.0 §7.7.8: ACS is controlled per port; Linux "
                                "pci=disable_acs_redir= exempts chosen ports [pcie-base-5.0] "
                                "[linux]"),
              enum_param("port_arbitration", "fcfs", {"fcfs", "round_robin"},
                         "egress port arbitration among the ingress ports that have TLPs for "
                         "one egress port: first come first served by arrival, or round robin "
                         "over the ingress ports (a port waits at most one burst per other busy "
                         "ingress port)",
                         "PCIe Base Spec r5.0 §6.3.3.4: port arbitration is vendor-defined unless "
                         "a VC capability selects a scheme (hardware-fixed round robin is the "
                         "common one); fcfs keeps the first come first served egress queue of "
                         "earlier releases of this model [pcie-base-5.0]"),
              real_param("tlps_per_ns", "1/ns", 0.0, 0.0, 1e4,
                         "TLPs each egress port of the switch forwards per ns (its "
                         "header-processing limit), whatever their size; 0 = no limit below "
                         "the links' own rates",
                         "0: Broadcom's PEX88000 / PEX89000 briefs claim non-blocking line rate on "
                         "every port and publish no per-TLP figure; set it to model a switch "
                         "measured to forward small TLPs below line rate [broadcom-pex]"),
              enum_param(
                  "peer_routing", "route", {"route", "upstream", "block"},
                  "what the switch firmware does with traffic between two of its "
                  "downstream ports: route it inside the switch, send it to the upstream "
                  "port as ACS redirect would, or refuse it",
                  "seed 003, P2P truth table: through a PLX/Broadcom switch P2P depends on "
                  "the switch firmware; route is the PCIe default [seed-003] [broadcom-pex]"),
          },
          credit_params("switch", 256, 4096, 256, 64, 256, 4096, kLineRateBufferSource,
                        std::string(kLineRateBufferSource) +
                            "; switches advertise finite completion credits (only endpoints and "
                            "root complexes must advertise infinite ones, r5.0 §2.6.1 "
                            "[pcie-base-5.0])"))};
  return spec;
}

const ComponentSpec& root_complex_spec() {
  static const ComponentSpec spec{
      "root_complex",
      "A CPU's PCIe root complex: root ports below, the socket's fabric and memory above, and "
      "the IOMMU that translates what devices below it ask for.",
      join(
          {
              string_param("socket", "", "id of the cpu node this root complex belongs to",
                           "topology vocabulary [topology-file]"),
              real_param("latency_ns", "ns", 150.0, 0.0, 1e5,
                         "one traversal of the root complex (root port to memory fabric or to "
                         "another root port)",
                         "estimate: pcie-bench's ~570 ns median 64 B read from host memory (Gen3 "
                         "x8, Xeon E5) less two link traversals, the DRAM access and serialization "
                         "[pcie-bench]"),
              real_param("fabric_bandwidth_gbps", "GB/s", 128.0, 0.1, 1e4,
                         "bandwidth each way between the root ports and the socket's memory "
                         "fabric, shared by every root port of this root complex",
                         "estimate: an IIO stack of a 4th-gen Xeon serves one Gen5 x16 (63 GB/s "
                         "each way) at line rate; 2x that as headroom for bifurcated ports "
                         "[intel-xeon-4th-gen]"),
              real_param("p2p_bandwidth_gbps", "GB/s", 32.0, 0.1, 1e4,
                         "bandwidth of peer-to-peer traffic the root complex turns between its "
                         "root ports (one direction of a port pair, shared by all pairs)",
                         "estimate: half a Gen5 x16 link; seed 000: P2P between root ports is "
                         "limited by the root complex's internal fabric [seed-000]"),
              integer_choice_param(
                  "line_bytes", "B", 64, {64, 128},
                  "size of the coherent transactions the root complex turns DMA into: a TLP "
                  "to or from memory is one transaction per line of data it carries, at least "
                  "one (a read request, a small write)",
                  "Intel Xeon Scalable: the IIO issues inbound PCIe writes and reads to the mesh "
                  "as 64 B cache-line requests (Intel Xeon Processor Scalable Memory Family Uncore "
                  "Performance Monitoring Reference Manual, IIO and IRP units); AMD Zen's I/O die "
                  "likewise moves DMA in 64 B lines [intel-xeon-uncore-pmu]"),
              real_param("lines_per_ns", "1/ns", 0.861, 0.001, 1e4,
                         "cache-line transactions the root complex serves per ns each way "
                         "between its root ports and memory (fabric in and fabric out "
                         "separately); with line_bytes it caps DMA to and from memory at "
                         "lines_per_ns x line_bytes GB/s, and small TLPs at lines_per_ns per ns",
                         "calibrated: 55.1 GB/s / 64 B, the plateau (median at 16-256 MiB) of "
                         "pinned cudaMemcpy on the lent H100, Gen5 x16: H2D 55.11, D2H 55.12 "
                         "GB/s (configs/measurements/"
                         "pcie-copy-bandwidth-h100-2026-11-26.json; the H200's 55.11 / 55.25 "
                         "agree), 4-5 % below what the link carries; both directions at once "
                         "reached 49.9 GB/s each way there; this limit predicts 49.0 (read "
                         "requests take lines too) with 4 KiB bursts, 48.8 with the copy "
                         "engine's 128 KiB bursts"),
              enum_param("peer_to_peer", "forward", {"forward", "same_root_complex", "block"},
                         "how the root complex treats traffic between two devices: forward it "
                         "between its root ports and to other root complexes; forward it only "
                         "between its own root ports; or refuse it (Unsupported Request)",
                         "Linux p2pdma host bridge allow list (drivers/pci/p2pdma.c): AMD Zen and "
                         "Intel Skylake-SP and later forward; Xeon E5 v1-v3 only within one host "
                         "bridge (REQ_SAME_HOST_BRIDGE); other host bridges are refused [linux]"),
              enum_param("iommu", "off", {"off", "passthrough", "translate"},
                         "the IOMMU of this root complex for the devices below it: off, "
                         "passthrough (identity domain, iommu=pt: untranslated) or translate "
                         "(DMA API domain: devices are given I/O virtual addresses, so every "
                         "request they issue climbs to this root complex and is translated "
                         "through the IOTLB)",
                         "GPU storage servers run with the IOMMU off or in passthrough (seed 003: "
                         "intel_iommu=on iommu=pt) [linux] [seed-003]"),
              integer_param("iotlb_entries", "", 64, 1, 1 << 20,
                            "IOTLB entries (shared by the devices below this root complex, "
                            "tagged by requester: one context per device; least recently used "
                            "replaced)",
                            "pcie-bench paper data (Neugebauer et al., SIGCOMM 2018): misses start "
                            "once the DMA window exceeds ~256 KB, i.e. about 64 entries of 4 KB "
                            "[pcie-bench]"),
              integer_choice_param("iommu_page_bytes", "B", 4096, {4096, 2097152, 1073741824},
                                   "IOMMU page size: one IOTLB entry maps this much",
                                   "4 KB: the Linux DMA API maps streaming buffers at 4 KB IOMMU "
                                   "granularity, and pcie-bench's miss figures are for 4 KB pages "
                                   "[pcie-bench] [linux]"),
              real_param("iotlb_miss_ns", "ns", 280.0, 0.0, 1e5,
                         "time an IOTLB miss adds to a request (page walk)",
                         "pcie-bench paper data (Neugebauer et al., SIGCOMM 2018): about +280 ns "
                         "median per miss [pcie-bench]"),
              bool_param("iommu_maps_peer_bars", true,
                         "iommu = translate only: whether each device's IOMMU context maps the "
                         "BARs of its peers (GPU memory, SSD registers); without a mapping a "
                         "peer-to-peer request faults (seed 003: strict IOMMU, P2P fails)",
                         "Linux P2PDMA maps peer memory through the IOMMU when the path crosses "
                         "the host bridge (drivers/pci/p2pdma.c, PCI_P2PDMA_MAP_THRU_HOST_BRIDGE); "
                         "false models a driver that maps only host memory [linux]"),
          },
          credit_params("root", 256, 4096, 256, 64, 0, 0, kLineRateBufferSource,
                        "PCIe Base Spec r5.0 §2.6.1: root complexes and endpoints advertise "
                        "infinite completion credits; requesters bound completions by their "
                        "outstanding tags [pcie-base-5.0]"))};
  return spec;
}

const ComponentSpec& topology_spec() {
  static const ComponentSpec spec{
      "topology",
      "Top-level fields of a topology file besides nodes and links: the platform's PCIe rules.",
      {
          string_param("name", "unnamed", "short name of the topology", "user [user-choice]"),
          string_param("doc", "", "one line describing the machine", "user [user-choice]"),
          integer_choice_param("mps", "B", 256, {128, 256, 512, 1024, 2048, 4096},
                               "Max Payload Size used on every link",
                               "common platform setting (PCIe table of the calibration notes) "
                               "[calibration-notes]"),
          integer_choice_param("mrrs", "B", 512, {128, 256, 512, 1024, 2048, 4096},
                               "Max Read Request Size of every requester",
                               "common platform setting (PCIe table of the calibration notes) "
                               "[calibration-notes]"),
          integer_choice_param("rcb", "B", 64, {64, 128}, "Read Completion Boundary",
                               "PCIe base spec r5.0 2.3.1.1; 64 B on most root ports "
                               "[pcie-base-5.0]"),
          integer_param("read_tags", "", 256, 1, 1024,
                        "read requests one requester may have outstanding (tags); a read waits "
                        "for free tags",
                        "PCIe Base Spec r5.0 §2.2.6.2: 8-bit tags (256) with Extended Tag Field "
                        "Enable, the common default; 10-bit tags allow 768 on Gen4+ devices "
                        "[pcie-base-5.0]"),
          enum_param("completion_size", "mps", {"mps", "rcb"},
                     "how completers split read completions: as large as MPS allows (split only "
                     "at RCB-aligned addresses), or one completion per RCB (64 or 128 B), as "
                     "pcie-bench observed on several older chipsets",
                     "PCIe Base Spec r5.0 §2.3.1.1; pcie-bench (Neugebauer et al., SIGCOMM 2018, "
                     "§3; model option rcb_chunks). mps: pinned H2D copies on the lent H100 (Gen5 "
                     "x16) reach 55.1 GB/s, above the 47.5 / 53.9 GB/s the link would carry in 64 "
                     "/ 128 B completions "
                     "(configs/measurements/pcie-copy-bandwidth-h100-2026-11-26.json) "
                     "[pcie-base-5.0] [pcie-bench] [pcie-model]"),
          bool_param("ecrc", false,
                     "end-to-end CRC: every TLP carries a 4 B TLP digest (ECRC), on every link "
                     "it crosses",
                     "PCIe Base Spec r5.0 §2.7: ECRC is optional, enabled per function (AER ECRC "
                     "Generation Enable); Linux leaves it as firmware set it (pci=ecrc= defaults "
                     "to bios), which is off on common servers [pcie-base-5.0] [linux]"),
          enum_param("p2p_across_root_complexes", "through_cpu", {"through_cpu", "refuse"},
                     "peer-to-peer traffic between devices under different root complexes: "
                     "carried through the CPU fabric (and the inter-socket link), or refused by "
                     "the platform",
                     "seed 003, P2P truth table (different root complexes: must traverse the CPU); "
                     "seed 000 (NUMA crossing adds 50-100 ns) [seed-000] [seed-003]"),
          enum_param("dllp_intervals", "symbol_times", {"symbol_times", "pcie_bench"},
                     "how the spec's ACK / UpdateFC intervals are charged: symbol_times reads "
                     "them as the spec defines them (one byte per lane per symbol time); "
                     "pcie_bench charges them as bytes, as pcie-bench's model does (overstates "
                     "DLLP cost on wide links, e.g. 9.8 % instead of ~0.9 % on x16)",
                     "PCIe Base Spec r5.0 Tables 3-7..3-9 and §4.2; pcie-bench model/pcie.py. "
                     "symbol_times puts a Gen5 x16 4 KB H2D copy at 57.9 GB/s and D2H at 57.1 vs "
                     "55.1 / 55.3 GB/s measured on the lent H200 (2026-11); pcie_bench gives 52.7 "
                     "/ 51.9 [pcie-base-5.0] [pcie-bench] [pcie-model]"),
      }};
  return spec;
}

}  // namespace gpunvme::pcie
