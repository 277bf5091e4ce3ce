#include "sim/system/run/invariants.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace gpunvme::invariants {

namespace {

using nlohmann::json;

std::string child(const std::string& path, const std::string& key) { return path + "." + key; }
std::string element(const std::string& path, std::size_t i) {
  return fmt::format("{}[{}]", path, i);
}

// Reads the unsigned integer at `key` of `parent`, or records that it is
// missing or not a count.
bool count_at(const json& parent, const std::string& parent_path, const std::string& key,
              const std::string& invariant, std::vector<Violation>& out, std::uint64_t& value) {
  const std::string path = child(parent_path, key);
  if (!parent.is_object() || !parent.contains(key)) {
    out.push_back({invariant, path, "missing"});
    return false;
  }
  const json& v = parent.at(key);
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
    out.push_back({invariant, path, "expected a count, found " + v.dump()});
    return false;
  }
  value = v.get<std::uint64_t>();
  return true;
}

bool number_at(const json& parent, const std::string& parent_path, const std::string& key,
               const std::string& invariant, std::vector<Violation>& out, double& value) {
  const std::string path = child(parent_path, key);
  if (!parent.is_object() || !parent.contains(key)) {
    out.push_back({invariant, path, "missing"});
    return false;
  }
  const json& v = parent.at(key);
  if (!v.is_number()) {
    out.push_back({invariant, path, "expected a number, found " + v.dump()});
    return false;
  }
  value = v.get<double>();
  return true;
}

const json& member(const json& parent, const std::string& key) {
  static const json null;
  if (!parent.is_object()) return null;
  auto it = parent.find(key);
  return it == parent.end() ? null : *it;
}

// submitted = ios + errors: every I/O the workload submitted either completed
// or failed, none twice, none lost; and a microbenchmark whose length is its
// I/O count (not time-based, no runtime_us) submitted exactly that count.
void check_io_accounting(const json& result, std::vector<Violation>& out) {
  const char* name = "io_accounting";
  const json& summary = member(result, "summary");
  std::uint64_t ios = 0, errors = 0, submitted = 0;
  const bool have_ios = count_at(summary, "$.summary", "ios", name, out, ios);
  const bool have_errors = count_at(summary, "$.summary", "errors", name, out, errors);
  const bool have_submitted = count_at(summary, "$.summary", "submitted", name, out, submitted);
  if (!have_ios || !have_errors || !have_submitted) return;
  // A fast run that run-length control ended at its stop: the I/Os in
  // flight there were issued and never completed, and say so.
  const json& run_length = member(summary, "run_length");
  std::uint64_t in_flight = 0;
  if (member(run_length, "drain") == "not simulated" &&
      !count_at(run_length, "$.summary.run_length", "in_flight_at_stop", name, out, in_flight)) {
    return;
  }
  if (submitted != ios + errors + in_flight) {
    out.push_back(
        {name, "$.summary.submitted",
         in_flight == 0
             ? fmt::format("{} submitted, but {} completed + {} failed = {}", submitted, ios,
                           errors, ios + errors)
             : fmt::format("{} submitted, but {} completed + {} failed + {} in flight at the "
                           "run-length stop = {}",
                           submitted, ios, errors, in_flight, ios + errors + in_flight)});
  }
  const json& scenario = member(member(result, "config"), "scenario");
  if (member(scenario, "kind") != "microbenchmark") return;
  if (member(scenario, "time_based") != false) return;
  const json& runtime = member(scenario, "runtime_us");
  if (!runtime.is_number() || runtime.get<double>() != 0) return;
  std::uint64_t configured = 0;
  if (!count_at(scenario, "$.config.scenario", "ios", name, out, configured)) return;
  // Run-length control answers for the configured count from fewer issued.
  if (member(run_length, "applied") == true) {
    std::uint64_t requested = 0;
    if (!count_at(run_length, "$.summary.run_length", "requested_ios", name, out, requested)) {
      return;
    }
    if (configured != requested || submitted > requested) {
      out.push_back({name, "$.summary.run_length.requested_ios",
                     fmt::format("the scenario asks for {} I/Os, run-length control answers for "
                                 "{} from {} submitted",
                                 configured, requested, submitted)});
    }
    return;
  }
  if (configured != submitted) {
    out.push_back({name, "$.summary.submitted",
                   fmt::format("the scenario asks for {} I/Os, but {} were submitted", configured,
                               submitted)});
  }
}

