// A controller-only run as gpunvme-hw --controller-only writes it, reduced to
// what calibration reads: every batch of `depth` commands taking `batch_ns`,
// `gap_ns` between back-to-back batches, on machine instance `instance` with
// `target_threads` target threads. The calibration tests build their
// synthetic calibration sets from it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gpunvme::test {

inline nlohmann::json synthetic_controller_run(const std::string& instance, unsigned target_threads,
                                               unsigned depth, double batch_ns, double gap_ns) {
  return {{"strategy", "controller_only"},
          {"depth", depth},
          {"target_threads", target_threads},
          {"iops", 1e6},
          {"instance", instance},
          {"target",
           {{"batch_fixed_ns", batch_ns},
            {"batch_per_command_ns", 0.0},
            {"batch_commands", {{"mean", double(depth)}}},
            {"service_ns", {{"mean", batch_ns}}},
            {"batch_gap_ns", {{"count", 10}, {"mean", gap_ns}}}}}};
}

}  // namespace gpunvme::test
