// Declared fields of a scenario file: the workload, in fio's vocabulary where
// it fits, and the GPU-side strategy that issues it.
#pragma once

#include "sim/params/param_spec.h"

namespace gpunvme {

const ComponentSpec& scenario_spec();

}  // namespace gpunvme
