// Validates a JSON object against a component's declared parameters and fills
// in defaults. Errors name the file, the JSON path, the value and what is
// allowed, and suggest the nearest known name for a misspelt key.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/kernel/params/param_spec.h"

namespace gpunvme {

struct ResolveContext {
  std::string file;  // where the object came from, for messages
  std::string path;  // JSON path of the object itself
};

// Checks one value against its declaration; throws ConfigError.
void check_param_value(const ParamSpec& spec, const nlohmann::json& value,
                       const ResolveContext& where);

// Resolves `given` against `spec`. Keys in `structural_keys` are allowed in
// `given` but are not parameters (e.g. "id", "kind", "profile"); they are
// skipped here and checked by the caller. `base` supplies values that sit
// between the declared defaults and `given` (a device profile).
ParamValues resolve_params(const ComponentSpec& spec, const nlohmann::json& given,
                           const ResolveContext& where,
                           const std::vector<std::string>& structural_keys = {},
                           const nlohmann::json& base = nlohmann::json::object());

}  // namespace gpunvme
