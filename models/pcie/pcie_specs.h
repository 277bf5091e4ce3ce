// Declared parameters of the PCIe fabric's parts: links, switches, root
// complexes, and the platform-wide transaction rules. The tables are the
// *_params.def files beside this header.
#pragma once

#include <string>
#include <vector>

#include "models/pcie/link_accounting.h"
#include "sim/kernel/params/param_table.h"

namespace gpunvme::pcie {

GPUNVME_ENUM(LinkType, pcie, inter_socket)
// A switch's egress arbitration among ingress ports.
GPUNVME_ENUM(PortArbitration, fcfs, round_robin)
// What a switch does with traffic between two of its downstream ports.
GPUNVME_ENUM(PeerRouting, route, upstream, block)
// What a root complex does with peer-to-peer traffic.
GPUNVME_ENUM(PeerToPeer, forward, same_root_complex, block)
GPUNVME_ENUM(IommuMode, off, passthrough, translate)
// How a completer splits read completions.
GPUNVME_ENUM(CompletionSize, mps, rcb)
GPUNVME_ENUM(P2pAcrossRootComplexes, through_cpu, refuse)

// The credit types of a PCIe port's receive buffers, one entry each:
// X(member, unit, largest, completion, doc). Each is the integer parameter
// `<member>_credits`; its default and source are those of the port's owner
// (switch, root complex, endpoint), `completion` saying which of the owner's
// two sources applies.
#define GPUNVME_PORT_CREDITS(X)                                                  \
  X(posted_header, "TLPs", 4096, false, "PH: posted request headers")            \
  X(posted_data, "16 B", 65536, false, "PD: posted request data, in 16 B units") \
  X(non_posted_header, "TLPs", 4096, false,                                      \
    "NPH: non-posted request headers (one per read request)")                    \
  X(non_posted_data, "16 B", 65536, false,                                       \
    "NPD: non-posted request data (memory reads carry none)")                    \
  X(completion_header, "TLPs", 4096, true, "CplH: completion headers")           \
  X(completion_data, "16 B", 65536, true, "CplD: completion data, in 16 B units")

// Receive-buffer credits a port advertises (0 = infinite), as declared by
// credit parameters (switch, root complex, endpoint); members in the order of
// GPUNVME_PORT_CREDITS.
struct PortCredits {
#define GPUNVME_PORT_CREDIT_MEMBER(member, ...) std::int64_t member = 0;
  GPUNVME_PORT_CREDITS(GPUNVME_PORT_CREDIT_MEMBER)
#undef GPUNVME_PORT_CREDIT_MEMBER
  static PortCredits from(const ParamValues& values);
};

// A link's parameters, typed; times in picoseconds.
struct LinkParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/link_params.def"
#undef GPUNVME_PARAM
  static LinkParams from(const ParamValues& values);
};

struct SwitchParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/switch_params.def"
#undef GPUNVME_PARAM
  PortCredits credits;
  static SwitchParams from(const ParamValues& values);
};

struct RootComplexParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/root_complex_params.def"
#undef GPUNVME_PARAM
  PortCredits credits;
  static RootComplexParams from(const ParamValues& values);
};

// A host_memory node's parameters, typed: declared here because the fabric
// serves the DMA into host memory (host::host_memory_spec() is built from the
// same table).
struct HostMemoryParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/host_memory_params.def"
#undef GPUNVME_PARAM
  static HostMemoryParams from(const ParamValues& values);
};

// What a peer's access to a GPU's BAR costs: part of the gpu node's
// parameters (gpu::gpu_spec()), declared here because the fabric charges it.
struct BarTargetParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/bar_target_params.def"
#undef GPUNVME_PARAM
  static BarTargetParams from(const ParamValues& values);
};

struct TopologyParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/pcie/topology_params.def"
#undef GPUNVME_PARAM
  static TopologyParams from(const ParamValues& values);
};

const ComponentSpec& link_spec();
const ComponentSpec& switch_spec();
const ComponentSpec& root_complex_spec();
// Topology-level fields: name, doc and the platform's MPS / MRRS / RCB.
const ComponentSpec& topology_spec();
// Receive-buffer credits an endpoint (GPU, SSD) advertises, declared like a switch port's:
// posted_/non_posted_/completion_ header and data credits, 0 = infinite.
std::vector<ParamSpec> endpoint_credit_params(const std::string& owner);
// The host_memory and BAR-target tables as ParamSpecs, for the specs of the
// kinds they belong to.
std::vector<ParamSpec> host_memory_params();
std::vector<ParamSpec> bar_target_params();

}  // namespace gpunvme::pcie
