// Declared parameters of the PCIe fabric's parts: links, switches, root
// complexes, and the platform-wide transaction rules.
#pragma once

#include "sim/params/param_spec.h"

namespace gpunvme::pcie {

const ComponentSpec& link_spec();
const ComponentSpec& switch_spec();
const ComponentSpec& root_complex_spec();
// Topology-level fields: name, doc and the platform's MPS / MRRS / RCB.
const ComponentSpec& topology_spec();
// Receive-buffer credits an endpoint (GPU, SSD) advertises, declared like a switch port's:
// posted_/non_posted_/completion_ header and data credits, 0 = infinite.
std::vector<ParamSpec> endpoint_credit_params(const std::string& owner);

}  // namespace gpunvme::pcie
