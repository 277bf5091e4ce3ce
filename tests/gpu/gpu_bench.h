// The GPU model's tests run warps on the library's one-GPU machine
// (sim/system/run/gpu_bench.h).
#pragma once

#include "sim/system/run/gpu_bench.h"

namespace gpunvme::testing {
using gpunvme::GpuBench;
}  // namespace gpunvme::testing
