#include "models/pcie/pcie_specs.h"

namespace gpunvme::pcie {

namespace {

// Receive-buffer credits of one port, declared the same way for switches, root complexes and
// endpoints: `defaults` the owner's. 0 advertises infinite credit (PCIe Base Spec r5.0 §2.6.1:
// a zero credit field means "infinite").
std::vector<ParamSpec> credit_params(const std::string& owner, const PortCredits& defaults,
                                     const std::string& source,
                                     const std::string& completion_source) {
  const std::string each =
      " advertised by each " + owner + " port for what it receives (0 = infinite)";
  return {
#define GPUNVME_PORT_CREDIT_SPEC(member, unit, largest, completion, doc)           \
  integer_param(#member "_credits", unit, defaults.member, 0, largest, doc + each, \
                completion ? completion_source : source),
      GPUNVME_PORT_CREDITS(GPUNVME_PORT_CREDIT_SPEC)
#undef GPUNVME_PORT_CREDIT_SPEC
  };
}

std::vector<ParamSpec> join(std::vector<ParamSpec> a, const std::vector<ParamSpec>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Header and non-posted credits are those of Intel's R-Tile hard IP, a published Gen5 x16 port
// that serves as endpoint, root port or switch port: 784 PH / 784 NPH / 392 NPD. Its 1456 PD
// (23 KB) is too few for the measured H100 copies: with it in the root port and the switch, the
// model's device-to-host copies of 16-256 MiB fall 2.3-2.6 % below the 55.0-55.2 GB/s measured
// (pcie-copy-bandwidth-h100-2026-11-26.json), 0.9-1.6 % with it in the root port alone, because
// a port's data buffer also holds the backlog behind the slower root complex. The switch needs
// at least 3,072 PD for the measured rate; 4,096 PD (64 KB) equals R-Tile's completion data
// buffer. No switch vendor publishes its buffers.
const char* kPortCreditSource =
    "PH / NPH / NPD: Intel R-Tile Gen5 x16 port, 784 / 784 / 392 (683501, RX flow control "
    "interface); PD 4,096 (64 KB, R-Tile's completion data buffer, 790711): a lower bound from "
    "the H100 device-to-host copies measured at 55.0-55.2 GB/s for 16-256 MiB, which this model "
    "carries only with PD >= 3,072 in the switch and above R-Tile's 1,456 in the root port "
    "(configs/measurements/pcie-copy-bandwidth-h100-2026-11-26.json, "
    "tests/pcie/achieved_bandwidth_test.cpp) [intel-rtile-683501] [intel-axist-790711]";
const char* kSwitchCompletionCreditSource =
    "Intel R-Tile port 0 completion buffer: 1,024 headers, 2,048 x 256-bit data entries (64 KB = "
    "4,096 credits of 16 B) (790711, R-Tile completion buffer size); switches advertise finite "
    "completion credits (only endpoints and root complexes must advertise infinite ones, r5.0 "
    "§2.6.1) [intel-axist-790711] [pcie-base-5.0]";

}  // namespace

PortCredits PortCredits::from(const ParamValues& values) {
  PortCredits out;
#define GPUNVME_PORT_CREDIT_READ(member, ...) out.member = values.integer(#member "_credits");
  GPUNVME_PORT_CREDITS(GPUNVME_PORT_CREDIT_READ)
#undef GPUNVME_PORT_CREDIT_READ
  return out;
}

LinkParams LinkParams::from(const ParamValues& values) {
  LinkParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/link_params.def"
#undef GPUNVME_PARAM
  return out;
}

SwitchParams SwitchParams::from(const ParamValues& values) {
  SwitchParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/switch_params.def"
#undef GPUNVME_PARAM
  out.credits = PortCredits::from(values);
  return out;
}

RootComplexParams RootComplexParams::from(const ParamValues& values) {
  RootComplexParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/root_complex_params.def"
#undef GPUNVME_PARAM
  out.credits = PortCredits::from(values);
  return out;
}

HostMemoryParams HostMemoryParams::from(const ParamValues& values) {
  HostMemoryParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/host_memory_params.def"
#undef GPUNVME_PARAM
  return out;
}

BarTargetParams BarTargetParams::from(const ParamValues& values) {
  BarTargetParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/bar_target_params.def"
#undef GPUNVME_PARAM
  return out;
}

std::vector<ParamSpec> host_memory_params() {
  return {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/host_memory_params.def"
#undef GPUNVME_PARAM
  };
}

std::vector<ParamSpec> bar_target_params() {
  return {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/bar_target_params.def"
#undef GPUNVME_PARAM
  };
}

TopologyParams TopologyParams::from(const ParamValues& values) {
  TopologyParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/pcie/topology_params.def"
#undef GPUNVME_PARAM
  return out;
}

std::vector<ParamSpec> endpoint_credit_params(const std::string& owner) {
  // Credits flow per TLP, so an endpoint that sinks into its memory at line rate (a GPU's HBM,
  // an SSD's buffer) needs only the bandwidth-delay product of its link: ~63 GB/s x ~70 ns
  // (TLP, 30 ns flight, 30 ns UpdateFC back) = ~4.4 KB at Gen5 x16. No GPU or SSD vendor
  // publishes its buffers; the defaults are a published Gen5 x16 endpoint's.
  return credit_params(
      owner, PortCredits{784, 1456, 784, 392, 0, 0},
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
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/link_params.def"
#undef GPUNVME_PARAM
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
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/switch_params.def"
#undef GPUNVME_PARAM
          },
          credit_params("switch", PortCredits{784, 4096, 784, 392, 1024, 4096}, kPortCreditSource,
                        kSwitchCompletionCreditSource))};
  return spec;
}

const ComponentSpec& root_complex_spec() {
  static const ComponentSpec spec{
      "root_complex",
      "A CPU's PCIe root complex: root ports below, the socket's fabric and memory above, and "
      "the IOMMU that translates what devices below it ask for.",
      join(
          {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/root_complex_params.def"
#undef GPUNVME_PARAM
          },
          credit_params("root", PortCredits{784, 4096, 784, 392, 0, 0}, kPortCreditSource,
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
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/pcie/topology_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

}  // namespace gpunvme::pcie
