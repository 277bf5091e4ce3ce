#include "sim/system/workload/scenario_spec.h"

#include "sim/core/algo/strategy_names.h"

namespace gpunvme {

ScenarioParams ScenarioParams::from(const ParamValues& values) {
  ScenarioParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "sim/system/workload/scenario_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& scenario_spec() {
  static const ComponentSpec spec{
      "scenario",
      "A workload run on a topology: what the GPU threads read or write, and how they reach "
      "the SSDs.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "sim/system/workload/scenario_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

const std::vector<std::string>& field_kinds(const std::string& field) {
  static const std::vector<std::string> every;
  const ParamSpec* spec = scenario_spec().find(field);
  return spec == nullptr ? every : spec->kinds;
}

}  // namespace gpunvme
