// Declared parameters of the host side: CPU sockets and their memory.
#pragma once

#include "sim/params/param_spec.h"

namespace gpunvme::host {

const ComponentSpec& cpu_spec();
const ComponentSpec& host_memory_spec();

}  // namespace gpunvme::host
