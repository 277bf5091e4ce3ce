// Every component kind the simulator knows, with its declared parameters.
#pragma once

#include "sim/system/config/run_config.h"

namespace gpunvme {

const Catalog& catalog();

}  // namespace gpunvme