// NVMe forbids a host to reuse a CID still outstanding on the same SQ.
void check_cid_conflicts(const json& result, std::vector<Violation>& out) {
  const char* name = "cid_conflicts";
  const json& ssds = member(result, "ssds");
  if (!ssds.is_object() || ssds.empty()) {
    out.push_back({name, "$.ssds", "missing or empty"});
    return;
  }
  for (auto it = ssds.begin(); it != ssds.end(); ++it) {
    const std::string path = child("$.ssds", it.key());
    std::uint64_t conflicts = 0;
    if (!count_at(it.value(), path, "cid_conflicts", name, out, conflicts)) continue;
    if (conflicts != 0) {
      out.push_back({name, child(path, "cid_conflicts"),
                     fmt::format("{} commands fetched with a CID already outstanding on their SQ",
                                 conflicts)});
    }
  }
}

// The SSDs' data DMA moves each I/O's data once: reads into their buffers,
// writes out of them. A failed read moves nothing; a failed write may have
// moved its data before the media failed it.
void check_bytes_delivered_once(const json& result, std::vector<Violation>& out) {
  const char* name = "bytes_delivered_once";
  const json& summary = member(result, "summary");
  std::uint64_t bytes = 0, errors = 0;
  if (!count_at(summary, "$.summary", "bytes", name, out, bytes)) return;
  if (!count_at(summary, "$.summary", "errors", name, out, errors)) return;
  const json& engines = member(member(result, "pcie"), "dma_engines");
  if (!engines.is_array() && !engines.is_object()) {
    out.push_back({name, "$.pcie.dma_engines", "missing"});
    return;
  }
  std::uint64_t moved = 0;
  std::size_t ssd_engines = 0;
  std::size_t i = 0;
  for (auto it = engines.begin(); it != engines.end(); ++it, ++i) {
    const std::string path = engines.is_array() ? element("$.pcie.dma_engines", i)
                                                : child("$.pcie.dma_engines", it.key());
    if (member(it.value(), "kind") != "ssd_data_dma") continue;
    ++ssd_engines;
    std::uint64_t engine_bytes = 0;
    if (!count_at(it.value(), path, "bytes", name, out, engine_bytes)) return;
    moved += engine_bytes;
  }
  if (ssd_engines == 0) {
    out.push_back({name, "$.pcie.dma_engines", "no ssd_data_dma engine"});
    return;
  }
  // At a run-length stop, an in-flight read may have moved its data and not
  // completed: up to its share of bytes more.
  std::uint64_t in_flight = 0, ios = 0;
  const json& run_length = member(summary, "run_length");
  if (member(run_length, "drain") == "not simulated" &&
      (!count_at(run_length, "$.summary.run_length", "in_flight_at_stop", name, out, in_flight) ||
       !count_at(summary, "$.summary", "ios", name, out, ios))) {
    return;
  }
  if (in_flight != 0 && errors == 0) {
    const std::uint64_t in_flight_bytes = ios == 0 ? 0 : bytes / ios * in_flight;
    if (moved < bytes || moved > bytes + in_flight_bytes) {
      out.push_back({name, "$.pcie.dma_engines",
                     fmt::format("the SSDs' data DMA moved {} B, the workload's completed I/Os "
                                 "{} B and its {} I/Os in flight at the run-length stop at most "
                                 "{} B",
                                 moved, bytes, in_flight, in_flight_bytes)});
    }
    return;
  }
  if (errors == 0) {
    if (moved != bytes) {
      out.push_back(
          {name, "$.pcie.dma_engines",
           fmt::format("the SSDs' data DMA moved {} B, the workload's I/Os {} B", moved, bytes)});
    }
    return;
  }
  std::uint64_t written = 0;
  const json& ssds = member(result, "ssds");
  if (ssds.is_object()) {
    for (auto it = ssds.begin(); it != ssds.end(); ++it) {
      std::uint64_t w = 0;
      if (count_at(it.value(), child("$.ssds", it.key()), "bytes_written", name, out, w)) {
        written += w;
      }
    }
  }
  if (moved > bytes + written) {
    out.push_back({name, "$.pcie.dma_engines",
                   fmt::format("the SSDs' data DMA moved {} B, more than the workload's {} B "
                               "plus the {} B written ({} I/Os failed)",
                               moved, bytes, written, errors)});
  }
}

