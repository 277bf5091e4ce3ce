// Properties every result of a run must have, whatever the configuration: a
// result that breaks one is wrong however plausible its figures look. The
// soak test and the simulation fuzzer run every result through these checks.
//
//   io_accounting        summary.submitted = summary.ios + summary.errors (+ the
//                        I/Os in flight at a fast run's run-length stop,
//                        summary.run_length.in_flight_at_stop), and a microbenchmark
//                        that is neither time-based nor capped by runtime_us submitted
//                        its configured ios (or, where run-length control applied,
//                        answers for them: run_length.requested_ios)
//   cid_conflicts        no SSD fetched a command whose CID was outstanding on its SQ
//                        (ssds.<id>.cid_conflicts = 0)
//   bytes_delivered_once the SSDs' data DMA engines moved exactly summary.bytes (the
//                        workload's bytes) when no I/O failed, and never more than those
//                        plus the bytes of writes (a failed write may have moved its data);
//                        at a run-length stop, at most the in-flight I/Os' bytes more
//   littles_law          summary.mean_in_flight = (ios + errors) / io_time_ns x
//                        latency_ns.mean (failed I/Os were in flight too; where run-length
//                        control applied, stages.end_to_end.mean, the segment's), within
//                        kLittleRelative of the larger side plus kLittleAbsolute
//   utilization_range    every figure under a key naming a utilization or hit rate lies
//                        in [0, 1]
//   finite_non_negative  every number anywhere in the result is finite, and >= 0 outside
//                        the resolved configuration (whose -1 may be a sentinel); the
//                        lag-1 autocorrelations of summary.run_length.lag1 lie in [-1, 1]
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpunvme::invariants {

struct Violation {
  std::string invariant;  // one of the names above
  std::string path;       // where in the result, as a JSON path ("$.ssds.ssd0.cid_conflicts")
  std::string detail;     // the figures that disagree

  std::string to_string() const;
};

// Little's law holds exactly over an I/O window that starts and ends with
// nothing in flight; what separates the two sides in a result is only the
// rounding of the printed figures: iops to 0.001/s, the mean latency to
// 0.001 ns and mean_in_flight to 1e-6. A relative 1e-4 covers that rounding
// for latencies above 10 ns and still catches one I/O counted in ios but not
// timed (or timed and not counted) in runs of up to 5,000 I/Os.
inline constexpr double kLittleRelative = 1e-4;
inline constexpr double kLittleAbsolute = 1e-5;

// Every invariant the result breaks; empty when it keeps them all. The
// configuration is read from result["config"] (the resolved configuration
// every result carries). A field an invariant needs and the result lacks is
// itself a violation, so that a check cannot pass by finding nothing to check.
std::vector<Violation> check(const nlohmann::json& result);

// The violations, one per line ("" when none).
std::string describe(const std::vector<Violation>& violations);

}  // namespace gpunvme::invariants
