// Small multi-tenant scenarios and the ConfigError resolving one raises, for
// the configuration tests of tenants and of their isolation.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"
#include "sim/system/run/tenants.h"

namespace gpunvme::test {

// A short GPU read workload on `gpu` against ssd0.
inline nlohmann::json tenant_reads(const std::string& gpu) {
  return {{"kind", "microbenchmark"}, {"threads", 64}, {"ios", 100}, {"gpu", gpu},
          {"ssds", {"ssd0"}},         {"queues", 4}};
}

// Tenants a and b reading through gpu0 and gpu1.
inline nlohmann::json two_tenants() {
  return {{"name", "t"},
          {"tenants",
           {{{"name", "a"}, {"scenario", tenant_reads("gpu0")}},
            {{"name", "b"}, {"scenario", tenant_reads("gpu1")}}}}};
}

// The error resolving `doc` on configs/topologies/TOPOLOGY.json raises.
inline ConfigError tenants_error_of(const nlohmann::json& doc,
                                    const std::string& topology = "two-gpus-shared-ssds") {
  RawConfig raw =
      load_raw_config(std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + topology + ".json",
                      default_scenario_file());
  raw.scenario = doc;
  raw.scenario_file = "tenants.json";
  try {
    resolve_config(raw);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << doc.dump();
  return ConfigError("", "", "", "");
}

}  // namespace gpunvme::test