// Every I/O that completed, failed ones included, was in flight for its
// latency (latency_ns counts failed I/Os: the requester waited for the
// error), so over the I/O time L = (ios + errors) / io_time x mean latency.
void check_littles_law(const json& result, std::vector<Violation>& out) {
  const char* name = "littles_law";
  const json& summary = member(result, "summary");
  double in_flight = 0, io_time_ns = 0, mean_ns = 0;
  std::uint64_t ios = 0, errors = 0;
  if (!number_at(summary, "$.summary", "mean_in_flight", name, out, in_flight)) return;
  if (!number_at(summary, "$.summary", "io_time_ns", name, out, io_time_ns)) return;
  if (!count_at(summary, "$.summary", "ios", name, out, ios)) return;
  if (!count_at(summary, "$.summary", "errors", name, out, errors)) return;
  // Where run-length control applied, summary.latency_ns is the steady
  // state's; the segment's own latencies are stages.end_to_end.
  const bool steady = member(member(summary, "run_length"), "applied") == true;
  const json& latency =
      steady ? member(member(result, "stages"), "end_to_end") : member(summary, "latency_ns");
  if (!number_at(latency, steady ? "$.stages.end_to_end" : "$.summary.latency_ns", "mean", name,
                 out, mean_ns)) {
    return;
  }
  const double completed = static_cast<double>(ios + errors);
  const double expected = io_time_ns > 0 ? completed * mean_ns / io_time_ns : 0.0;
  const double allowed =
      kLittleRelative * std::max(std::fabs(in_flight), std::fabs(expected)) + kLittleAbsolute;
  if (!(std::fabs(in_flight - expected) <= allowed)) {
    out.push_back({name, "$.summary.mean_in_flight",
                   fmt::format("{} in flight on average, but (ios + errors) / io_time x mean "
                               "latency = {} / {} ns x {} ns = {} (allowed difference {})",
                               in_flight, completed, io_time_ns, mean_ns, expected, allowed)});
  }
}

bool names_a_fraction(const std::string& key) {
  return key.find("utilization") != std::string::npos || key.find("hit_rate") != std::string::npos;
}

// Walks every value, calling `visit(value, path, inside_fraction)`.
void walk(const json& value, const std::string& path, bool fraction,
          const std::function<void(const json&, const std::string&, bool)>& visit) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      walk(it.value(), child(path, it.key()), fraction || names_a_fraction(it.key()), visit);
    }
  } else if (value.is_array()) {
    for (std::size_t i = 0; i < value.size(); ++i) {
      walk(value[i], element(path, i), fraction, visit);
    }
  } else {
    visit(value, path, fraction);
  }
}

// The resolved configuration is input, not figures: there a negative value
// may be a sentinel (bfs_source -1 = the first vertex with edges), so it is
// held to being finite only.
void check_numbers(const json& result, std::vector<Violation>& out) {
  walk(result, "$", false, [&](const json& v, const std::string& path, bool fraction) {
    if (!v.is_number()) return;
    // Run-length control's lag-1 autocorrelations are correlations, in [-1, 1].
    if (path.rfind("$.summary.run_length.lag1.", 0) == 0) {
      const double d = v.get<double>();
      if (!(d >= -1.0 && d <= 1.0)) {
        out.push_back({"finite_non_negative", path, fmt::format("{} is not in [-1, 1]", d)});
      }
      return;
    }
    const bool figure = path.rfind("$.config.", 0) != 0;
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!std::isfinite(d) || (figure && d < 0)) {
        out.push_back({"finite_non_negative", path, fmt::format("{}", d)});
        return;
      }
    } else if (figure && v.is_number_integer() && !v.is_number_unsigned() &&
               v.get<std::int64_t>() < 0) {
      out.push_back({"finite_non_negative", path, v.dump()});
      return;
    }
    if (fraction) {
      const double d = v.get<double>();
      if (d > 1.0) {
        out.push_back({"utilization_range", path, fmt::format("{} is not in [0, 1]", d)});
      }
    }
  });
}

}  // namespace

std::string Violation::to_string() const { return invariant + ": " + path + ": " + detail; }

std::vector<Violation> check(const nlohmann::json& result) {
  std::vector<Violation> out;
  check_io_accounting(result, out);
  check_cid_conflicts(result, out);
  check_bytes_delivered_once(result, out);
  check_littles_law(result, out);
  check_numbers(result, out);
  return out;
}

std::string describe(const std::vector<Violation>& violations) {
  std::string text;
  for (const Violation& v : violations) text += v.to_string() + "\n";
  return text;
}

}  // namespace gpunvme::invariants
