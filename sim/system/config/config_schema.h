// A JSON Schema (draft 2020-12) of topology and scenario files, generated
// from the parameter declarations, for editors to complete and check
// configuration files (`gpunvme describe --json-schema`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "sim/system/config/run_config.h"

namespace gpunvme {

// `root` is "topology" or "scenario" for a schema of that file alone, or ""
// for either file (a document with "nodes" is a topology). Every component
// is under $defs by its kind; objects the loader closes (topologies, nodes,
// links, scenarios) refuse other keys. The schema checks each field's type,
// range, choices and, in scenarios, the kinds a field belongs to; it does not
// check what needs the whole configuration (links to existing nodes, the tree
// shape, sizes against memory): `gpunvme check` does.
// With `tenants` and `tenant` (the fields of a multi-tenant scenario file and
// of each of its tenants), a scenario file may also be a multi-tenant one: a
// document with "tenants", each tenant's workload a scenario.
nlohmann::ordered_json config_json_schema(const Catalog& catalog, const std::string& root,
                                          const ComponentSpec* tenants = nullptr,
                                          const ComponentSpec* tenant = nullptr);

}  // namespace gpunvme
