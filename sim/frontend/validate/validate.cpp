#include "sim/frontend/validate/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/kernel/build_info.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/config/run_config.h"
#include "sim/system/run/run.h"

namespace gpunvme::validate {

namespace {

constexpr double kTiny = 1e-9;

const nlohmann::json& field(const nlohmann::json& doc, const std::string& file,
                            const std::string& path, const std::string& key) {
  if (!doc.is_object() || !doc.contains(key)) {
    throw ConfigError(file, path + "." + key, "", "missing field of the hardware results");
  }
  return doc.at(key);
}

double number(const nlohmann::json& doc, const std::string& file, const std::string& path,
              const std::string& key) {
  const nlohmann::json& v = field(doc, file, path, key);
  if (!v.is_number()) throw ConfigError(file, path + "." + key, v.dump(), "expected a number");
  return v.get<double>();
}

// A field older results may lack: `fallback` when absent, else a number.
double optional_number(const nlohmann::json& doc, const std::string& file, const std::string& path,
                       const std::string& key, double fallback) {
  return doc.is_object() && doc.contains(key) ? number(doc, file, path, key) : fallback;
}

// The warps' own code costs what the compiler makes of it. The GPU profiles'
// lane_loop_iteration_ns is a pass of the algorithms' loops as compiled into
// a kernel of one strategy's code, as an application builds the strategy it
// uses and as gpunvme-hw's per-role kernels (compute_kernel<S>, the polling
// kernel) run it; io_agents' agent warps pay agent_lane_loop_iteration_ns,
// measured in gpunvme-hw's per-role agent kernel itself (agent_pass.cu). gpunvme-hw's combined
// io_kernel (every role and strategy in one kernel, the strategy read at run time; 255 registers
// and spills) runs the same code slower, and so does compute_kernel<runtime>
// (255 registers and spills). A run of either (harness_kernel "combined", or
// none: the runs made before the per-role kernels) is simulated at the pass
// cost fitted on the op profiles of such runs at one warp: 101.5 ns, the
// figure of configs/measurements/lane-loop-fit-h100-2026-11-24.json (pooled
// over five strategies' 96.5-107.6 ns), which the profiles' per-strategy
// figure derives from.
constexpr double kCombinedKernelLaneLoopNs = 101.5;

// Whether a strategy run's warps ran code compiled for its strategy alone.
bool compiled_for_its_strategy(const nlohmann::json& run) {
  if (!run.is_object() || !run.contains("harness_kernel")) return false;
  const nlohmann::json& kernel = run.at("harness_kernel");
  if (!kernel.is_string() || kernel.get<std::string>() != "per-role") return false;
  if (run.contains("kernels") && run.at("kernels").is_array()) {
    for (const nlohmann::json& k : run.at("kernels")) {
      if (k.is_string() && k.get<std::string>() == "compute_kernel<runtime>") return false;
    }
  }
  return true;
}

// The settings that simulate a run's own code as its kernel ran it; none
// where the profile's figures apply. The combined kernel's fit covers every
// role, io_agents' agent warps included (their own fitted 97.0 ns was pooled
// into it).
std::vector<std::string> own_code_settings(const nlohmann::json& run) {
  if (compiled_for_its_strategy(run)) return {};
  return {fmt::format("topology.nodes.gpu0.lane_loop_iteration_ns={}", kCombinedKernelLaneLoopNs),
          fmt::format("topology.nodes.gpu0.agent_lane_loop_iteration_ns={}",
                      kCombinedKernelLaneLoopNs)};
}

// The measured figure of a metric in one hardware case.
double measured_metric(const std::string& name, const nlohmann::json& c, const std::string& file,
                       const std::string& path) {
  const nlohmann::json& st = field(c, file, path, "stages");
  auto stage = [&](const std::string& s, const std::string& key) {
    return number(field(st, file, path + ".stages", s), file, path + ".stages." + s, key);
  };
  if (name == "iops") return number(c, file, path, "iops");
  if (name == "end_to_end.p50") return stage("end_to_end", "p50");
  if (name == "end_to_end.mean") return stage("end_to_end", "mean");
  if (name == "completion.mean") return stage("completion", "mean");
  if (name == "submission.mean") {
    return stage("cid_allocation", "mean") + stage("sqe_construction", "mean") +
           stage("sq_tail_sync", "mean") + stage("doorbell", "mean");
  }
  if (name == "reap.mean") return stage("cq_head_sync", "mean") + stage("delivery", "mean");
  throw std::logic_error("unknown metric " + name);
}

// The simulated figure of a metric (the simulator's result document).
double simulated_metric(const std::string& name, const nlohmann::json& r) {
  const nlohmann::json& st = r.at("stages");
  auto stage = [&](const std::string& s, const std::string& key) {
    return st.contains(s) && st.at(s).contains(key) ? st.at(s).at(key).get<double>() : 0.0;
  };
  if (name == "iops") return r.at("summary").at("iops").get<double>();
  if (name == "end_to_end.p50") return stage("end_to_end", "p50");
  if (name == "end_to_end.mean") return stage("end_to_end", "mean");
  if (name == "completion.mean") {
    return stage("completion_wait", "mean") + stage("completion_polling", "mean");
  }
  if (name == "submission.mean") {
    return stage("cid_allocation", "mean") + stage("sqe_construction", "mean") +
           stage("sq_tail_sync", "mean") + stage("doorbell", "mean");
  }
  if (name == "reap.mean") return stage("cq_head_sync", "mean") + stage("delivery", "mean");
  throw std::logic_error("unknown metric " + name);
}

std::string gpu_profile_for(const std::string& device) {
  if (device.find("H200") != std::string::npos) return "h200-sxm";
  if (device.find("H100") != std::string::npos) return "h100-sxm";
  if (device.find("A100") != std::string::npos) return "a100-sxm";
  return "";
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  // Two points always lie on a line (r = +-1): r says something from three.
  if (n < kMinCasesForCorrelation) return std::nan("");
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= static_cast<double>(n);
  my /= static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx < kTiny || syy < kTiny ? std::nan("") : sxy / std::sqrt(sxx * syy);
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// The warps' time per I/O by kind of platform call, measured (an op-profile
// run, gpunvme-hw --trace 3: compute and service warps added) beside
// simulated (the run's gpus.*.op_profile), and the calls per I/O of each
// kind where the run counted them. The hardware's "other", the warps'
// own code between calls, is the simulator's lane_loop: both are reported
// as own_code.
nlohmann::json op_profile_rows(const nlohmann::json& measured, const nlohmann::json& result,
                               const std::string& file, const std::string& path) {
  const double ios = result.at("summary").at("ios").get<double>();
  const nlohmann::json& gpus = result.at("gpus");
  nlohmann::json rows = nlohmann::json::object();
  for (const char* kind : {"atomic", "load", "peek", "store", "fence_gpu", "fence_system",
                           "mmio_store", "for_lanes", "ballot", "wait", "nanosleep", "own_code"}) {
    const std::string hw_kind = std::string(kind) == "own_code" ? "other" : kind;
    const std::string sim_kind = std::string(kind) == "own_code" ? "lane_loop" : kind;
    double hw = 0;
    // Calls per I/O where the run counted them (gpunvme-hw's calls_per_io):
    // the same time per I/O can be fewer dearer calls or more cheaper ones.
    double hw_calls = 0;
    bool counted = false;
    for (const auto& [role, r] : measured.items()) {
      const std::string at = path + ".op_profile." + role;
      hw += optional_number(field(r, file, at, "ns_per_io"), file, at + ".ns_per_io", hw_kind, 0.0);
      if (r.contains("calls_per_io") && r.at("calls_per_io").contains(hw_kind)) {
        counted = true;
        hw_calls += number(r.at("calls_per_io"), file, at + ".calls_per_io", hw_kind);
      }
    }
    double sim = 0, sim_calls = 0;
    for (const auto& [id, g] : gpus.items()) {
      if (!g.contains("op_profile")) continue;
      sim += g.at("op_profile").at(sim_kind).at("ns").get<double>();
      sim_calls += g.at("op_profile").at(sim_kind).value("calls", 0.0);
    }
    rows[kind] = {{"measured", hw}, {"simulated", ios > 0 ? sim / ios : 0.0}};
    if (counted) {
      rows[kind]["calls_per_io"] = {{"measured", hw_calls},
                                    {"simulated", ios > 0 ? sim_calls / ios : 0.0}};
    }
  }
  return rows;
}

// How fast each serving thread of a controller ran: its busy time over the
// time its batches would take at the run's fitted line (`fixed_ns` per
// batch, `per_command_ns` per command), over the same ratio for all threads
// (> 1: slower than the mean). Dividing by the line keeps a thread that
// served bigger batches from looking slow. A thread that served no batch
// counts 1; empty where no thread served one.
struct ThreadWork {
  double busy_ns = 0;
  double batches = 0;
  double commands = 0;
};

std::vector<double> relative_speed(const std::vector<ThreadWork>& threads, double fixed_ns,
                                   double per_command_ns) {
  auto nominal = [&](const ThreadWork& t) {
    return t.batches * fixed_ns + t.commands * per_command_ns;
  };
  double all_busy = 0, all_nominal = 0;
  for (const ThreadWork& t : threads) {
    all_busy += t.busy_ns;
    all_nominal += nominal(t);
  }
  if (all_busy <= 0 || all_nominal <= 0) return {};
  std::vector<double> ratio;
  for (const ThreadWork& t : threads) {
    ratio.push_back(
        t.batches > 0 && nominal(t) > 0 ? t.busy_ns / nominal(t) / (all_busy / all_nominal) : 1.0);
  }
  return ratio;
}

// The hardware run's threads (`target.threads`, absent in older results).
std::vector<ThreadWork> measured_threads(const nlohmann::json& target, const std::string& file,
                                         const std::string& path) {
  if (!target.contains("threads")) return {};
  const nlohmann::json& threads = target.at("threads");
  if (!threads.is_array()) {
    throw ConfigError(file, path + ".threads", threads.dump(), "expected a list of threads");
  }
  std::vector<ThreadWork> work;
  for (std::size_t t = 0; t < threads.size(); ++t) {
    const std::string at = fmt::format("{}.threads[{}]", path, t);
    ThreadWork w{number(threads[t], file, at, "busy_ns"), number(threads[t], file, at, "batches"),
                 number(threads[t], file, at, "completed")};
    if (w.busy_ns < 0 || w.batches < 0 || w.commands < 0) {
      throw ConfigError(file, at, threads[t].dump(), "busy_ns, batches and completed must be >= 0");
    }
    work.push_back(w);
  }
  return work;
}

// A field of the topology's ssd0 node as given (null when absent).
nlohmann::json ssd_param(const nlohmann::json& topology, const std::string& name) {
  for (const nlohmann::json& node : topology.at("nodes")) {
    if (node.value("id", "") == "ssd0") return node.value(name, nlohmann::json(nullptr));
  }
  return nullptr;
}

// The controller model's processors in a run (ssds.ssd0.batch_processors).
std::vector<ThreadWork> simulated_processors(const nlohmann::json& result) {
  const nlohmann::json& ssd = result.at("ssds").at("ssd0");
  std::vector<ThreadWork> work;
  if (!ssd.contains("batch_processors")) return work;
  for (const nlohmann::json& p : ssd.at("batch_processors")) {
    work.push_back({p.at("busy_ns").get<double>(), p.at("batches").get<double>(),
                    p.at("commands").get<double>()});
  }
  return work;
}

}  // namespace

Quartiles quartiles(std::vector<double> values) {
  Quartiles q;
  if (values.empty()) return q;
  std::sort(values.begin(), values.end());
  auto at = [&](double p) {
    const double x = p * static_cast<double>(values.size() - 1);
    const auto i = static_cast<std::size_t>(x);
    const double f = x - static_cast<double>(i);
    return i + 1 < values.size() ? values[i] * (1 - f) + values[i + 1] * f : values[i];
  };
  q.q1 = at(0.25);
  q.median = at(0.5);
  q.q3 = at(0.75);
  return q;
}

OrderCheck order_check(const std::vector<OrderCase>& cases) {
  OrderCheck check;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    for (std::size_t j = i + 1; j < cases.size(); ++j) {
      const OrderCase& a = cases[i];
      const OrderCase& b = cases[j];
      if (a.warps != b.warps || a.strategy == b.strategy) continue;
      const bool a_above = a.measured.q1 > b.measured.q3;
      const bool b_above = b.measured.q1 > a.measured.q3;
      if (!a_above && !b_above) continue;  // the IQRs overlap: no measured order
      ++check.pairs;
      const OrderCase& hi = a_above ? a : b;
      const OrderCase& lo = a_above ? b : a;
      if (hi.simulated > lo.simulated) {
        ++check.agreed;
      } else {
        check.disagreements.push_back(
            fmt::format("{} warps: {} > {} measured, {:.0f} <= {:.0f} "
                        "simulated",
                        a.warps, hi.strategy, lo.strategy, hi.simulated, lo.simulated));
      }
    }
  }
  return check;
}

namespace {

double median_of(std::vector<double> v) { return quartiles(std::move(v)).median; }

// The calibration set: controller-only runs (gpunvme-hw --controller-only) of
// the software target with `threads` serving threads, as in the strategy
// runs. A run keeps every batch at one size (its depth), so the target's own
// line of batch time against size has no slope within a run; the line is
// fitted across the runs instead: each run's mean batch time (its
// batch_fixed_ns + batch_per_command_ns x mean batch size) against its mean
// batch size, by least squares. Its intercept is the model's per-batch
// overhead, its slope the per-command cost; the gap between back-to-back
// batches is the median of the runs' mean gaps. Nothing here has seen a
// strategy.
//
// Runs with fewer of the target's processors at work than the strategy
// runs' full count (fewer target threads, or fewer active queues than
// serving threads or warps) give the batch time's scale by the processors
// busy (batch_time_busy_cores, batch_time_scale): per such count k and per
// depth also measured at full count, the runs' median batch time over the
// full-count runs' at that depth (the full-count runs of the same machine
// instances where there are some), at the busy count k (BusyCount::at_work:
// the k processors' batches overlap, so all k hold one while any does) or
// 1 + (k - 1) x the runs' duty cycle (BusyCount::duty_weighted: batch time
// over batch time plus gap, the share of time each other processor would
// hold a batch if the batches were independent); the full count's own point
// is scale 1, where the line is fitted.
struct Calibration {
  double batch_overhead_ns = 0;    // the line's intercept
  double command_overhead_ns = 0;  // its slope
  double batch_gap_ns = 0;         // between back-to-back batches
  std::vector<double> busy_cores;  // batch_time_busy_cores (empty: no scale)
  std::vector<double> busy_scale;  // batch_time_scale
  std::string busy_not_used;       // runs left out of the busy scale, and why
  // The footprint term (batch_time_footprint_ns_per_mib at each busy count,
  // batch_time_footprint_mib; empty: none), and the controller-only
  // footprint runs' time per command per MiB by processors at work, from
  // which it is interpolated (linear in the count, flat beyond the ends).
  std::vector<double> footprint_ns_per_mib;
  double footprint_mib = 0;
  std::map<std::uint32_t, double> footprint_slope_by_work;
  // The doorbell-to-completion hand-off beyond the batch (doorbell_pickup_ns;
  // 0: none), set by calibrate_pickup once the rest is calibrated.
  double doorbell_pickup_ns = 0;
  nlohmann::json report;

  // Time per command per MiB at `at_work` processors (0 without slopes).
  double footprint_slope(double at_work) const {
    if (footprint_slope_by_work.empty()) return 0.0;
    auto hi = footprint_slope_by_work.lower_bound(static_cast<std::uint32_t>(std::ceil(at_work)));
    if (hi == footprint_slope_by_work.begin()) return hi->second;
    if (hi == footprint_slope_by_work.end()) return std::prev(hi)->second;
    const auto lo = std::prev(hi);
    const double t = (at_work - lo->first) / double(hi->first - lo->first);
    return lo->second + t * (hi->second - lo->second);
  }
};

// The buffers a controller-only run's copies write, in MiB: queues x
// queue_entries buffers of the block size rounded up to 4 KiB (gpunvme-hw
// gives each queue entry a buffer of its own).
double run_footprint_mib(const nlohmann::json& run, std::uint32_t default_queues) {
  const double stride = std::ceil(run.value("bs", 4096.0) / 4096.0) * 4096.0;
  return run.value("queues", double(default_queues)) * run.value("queue_entries", 0.0) * stride /
         double(1u << 20);
}

// A run's mean batch size: target.batch_commands.mean as gpunvme-hw writes
// it, or target.batch_commands_mean where a measurement file keeps only that.
double mean_batch_commands(const nlohmann::json& target) {
  if (target.contains("batch_commands_mean")) return target.at("batch_commands_mean").get<double>();
  return target.at("batch_commands").value("mean", 0.0);
}

// A run's batch time at its mean batch size (the target's own line).
double run_batch_time(const nlohmann::json& run) {
  const nlohmann::json& t = run.at("target");
  return t.at("batch_fixed_ns").get<double>() +
         t.value("batch_per_command_ns", 0.0) * mean_batch_commands(t);
}

// The batch time's scale by the processors busy, from the controller-only
// runs grouped by (target threads, queues, depth, whether a concurrency
// study's run); see Calibration. Sets `cal`'s points and returns their
// report entries.
using RunGroups = std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, bool>,
                           std::vector<const nlohmann::json*>>;
nlohmann::json fit_busy_scale(const RunGroups& groups, std::uint32_t threads, std::uint32_t queues,
                              BusyCount rule, Calibration& cal) {
  const std::uint32_t full = std::min(threads, queues);
  std::map<std::uint32_t, std::vector<const nlohmann::json*>> full_by_depth;
  std::map<std::uint32_t,
           std::vector<std::pair<std::uint32_t, const std::vector<const nlohmann::json*>*>>>
      partial;  // processors at work -> (depth, runs)
  std::size_t fewer_threads = 0;
  for (const auto& [key, group] : groups) {
    const auto [t, q, depth, study] = key;
    (void)study;
    if (t == threads && q == queues) {
      full_by_depth[depth].insert(full_by_depth[depth].end(), group.begin(), group.end());
    } else if (rule == BusyCount::at_work && t < threads) {
      // The strategy runs start every serving thread, and an idle one polls
      // its queues: a run with fewer threads started is not the strategy
      // runs' condition at any busy count (its points come from runs with
      // every thread started and fewer queues active).
      fewer_threads += group.size();
    } else if (std::min(t, q) < full) {
      partial[std::min(t, q)].emplace_back(depth, &group);
    }
  }
  auto instance_of = [](const nlohmann::json* r) { return r->value("instance", std::string()); };
  auto duty = [](double batch, double gap) {
    return batch + gap > 0 ? batch / (batch + gap) : 1.0;
  };
  auto busy_count = [&](std::uint32_t at_work, double batch, double gap) {
    return rule == BusyCount::at_work ? double(at_work) : 1.0 + (at_work - 1.0) * duty(batch, gap);
  };
  struct Point {
    double busy = 0, scale = 1, q1 = 1, q3 = 1;
    std::uint32_t at_work = 0;
    std::size_t runs = 0;
    nlohmann::json depths = nlohmann::json::array();
  };
  std::vector<Point> points;
  std::set<std::uint32_t> depths_used;
  std::vector<double> full_busy;
  for (const auto& [k, by_depth] : partial) {
    Point point;
    point.at_work = k;
    std::vector<double> ratios, busy;
    for (const auto& [depth, group] : by_depth) {
      const auto reference = full_by_depth.find(depth);
      if (reference == full_by_depth.end()) continue;
      std::set<std::string> instances;
      std::vector<double> time, gap, size;
      for (const nlohmann::json* r : *group) {
        instances.insert(instance_of(r));
        time.push_back(run_batch_time(*r));
        gap.push_back(r->at("target").at("batch_gap_ns").value("mean", 0.0));
        size.push_back(mean_batch_commands(r->at("target")));
      }
      std::vector<double> ref_time, ref_size;
      for (bool same_instances : {true, false}) {
        for (const nlohmann::json* r : reference->second) {
          if (same_instances && instances.count(instance_of(r)) == 0) continue;
          ref_time.push_back(run_batch_time(*r));
          ref_size.push_back(mean_batch_commands(r->at("target")));
        }
        if (!ref_time.empty()) break;
      }
      // With the footprint term, the k runs' batch moved to the full count's
      // footprint along the footprint runs' slope at k: the k sweep's
      // buffers grow with k, and the term charges the footprint apart.
      const double footprint_k = run_footprint_mib(*group->front(), k);
      const double footprint_shift =
          cal.footprint_mib > 0
              ? median_of(size) * cal.footprint_slope(k) * (cal.footprint_mib - footprint_k)
              : 0.0;
      const double t_k = median_of(time) + footprint_shift;
      // At the at-work count the full count's batch is taken at the k runs'
      // batch size, along the line's slope: a run whose batches come out
      // smaller than its depth (the host-thread target with one queue
      // active) is compared with batches of its own size.
      const double size_k = median_of(size);
      const double size_full = median_of(ref_size);
      const double t_full =
          median_of(ref_time) +
          (rule == BusyCount::at_work ? cal.command_overhead_ns * (size_k - size_full) : 0.0);
      if (t_full <= 0) continue;
      const double ratio = t_k / t_full;
      const double busy_k = busy_count(k, t_k, median_of(gap));
      ratios.push_back(ratio);
      busy.push_back(busy_k);
      depths_used.insert(depth);
      point.runs += group->size();
      point.depths.push_back({{"depth", depth},
                              {"runs", group->size()},
                              {"full_count_runs", ref_time.size()},
                              {"batch_time_ns_median", t_k},
                              {"full_count_batch_time_ns_median", t_full},
                              {"batch_gap_ns_median", median_of(gap)},
                              {"scale", ratio},
                              {"busy", busy_k}});
      if (cal.footprint_mib > 0) {
        point.depths.back()["footprint_mib"] = footprint_k;
        point.depths.back()["measured_batch_time_ns_median"] = median_of(time);
        point.depths.back()["footprint_shift_ns"] = footprint_shift;
      }
      if (rule == BusyCount::at_work) {
        point.depths.back()["batch_commands_median"] = size_k;
        point.depths.back()["full_count_batch_commands_median"] = size_full;
      }
    }
    if (ratios.empty()) continue;
    const Quartiles r = quartiles(ratios);
    point.busy = median_of(busy);
    point.scale = r.median;
    point.q1 = r.q1;
    point.q3 = r.q3;
    points.push_back(std::move(point));
  }
  if (fewer_threads > 0) {
    cal.busy_not_used = fmt::format(
        "{} controller-only runs with fewer than the strategy runs' {} target threads: the "
        "strategy runs start all {} and the idle ones poll, so the points come from runs with "
        "all {} started and fewer queues active",
        fewer_threads, threads, threads, threads);
  }
  if (points.empty()) return nullptr;
  // The full count's busy count: its runs' duty cycle at each depth the
  // points used, median over those depths.
  for (std::uint32_t depth : depths_used) {
    std::vector<double> time, gap;
    for (const nlohmann::json* r : full_by_depth.at(depth)) {
      time.push_back(run_batch_time(*r));
      gap.push_back(r->at("target").at("batch_gap_ns").value("mean", 0.0));
    }
    full_busy.push_back(busy_count(full, median_of(time), median_of(gap)));
  }
  Point reference;
  reference.at_work = full;
  reference.busy = median_of(full_busy);
  points.push_back(reference);
  std::sort(points.begin(), points.end(),
            [](const Point& a, const Point& b) { return a.busy < b.busy; });
  nlohmann::json rows = nlohmann::json::array();
  for (const Point& p : points) {
    // Counts must rise: a point no busier than the one before is reported,
    // not used.
    const bool used = cal.busy_cores.empty() || p.busy > cal.busy_cores.back();
    if (used) {
      cal.busy_cores.push_back(p.busy);
      cal.busy_scale.push_back(p.scale);
      if (cal.footprint_mib > 0) cal.footprint_ns_per_mib.push_back(cal.footprint_slope(p.at_work));
    }
    nlohmann::json row = {
        {"processors_at_work", p.at_work}, {"busy", p.busy}, {"scale", p.scale}, {"used", used}};
    if (p.at_work == full) {
      row["fitted_to"] = "the full count: the line's own runs, scale 1 by definition";
    } else {
      row["q1"] = p.q1;
      row["q3"] = p.q3;
      row["runs"] = p.runs;
      row["depths"] = p.depths;
    }
    rows.push_back(row);
  }
  return rows;
}

// Least-squares line y = a + b x; {a, b} (b = 0 when x does not vary).
std::pair<double, double> least_squares(const std::vector<double>& x,
                                        const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    mx += x[i] / n;
    my += y[i] / n;
  }
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double b = sxx > kTiny ? sxy / sxx : 0.0;
  return {my - b * mx, b};
}

// A run's machine instance ("" when untagged).
std::string instance_tag(const nlohmann::json& run, const std::string& file,
                         const std::string& path) {
  if (!run.is_object() || !run.contains("instance")) return "";
  const nlohmann::json& tag = run.at("instance");
  if (!tag.is_string()) {
    throw ConfigError(file, path + ".instance", tag.dump(),
                      "expected a string (the machine instance the run was measured on)");
  }
  return tag.get<std::string>();
}

// `only_instances`: only those machine instances' runs (one for per-instance
// calibration, a selection for --instances); empty: every run, pooled over
// the instances.
//
// A concurrency study's run (one with a `variant`, as in
// hw-gpu-target-concurrency-*.json) gives the busy scale only, not the line:
// the line stays on the calibration set's own runs. Such a run counts only
// where it belongs to the sweep of the busy count (variant k_sweep), ran the
// strategy runs' target as they did (their target threads,
// their `target_sms` where they name one, their namespace image, the
// calibration set's queue sizes, feeders that neither pause between rounds
// nor sleep between polls) and not as the first depth of its process
// (`depth_order`); the others are listed as not used, with why.
Calibration calibrate(const nlohmann::json& runs, const std::string& file, std::uint32_t threads,
                      std::uint32_t queues, std::uint32_t target_sms, double namespace_bytes,
                      bool busy_scale, BusyCount busy_count, bool footprint_scale,
                      const std::vector<std::string>& only_instances = {}) {
  std::vector<double> size, time, gap;
  RunGroups groups;
  // With footprint_scale: the footprint runs' batch times and sizes by
  // (processors at work, depth, buffers in MiB), and the line's runs'
  // buffers.
  std::map<std::tuple<std::uint32_t, std::uint32_t, double>,
           std::pair<std::vector<double>, std::vector<double>>>
      footprint_runs;
  std::set<double> line_footprints;
  std::set<double> line_ios;  // the line's runs' I/O counts (how much of the image they read)
  for (const nlohmann::json& c : runs) {
    if (c.is_object() && !c.contains("variant") && c.contains("ios") && c.at("ios").is_number()) {
      line_ios.insert(c.at("ios").get<double>());
    }
  }
  std::map<std::string, std::size_t> study_not_used;
  std::set<std::string> instances;
  bool any_with_threads = false;
  // The calibration set's own queue sizes: a study run with another (whose
  // buffers take another memory footprint) measures something else.
  std::set<double> calibration_entries;
  for (const nlohmann::json& c : runs) {
    if (c.is_object() && !c.contains("variant") && c.contains("queue_entries") &&
        c.at("queue_entries").is_number()) {
      calibration_entries.insert(c.at("queue_entries").get<double>());
    }
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& c = runs[i];
    const std::string path = fmt::format("$.controller_only[{}]", i);
    if (!only_instances.empty() && std::find(only_instances.begin(), only_instances.end(),
                                             instance_tag(c, file, path)) == only_instances.end()) {
      continue;
    }
    const auto t = static_cast<std::uint32_t>(number(c, file, path, "target_threads"));
    const auto depth = static_cast<std::uint32_t>(number(c, file, path, "depth"));
    // The calibration set is the controller alone, its copies merged as a
    // warp's buffers allow: a run under GPU polls or with scattered buffers
    // measures something else (gpunvme-hw --host-pollers, --scatter-buffers).
    if (c.value("host_pollers", 0) != 0) {
      throw ConfigError(file, path + ".host_pollers", c.at("host_pollers").dump(),
                        "a controller-only run under GPU polls is not a calibration run: leave "
                        "its file out of --measured (expected 0)");
    }
    if (c.value("scatter_buffers", false)) {
      throw ConfigError(file, path + ".scatter_buffers", "true",
                        "a controller-only run with scattered buffers is not a calibration run: "
                        "leave its file out of --measured (expected false)");
    }
    const std::string tp = path + ".target";
    const nlohmann::json& target = field(c, file, path, "target");
    number(c, file, path, "iops");
    const double fixed = number(target, file, tp, "batch_fixed_ns");
    // A concurrency study's file keeps batch_per_command_ns only where it is
    // not 0, and 0 means batch_fixed_ns holds the whole batch: the
    // GPU-resident target times a batch whole, and a host-target run whose
    // batches all had one size has no slope to fit (the h100-s k = 32 runs).
    const double slope = c.contains("variant") && !target.contains("batch_per_command_ns")
                             ? 0.0
                             : number(target, file, tp, "batch_per_command_ns");
    const double mean_size = target.contains("batch_commands_mean")
                                 ? number(target, file, tp, "batch_commands_mean")
                                 : number(field(target, file, tp, "batch_commands"), file,
                                          tp + ".batch_commands", "mean");
    number(field(target, file, tp, "service_ns"), file, tp + ".service_ns", "mean");
    // Runs with another queue count than the strategy runs' are reported,
    // not fitted: how many queues a serving thread passes over changes its
    // gap between batches (the GPU target's 528-queue runs).
    const auto run_queues = static_cast<std::uint32_t>(c.value("queues", queues));
    if (c.contains("variant")) {
      const std::string variant =
          c.at("variant").is_string() ? c.at("variant").get<std::string>() : c.at("variant").dump();
      const bool same_sms = !c.contains("target_sms") ||
                            (target_sms > 0 && number(c, file, path, "target_sms") == target_sms);
      const bool paused = c.value("feed_gap_ns", 0.0) > 0;
      const bool sleeping = c.value("feed_poll_sleep_ns", 0.0) > 0;
      // The copies' memory footprint moves the batch time too: a study run
      // with another namespace image or other queue sizes than the
      // calibration set's is not a point of this scale.
      const bool other_image =
          namespace_bytes > 0 && c.contains("namespace_mib") &&
          number(c, file, path, "namespace_mib") * double(1ull << 20) != namespace_bytes;
      const bool other_entries =
          !calibration_entries.empty() && c.contains("queue_entries") &&
          calibration_entries.count(number(c, file, path, "queue_entries")) == 0;
      // The first depth a process runs is slower at small k (up to 4 %,
      // cause not found): only later positions, as the calibration set's
      // runs of every depth but the first are. That was seen on the
      // GPU-resident target's sweep; the host-thread target's sweep runs one
      // depth per process at every k, its full count's runs included, so its
      // ratios compare runs in the same position.
      const std::string order = c.value("depth_order", std::string());
      const bool one_depth_sweep = busy_count == BusyCount::at_work && variant == "host_target";
      const bool first_in_process = !one_depth_sweep && !order.empty() &&
                                    order.substr(0, order.find(',')) == std::to_string(depth);
      // Only the sweep of the busy count itself: the study's other variants
      // change something besides it (placement, think time, polling, memory
      // footprint, I/Os per case).
      // Under the at-work count the host-thread target's own sweep of active
      // queues (variant host_target: every thread started, k queues active)
      // is a sweep of the busy count too.
      const bool sweep =
          variant == "k_sweep" || (busy_count == BusyCount::at_work && variant == "host_target");
      // The footprint runs vary the buffers written (queue_entries) and the
      // busy count (queues) at the strategy runs' image and placement.
      // Only at the line's I/O counts: a run of fewer I/Os reads less of the
      // image and takes shorter batches (x0.986 at 8,192 against 65,536).
      const bool line_io_count = line_ios.empty() || !c.contains("ios") ||
                                 line_ios.count(number(c, file, path, "ios")) > 0;
      if (footprint_scale && variant == "footprint" && t == threads && same_sms && !paused &&
          !sleeping && !other_image && !first_in_process && line_io_count) {
        number(c, file, path, "queue_entries");
        auto& [times, sizes] =
            footprint_runs[{std::min(t, run_queues), depth, run_footprint_mib(c, queues)}];
        times.push_back(run_batch_time(c));
        sizes.push_back(mean_batch_commands(target));
        continue;
      }
      if (!sweep || t != threads || !same_sms || paused || sleeping || other_image ||
          other_entries || first_in_process) {
        std::string what, why;
        if (footprint_scale && variant == "footprint") {
          what = "not a point of the footprint term";
          why =
              "the first depth of its process, or another I/O count, image, placement, "
              "feeder or thread count than the line's runs";
        } else if (!sweep) {
          what = "not the k sweep";
          why = "it varies something besides the busy count";
        } else if (t != threads) {
          what = fmt::format("{} target threads", t);
          why = fmt::format("not the strategy runs' {}", threads);
        } else if (!same_sms) {
          what = "target_sms " + c.at("target_sms").dump();
          why = "not the strategy runs' placement";
        } else if (paused) {
          what = "feeders pause between rounds";
          why = "a serving warp idles longer than in the calibration";
        } else if (sleeping) {
          what = "feeders sleep between CQ polls";
          why = "not the calibration's polling load";
        } else if (other_image) {
          what = "namespace_mib " + c.at("namespace_mib").dump();
          why = "not the strategy runs' namespace image";
        } else if (other_entries) {
          what = "queue_entries " + c.at("queue_entries").dump();
          why = "not the calibration set's queue size";
        } else {
          what = "the first depth of its process";
          why = "runs slower at small k than later depths";
        }
        ++study_not_used[fmt::format("{} ({}): {}", variant, what, why)];
        continue;
      }
      number(field(target, file, tp, "batch_gap_ns"), file, tp + ".batch_gap_ns", "mean");
      // With the footprint term its point moves along the footprint slope
      // from the buffers it wrote: a run that does not name them is refused,
      // not read as writing none.
      if (footprint_scale) number(c, file, path, "queue_entries");
      groups[{t, run_queues, depth, true}].push_back(&c);
      continue;
    }
    groups[{t, run_queues, depth, false}].push_back(&c);
    if (t == threads) any_with_threads = true;
    if (t != threads || run_queues != queues) continue;
    line_footprints.insert(run_footprint_mib(c, queues));
    size.push_back(mean_size);
    time.push_back(fixed + slope * mean_size);
    const nlohmann::json& g = field(target, file, tp, "batch_gap_ns");
    if (number(g, file, tp + ".batch_gap_ns", "count") > 0) {
      gap.push_back(number(g, file, tp + ".batch_gap_ns", "mean"));
    }
    instances.insert(c.value("instance", ""));
  }
  if (size.empty()) {
    throw ConfigError(
        file, "$.controller_only",
        [&] {
          std::string joined;
          for (const std::string& i : only_instances) joined += (joined.empty() ? "" : ",") + i;
          return joined;
        }(),
        (only_instances.size() == 1 ? "machine instance " + only_instances[0] + ": "
         : !only_instances.empty()
             ? "machine instances " + nlohmann::json(only_instances).dump() + ": "
             : std::string()) +
            (any_with_threads ? fmt::format("no controller-only run with {} target threads and {} "
                                            "queues (the strategy runs' counts): nothing to "
                                            "calibrate the controller from",
                                            threads, queues)
                              : fmt::format("no controller-only run with {} target threads (the "
                                            "strategy runs' count): nothing to calibrate the "
                                            "controller from",
                                            threads)));
  }
  Calibration cal;
  const auto [intercept, slope] = least_squares(size, time);
  double residual = 0;
  for (std::size_t i = 0; i < size.size(); ++i) {
    const double r = (time[i] - intercept - slope * size[i]) / time[i];
    residual += r * r / static_cast<double>(size.size());
  }
  const Quartiles g = quartiles(gap);
  cal.batch_overhead_ns = std::max(0.0, intercept);
  cal.command_overhead_ns = std::max(0.0, slope);
  cal.batch_gap_ns = std::max(0.0, g.median);
  const std::string set = fmt::format(
      "controller-only runs with {} target threads (every depth), {} runs, instances {}", threads,
      size.size(), nlohmann::json(instances).dump());
  cal.report["parameters"] = {
      {"topology.nodes.ssd0.batch_overhead_ns",
       {{"value", cal.batch_overhead_ns},
        {"fitted_to",
         "intercept of the least-squares line of mean batch time against mean batch "
         "size over the " +
             set}}},
      {"topology.nodes.ssd0.command_overhead_ns",
       {{"value", cal.command_overhead_ns}, {"fitted_to", "slope of that line over the " + set}}},
      {"topology.nodes.ssd0.batch_gap_ns",
       {{"value", cal.batch_gap_ns},
        {"q1", g.q1},
        {"q3", g.q3},
        {"fitted_to",
         "median of the runs' mean gap between back-to-back batches "
         "(target.batch_gap_ns.mean) over the " +
             set}}},
      {"topology.nodes.ssd0.controller_cores",
       {{"value", threads}, {"fitted_to", "the strategy runs' target thread count (not fitted)"}}},
      {"topology.nodes.ssd0.processor_time_scale",
       {{"value", 1.0},
        {"fitted_to",
         "not fitted: every processor at one speed (a run's slow thread is noise of that run)"}}}};
  nlohmann::json footprint_rows = nlohmann::json::array();
  std::string footprint_none;
  if (footprint_scale) {
    // Per count at work: at the deepest depth with two or more footprints,
    // the least-squares line of the median batch time against the buffers
    // in MiB; its slope over the median batch size is the time per command
    // per MiB.
    std::map<std::uint32_t, std::uint32_t> deepest;
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> footprints_at;
    for (const auto& [key, runs_at] : footprint_runs) {
      (void)runs_at;
      ++footprints_at[{std::get<0>(key), std::get<1>(key)}];
    }
    for (const auto& [key, n] : footprints_at) {
      if (n >= 2) deepest[key.first] = std::max(deepest[key.first], key.second);
    }
    for (const auto& [work, depth] : deepest) {
      std::vector<double> mib, batch, sizes;
      nlohmann::json points = nlohmann::json::array();
      std::size_t runs_used = 0;
      for (const auto& [key, runs_at] : footprint_runs) {
        if (std::get<0>(key) != work || std::get<1>(key) != depth) continue;
        mib.push_back(std::get<2>(key));
        batch.push_back(median_of(runs_at.first));
        sizes.insert(sizes.end(), runs_at.second.begin(), runs_at.second.end());
        runs_used += runs_at.first.size();
        points.push_back({{"footprint_mib", std::get<2>(key)},
                          {"runs", runs_at.first.size()},
                          {"batch_time_ns_median", batch.back()}});
      }
      const auto [at_none, per_mib] = least_squares(mib, batch);
      const double batch_size = median_of(sizes);
      cal.footprint_slope_by_work[work] = per_mib / batch_size;
      footprint_rows.push_back({{"processors_at_work", work},
                                {"depth", depth},
                                {"runs", runs_used},
                                {"batch_commands_median", batch_size},
                                {"batch_time_ns_at_no_footprint", at_none},
                                {"batch_ns_per_mib", per_mib},
                                {"ns_per_mib_per_command", per_mib / batch_size},
                                {"points", points}});
    }
    if (line_footprints.size() > 1) {
      throw ConfigError(file, "$.controller_only", nlohmann::json(line_footprints).dump(),
                        "--footprint-scale: the line's runs write buffers of more than one "
                        "footprint (MiB, queues x queue_entries x block size); expected one, the "
                        "footprint the line and the busy scale are calibrated at");
    }
    if (cal.footprint_slope_by_work.empty()) {
      footprint_none = fmt::format(
          "not fitted: no controller-only footprint runs (variant footprint) with {} target "
          "threads at two or more footprints, at the strategy runs' namespace image and "
          "placement",
          threads);
    } else if (!busy_scale || busy_count != BusyCount::at_work) {
      footprint_none =
          "not fitted: the footprint term rides on the busy scale with the at-work count "
          "(--busy-scale --busy-count at-work), whose busy counts are the processors at work "
          "its slopes are measured at";
      cal.footprint_slope_by_work.clear();
    } else if (line_footprints.empty() || !(*line_footprints.begin() > 0)) {
      footprint_none =
          "not fitted: the line's runs name no queue_entries, so their buffers' footprint is "
          "not known";
      cal.footprint_slope_by_work.clear();
    } else {
      cal.footprint_mib = *line_footprints.begin();
    }
  }
  const nlohmann::json busy_points =
      busy_scale ? fit_busy_scale(groups, threads, queues, busy_count, cal) : nlohmann::json();
  if (cal.footprint_mib > 0 && cal.footprint_ns_per_mib.empty()) {
    // No busy point: nothing for the term to ride on.
    cal.footprint_mib = 0;
    footprint_none = "not fitted: the busy scale has no point (see batch_time_scale)";
  }
  const std::uint32_t full = std::min(threads, queues);
  if (!busy_scale) {
    // Not asked for (gpunvme validate --busy-scale): the line alone.
  } else if (busy_points.is_null()) {
    std::string none = fmt::format(
        "not fitted: no controller-only run with fewer than {} processors at work (fewer target "
        "threads, or fewer queues than threads) at a depth also measured with all {}",
        full, full);
    if (!cal.busy_not_used.empty()) none += "; not used: " + cal.busy_not_used;
    cal.report["parameters"]["topology.nodes.ssd0.batch_time_busy_cores"] = {
        {"value", nlohmann::json::array()}, {"fitted_to", none}};
    cal.report["parameters"]["topology.nodes.ssd0.batch_time_scale"] = {
        {"value", nlohmann::json::array()}, {"fitted_to", none}};
  } else if (busy_count == BusyCount::at_work) {
    cal.report["parameters"]["topology.nodes.ssd0.batch_time_busy_cores"] = {
        {"value", cal.busy_cores},
        {"busy_count", "at_work"},
        {"fitted_to",
         fmt::format(
             "per count k of processors at work below the strategy runs' {}, from "
             "controller-only runs with all {} target threads or warps started and k queues "
             "active (a concurrency study's k sweep, the GPU-resident target's k_sweep or the "
             "host-thread target's host_target): busy count k, as those runs' batches overlap "
             "(their per-command slowdown is alike at every depth while a processor's duty "
             "cycle is not); median over the depths also measured at {}; the last point is the "
             "full count's, from the line's own runs",
             full, threads, full)}};
  } else {
    cal.report["parameters"]["topology.nodes.ssd0.batch_time_busy_cores"] = {
        {"value", cal.busy_cores},
        {"fitted_to",
         fmt::format(
             "per count k of processors at work in controller-only runs (min(target_threads, "
             "queues)) below the strategy runs' {}: the mean count busy when a batch starts, "
             "1 + (k - 1) x duty, duty = the runs' median batch time / (batch time + median gap "
             "between batches) (each other processor holds a batch that share of the time); "
             "median over the depths also measured at {}; the last point is the full count's, "
             "from the line's own runs",
             full, full)}};
  }
  if (busy_scale && !busy_points.is_null()) {
    cal.report["parameters"]["topology.nodes.ssd0.batch_time_scale"] = {
        {"value", cal.busy_scale},
        {"fitted_to",
         fmt::format("per count k: the k runs' median batch time over the median batch time of "
                     "the runs with {} at work (the line's runs, of the same machine instances "
                     "where they have some) at the same depth{}, median over the depths (q1, q3 "
                     "across the depths in points); 1 at the full count; no strategy run",
                     full,
                     busy_count == BusyCount::at_work
                         ? ", the latter moved to the k runs' median batch size along the line's "
                           "slope (full_count_batch_time_ns_median)"
                         : "")},
        {"points", busy_points}};
    if (!cal.busy_not_used.empty()) {
      cal.report["parameters"]["topology.nodes.ssd0.batch_time_scale"]["not_used"] =
          cal.busy_not_used;
    }
  }
  if (footprint_scale) {
    if (cal.footprint_mib > 0) {
      cal.report["parameters"]["topology.nodes.ssd0.batch_time_footprint_ns_per_mib"] = {
          {"value", cal.footprint_ns_per_mib},
          {"fitted_to",
           "at each count of batch_time_busy_cores (processors at work): the controller-only "
           "footprint runs' (variant footprint) least-squares slope of the median batch time "
           "against the buffers written (queues x queue_entries x 4 KiB, MiB), over the median "
           "batch size, at each count they measure (deepest depth with two or more "
           "footprints); linear in the count between those counts, flat beyond; no strategy "
           "run"},
          {"points", footprint_rows}};
      cal.report["parameters"]["topology.nodes.ssd0.batch_time_footprint_mib"] = {
          {"value", cal.footprint_mib},
          {"fitted_to",
           "the buffers of the line's own runs (queues x queue_entries x 4 KiB): the footprint "
           "the line and batch_time_scale hold at; the k sweep's points moved to it along the "
           "footprint slope (footprint_shift_ns in batch_time_scale's points); a run addressing "
           "more is charged as at this footprint (nothing is measured beyond it)"}};
    } else {
      cal.report["parameters"]["topology.nodes.ssd0.batch_time_footprint_ns_per_mib"] = {
          {"value", nlohmann::json::array()}, {"fitted_to", footprint_none}};
      if (!footprint_rows.empty()) {
        cal.report["parameters"]["topology.nodes.ssd0.batch_time_footprint_ns_per_mib"]["points"] =
            footprint_rows;
      }
      cal.report["parameters"]["topology.nodes.ssd0.batch_time_footprint_mib"] = {
          {"value", 0.0}, {"fitted_to", footprint_none}};
    }
  }
  cal.report["line_rms_relative_residual_pct"] = 100.0 * std::sqrt(residual);
  cal.report["queues"] = queues;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [key, group] : groups) {
    std::vector<double> iops, service, batch, batch_time, gp;
    std::set<std::string> inst;
    for (const nlohmann::json* c : group) {
      const nlohmann::json& t = c->at("target");
      iops.push_back(c->at("iops").get<double>());
      service.push_back(t.at("service_ns").value("mean", 0.0));
      batch.push_back(mean_batch_commands(t));
      batch_time.push_back(run_batch_time(*c));
      gp.push_back(t.at("batch_gap_ns").value("mean", 0.0));
      inst.insert(c->value("instance", ""));
    }
    const Quartiles qi = quartiles(iops);
    const auto [key_threads, key_queues, key_depth, key_study] = key;
    rows.push_back({{"target_threads", key_threads},
                    {"queues", key_queues},
                    {"depth", key_depth},
                    {"runs", group.size()},
                    {"instances", inst},
                    {"iops", {{"median", qi.median}, {"q1", qi.q1}, {"q3", qi.q3}}},
                    {"service_ns_mean_median", median_of(service)},
                    {"batch_commands_mean_median", median_of(batch)},
                    {"batch_time_ns_median", median_of(batch_time)},
                    {"batch_gap_ns_median", median_of(gp)},
                    {"processors_at_work", std::min(key_threads, key_queues)},
                    {"used", !key_study && key_threads == threads && key_queues == queues}});
    if (key_study) rows.back()["concurrency_study"] = true;
  }
  cal.report["controller_only"] = rows;
  if (!study_not_used.empty()) {
    nlohmann::json skipped = nlohmann::json::array();
    for (const auto& [why, count] : study_not_used) {
      skipped.push_back({{"runs", count}, {"why", why}});
    }
    cal.report["concurrency_study_not_used"] = skipped;
  }
  cal.report["gpu"] =
      "the GPU profile's figures as committed (configs/gpu/*.json): atomic, fence and load "
      "latencies and turn_pass_ns (the own code of a lane's turn, from lane_loops_and_turns) "
      "fitted to GPU microbenchmarks (no strategy; pass --microbench to compare them with a "
      "fresh set); lane_loop_iteration_ns fitted to strategy op profiles at 1 warp of the "
      "combined kernel (101.5 ns, at which that kernel's runs are simulated) over that "
      "kernel's own-code time against a kernel of one strategy's code (agent_pass "
      "microbenchmark) for runs of per-role kernels, so it is cross-validated below where "
      "lane_loop_fit is given";
  return cal;
}

// Whether the runs' target keeps its rings in GPU memory (the GPU-resident
// target: "rings": "gpu") rather than in pinned host memory.
bool rings_in_gpu_memory(const nlohmann::json& target) {
  return target.is_object() && target.value("rings", "host") == "gpu";
}

// The queue count most of the strategy runs use (gpunvme-hw --queues; only
// per_warp_queue differs, with a queue per warp); 32 when none says.
std::uint32_t strategy_queue_count(const nlohmann::json& hw) {
  std::map<std::uint32_t, std::size_t> count;
  for (const nlohmann::json& c : hw.value("cases", nlohmann::json::array())) {
    if (c.is_object() && c.contains("queues") && c.at("queues").is_number_unsigned()) {
      ++count[c.at("queues").get<std::uint32_t>()];
    }
  }
  std::uint32_t most = 32;
  std::size_t seen = 0;
  for (const auto& [q, n] : count) {
    if (n > seen) {
      most = q;
      seen = n;
    }
  }
  return most;
}

// One predicted case: the strategy's untraced runs and their quartiles.
struct MeasuredCase {
  std::string strategy;
  std::uint32_t warps = 0;
  std::vector<const nlohmann::json*> runs;
  Quartiles iops;
  std::size_t index = 0;  // of its median run in the merged cases
};

// The IOPS of a case's runs; sets its quartiles and the run nearest the
// median, whose scenario is simulated (all runs of a case share it).
std::vector<double> summarise_runs(MeasuredCase& m) {
  std::vector<double> iops;
  for (const nlohmann::json* r : m.runs) iops.push_back(r->at("iops").get<double>());
  m.iops = quartiles(iops);
  double nearest = INFINITY;
  for (std::size_t r = 0; r < iops.size(); ++r) {
    if (std::fabs(iops[r] - m.iops.median) < nearest) {
      nearest = std::fabs(iops[r] - m.iops.median);
      m.index = r;
    }
  }
  return iops;
}

}  // namespace

namespace {

// The depth of the feeder runs the pickup is measured at: a full batch
// (sq_fetch_burst), as the strategies' rounds of 32 reads fill one.
constexpr std::uint32_t kPickupDepth = 32;

struct PickupRuns {
  std::vector<double> handoff_ns;  // round_ns_mean - service_ns.mean, per run
  std::set<std::string> instances;
};

// Controller-only runs whose feeders think between rounds (variant
// think_time, feed_gap_ns > 0): each doorbell finds its serving warp idle
// after its gap, so doorbell to last CQE seen less the batch is the
// hand-off both ways, the gap hidden. Only runs of the strategy runs'
// target (its serving warps and SMs) at a full batch, without errors.
PickupRuns pickup_runs(const nlohmann::json& runs, const std::string& file, std::uint32_t threads,
                       std::uint32_t target_sms, const std::vector<std::string>& only_instances) {
  PickupRuns found;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json& c = runs[i];
    const std::string path = fmt::format("$.controller_only[{}]", i);
    if (!c.is_object() || c.value("variant", "") != "think_time") continue;
    if (c.value("feed_gap_ns", 0.0) <= 0 || c.value("feed_gap_random", 0) != 0) continue;
    if (c.value("errors", 0) != 0) continue;
    if (number(c, file, path, "depth") != kPickupDepth) continue;
    if (c.value("target_threads", threads) != threads) continue;
    if (target_sms != 0 && c.value("target_sms", target_sms) != target_sms) continue;
    const std::string instance = instance_tag(c, file, path);
    if (!only_instances.empty() &&
        std::find(only_instances.begin(), only_instances.end(), instance) == only_instances.end()) {
      continue;
    }
    const double round = number(c, file, path, "round_ns_mean");
    const double service =
        number(field(field(c, file, path, "target"), file, path + ".target", "service_ns"), file,
               path + ".target.service_ns", "mean");
    found.handoff_ns.push_back(round - service);
    found.instances.insert(instance);
  }
  return found;
}

nlohmann::json predict(const nlohmann::json& hw, const std::string& hw_file, const Options& options,
                       const std::string& topology_file, const std::string& profile) {
  const nlohmann::json& target_doc = field(hw, hw_file, "$", "target");
  const auto threads =
      static_cast<std::uint32_t>(number(target_doc, hw_file, "$.target", "threads"));
  const double file_bytes = number(target_doc, hw_file, "$.target", "file_bytes");
  const std::string queue_memory = rings_in_gpu_memory(target_doc) ? "gpu" : "host";
  const std::uint32_t queues = strategy_queue_count(hw);
  // The target's SMs (the GPU-resident target; 0 for the host threads).
  const auto target_sms = static_cast<std::uint32_t>(
      target_doc.contains("sms") ? number(target_doc, hw_file, "$.target", "sms") : 0.0);
  const bool per_instance = options.calibration == CalibrationScope::per_instance;
  // Pooled: one calibration from every instance's controller-only runs.
  // Per instance: one per machine instance, from its own runs (below).
  std::optional<Calibration> pooled_cal;
  if (!per_instance) {
    pooled_cal = calibrate(hw.at("controller_only"), hw_file, threads, queues, target_sms,
                           file_bytes, options.busy_scale, options.busy_count,
                           options.footprint_scale, options.instances);
  }

  // The strategy cases: untraced runs only (records cost throughput).
  const nlohmann::json& cases = field(hw, hw_file, "$", "cases");
  if (!cases.is_array()) throw ConfigError(hw_file, "$.cases", "", "expected an array");
  std::map<std::pair<std::string, std::uint32_t>, MeasuredCase> measured;
  // Per-instance calibration: the same runs by (strategy, warps, instance).
  std::map<std::tuple<std::string, std::uint32_t, std::string>, MeasuredCase> measured_by_instance;
  std::map<std::pair<std::string, std::uint32_t>, std::pair<const nlohmann::json*, std::string>>
      profile_runs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& c = cases[i];
    const std::string path = fmt::format("$.cases[{}]", i);
    if (c.contains("error") || c.value("trace", true)) continue;
    if (!options.instances.empty() &&
        std::find(options.instances.begin(), options.instances.end(),
                  instance_tag(c, hw_file, path)) == options.instances.end()) {
      continue;
    }
    // An op-profile run (gpunvme-hw --trace 3) is reported beside the
    // simulator's op profile; its clock reads cost throughput, so its IOPS
    // are not predicted.
    if (c.value("stage_timing", "none") == "op_profile" && c.contains("op_profile")) {
      profile_runs[{c.value("strategy", ""), c.value("warps", 0u)}] = {&c, path};
    }
    if (c.value("stage_timing", "none") != "none") continue;
    const std::string strategy = field(c, hw_file, path, "strategy").get<std::string>();
    const auto warps = static_cast<std::uint32_t>(number(c, hw_file, path, "warps"));
    number(c, hw_file, path, "iops");
    field(c, hw_file, path, "scenario");
    // A run against a target of another size (gpunvme-hw --gpu-target-warps)
    // is not what the calibration set measured.
    if (c.contains("target_config") &&
        c.at("target_config").value("serving_warps", threads) != threads) {
      continue;
    }
    if (!options.strategies.empty() &&
        std::find(options.strategies.begin(), options.strategies.end(), strategy) ==
            options.strategies.end()) {
      continue;
    }
    if (!options.warps.empty() &&
        std::find(options.warps.begin(), options.warps.end(), warps) == options.warps.end()) {
      continue;
    }
    MeasuredCase& m = measured[{strategy, warps}];
    m.strategy = strategy;
    m.warps = warps;
    m.runs.push_back(&c);
    if (per_instance) {
      const std::string instance = instance_tag(c, hw_file, path);
      if (instance.empty()) {
        throw ConfigError(hw_file, path + ".instance", "",
                          "per-instance calibration needs every strategy run tagged with the "
                          "machine instance it was measured on (or pass --calibrate pooled)");
      }
      MeasuredCase& mi = measured_by_instance[{strategy, warps, instance}];
      mi.strategy = strategy;
      mi.warps = warps;
      mi.runs.push_back(&c);
    }
  }
  if (measured.empty()) {
    throw ConfigError(hw_file, "$.cases", "", "no untraced strategy run matches the selection");
  }
  // Per-instance calibration: each instance that has selected strategy runs
  // is calibrated from its own controller-only runs alone, by the same fit.
  std::map<std::string, Calibration> instance_cals;
  if (per_instance) {
    const nlohmann::json& controller = hw.at("controller_only");
    std::set<std::string> calibrated;
    for (std::size_t i = 0; i < controller.size(); ++i) {
      calibrated.insert(
          instance_tag(controller[i], hw_file, fmt::format("$.controller_only[{}]", i)));
    }
    for (const auto& [key, mi] : measured_by_instance) {
      const std::string& instance = std::get<2>(key);
      if (instance_cals.count(instance) != 0) continue;
      if (calibrated.count(instance) == 0) {
        throw ConfigError(hw_file, "$.controller_only", instance,
                          "machine instance " + instance +
                              " has strategy runs but no controller-only runs: nothing to "
                              "calibrate its controller from (measure them on that instance, "
                              "or pass --calibrate pooled to calibrate every instance from the "
                              "pooled runs)");
      }
      instance_cals.emplace(instance, calibrate(controller, hw_file, threads, queues, target_sms,
                                                file_bytes, options.busy_scale, options.busy_count,
                                                options.footprint_scale, {instance}));
    }
  }

  // A simulated run of `scenario` (a gpunvme-hw scenario object) against
  // the calibrated controller.
  auto simulate_scenario = [&](const nlohmann::json& scenario, const std::string& name,
                               const std::vector<std::string>& own_code, const Calibration& cal,
                               const std::vector<std::string>& extra) {
    RawConfig raw;
    raw.topology_file = topology_file;
    raw.topology = read_json_file(topology_file);
    raw.scenario_file = hw_file + " " + name;
    raw.scenario = scenario;
    raw.scenario["name"] = name;
    raw.scenario["kind"] = "microbenchmark";
    raw.scenario["path"] = "gpu_initiated";
    raw.scenario["queue_memory"] = queue_memory;
    raw.scenario["distribution"] = "uniform";
    raw.scenario["span_gib"] = file_bytes / double(1ull << 30);
    raw.seed = options.seed;
    apply_set(raw, "topology.nodes.gpu0.profile=" + profile);
    for (const std::string& own : own_code) apply_set(raw, own);
    apply_set(raw, fmt::format("topology.nodes.ssd0.controller_cores={}", threads));
    apply_set(raw,
              fmt::format("topology.nodes.ssd0.batch_overhead_ns={:.1f}", cal.batch_overhead_ns));
    apply_set(raw, fmt::format("topology.nodes.ssd0.command_overhead_ns={:.1f}",
                               cal.command_overhead_ns));
    apply_set(raw, fmt::format("topology.nodes.ssd0.batch_gap_ns={:.1f}", cal.batch_gap_ns));
    if (!cal.busy_cores.empty()) {
      apply_set(raw, "topology.nodes.ssd0.batch_time_busy_cores=" +
                         nlohmann::json(cal.busy_cores).dump());
      apply_set(raw,
                "topology.nodes.ssd0.batch_time_scale=" + nlohmann::json(cal.busy_scale).dump());
    }
    if (cal.footprint_mib > 0) {
      apply_set(raw, "topology.nodes.ssd0.batch_time_footprint_ns_per_mib=" +
                         nlohmann::json(cal.footprint_ns_per_mib).dump());
      apply_set(raw, fmt::format("topology.nodes.ssd0.batch_time_footprint_mib={}",
                                 nlohmann::json(cal.footprint_mib).dump()));
    }
    if (cal.doorbell_pickup_ns > 0) {
      apply_set(raw, fmt::format("topology.nodes.ssd0.doorbell_pickup_ns={:.1f}",
                                 cal.doorbell_pickup_ns));
    }
    for (const std::string& o : options.overrides) apply_set(raw, o);
    for (const std::string& o : extra) apply_set(raw, o);
    return run(resolve_config(raw));
  };
  auto simulate = [&](const MeasuredCase& m, const Calibration& cal,
                      const std::vector<std::string>& extra) {
    const nlohmann::json& c = *m.runs[m.index];
    return simulate_scenario(c.at("scenario"), fmt::format("hw-{}-{}w", m.strategy, m.warps),
                             own_code_settings(c), cal, extra);
  };
  // The doorbell pickup: measured on the feeders that think between rounds,
  // less what the simulator already takes for the same hand-off: the fetch
  // wait of an idle processor, read from per_warp_queue's round at one warp
  // (one warp owning its queue, 32 reads a round, as a feeder's; simulated
  // only, never compared with a strategy measurement), and the own-slot
  // detection of the landed CQEs (own_slot_detection_ns).
  auto calibrate_pickup = [&](Calibration& cal) {
    const PickupRuns runs =
        pickup_runs(hw.at("controller_only"), hw_file, threads, target_sms, options.instances);
    if (runs.handoff_ns.empty()) {
      // Not a parameter of this calibration: the topology's own value (0)
      // stands.
      cal.report["doorbell_pickup_not_calibrated"] =
          "no controller-only runs of this target with feeders that think between rounds at a "
          "full batch (variant think_time, feed_gap_ns > 0, depth " +
          std::to_string(kPickupDepth) + ")";
      return;
    }
    const Quartiles measured = quartiles(runs.handoff_ns);
    const nlohmann::json standin = {{"strategy", "per_warp_queue"},
                                    {"threads", 32},
                                    {"threads_per_block", 32},
                                    {"queues", 1},
                                    {"queue_entries", 256},
                                    {"bs", 4096},
                                    {"iodepth", 1},
                                    {"ios", 8192},
                                    {"rw", "randread"}};
    // What the simulator already takes for the same hand-off: an idle
    // processor's fetch after the doorbell arrives (the stand-in's
    // ssd_fetch_wait; the topology's links take no time) and a lane's
    // noticing its landed CQE (own_slot_detection_ns).
    cal.doorbell_pickup_ns = 0;
    const double fetch_wait = simulate_scenario(standin, "pickup-stand-in", {}, cal, {})
                                  .at("stages")
                                  .at("ssd_fetch_wait")
                                  .at("mean")
                                  .get<double>();
    const double detection = own_slot_detection_ns(profile);
    const double simulated = fetch_wait + detection;
    // To the 0.1 ns the simulated cases are set to; never below 0, which the
    // report then says.
    const bool floored = measured.median < simulated;
    cal.doorbell_pickup_ns = std::round(std::max(0.0, measured.median - simulated) * 10.0) / 10.0;
    const double fetch_wait_with = simulate_scenario(standin, "pickup-stand-in", {}, cal, {})
                                       .at("stages")
                                       .at("ssd_fetch_wait")
                                       .at("mean")
                                       .get<double>();
    cal.report["parameters"]["topology.nodes.ssd0.doorbell_pickup_ns"] = {
        {"value", cal.doorbell_pickup_ns},
        {"measured_handoff_ns",
         {{"median", measured.median}, {"q1", measured.q1}, {"q3", measured.q3}}},
        {"simulated_fetch_wait_ns", fetch_wait},
        {"simulated_own_slot_detection_ns", detection},
        {"simulated_fetch_wait_ns_with", fetch_wait_with},
        {"runs", runs.handoff_ns.size()},
        {"instances", runs.instances},
        {"fitted_to",
         "median over the controller-only runs whose feeders think between rounds (variant "
         "think_time, feed_gap_ns > 0, depth " +
             std::to_string(kPickupDepth) +
             ", the strategy runs' target) of doorbell to last CQE seen less the target's batch "
             "time (round_ns_mean - service_ns.mean), less what the simulator takes for the "
             "same without it: an idle processor's fetch wait after the doorbell (one warp "
             "owning its queue, 32 reads a round: per_warp_queue at one warp, the feeder's "
             "round, simulated only) and a warp's noticing the last of 32 CQEs that land "
             "together, each lane waiting on its own entry (simulated_own_slot_detection_ns)"}};
    if (floored) {
      cal.report["parameters"]["topology.nodes.ssd0.doorbell_pickup_ns"]["floored_at_0"] =
          fmt::format(
              "the simulator already takes {:.1f} ns for this hand-off, {:.1f} ns more "
              "than the measured median: nothing is charged, and the model's own "
              "hand-off is that much longer than the hardware's",
              simulated, simulated - measured.median);
    }
  };
  if (pooled_cal) calibrate_pickup(*pooled_cal);
  for (auto& [instance, c] : instance_cals) calibrate_pickup(c);

  nlohmann::json rows = nlohmann::json::array();
  std::vector<OrderCase> order;
  std::map<std::string, std::vector<double>> errors_by_strategy;
  std::vector<double> abs_errors, sim_all, hw_all;
  // Per-instance calibration: each instance's predictions against its own
  // runs' medians, beside the pooled view.
  std::map<std::string, std::vector<double>> instance_abs_errors;
  // The machine instances of a case's runs, each with its measured runs.
  auto instances_of_case = [&](const MeasuredCase& m) {
    std::vector<std::pair<std::string, MeasuredCase*>> found;
    for (auto& [key, mi] : measured_by_instance) {
      if (std::get<0>(key) == m.strategy && std::get<1>(key) == m.warps) {
        found.emplace_back(std::get<2>(key), &mi);
      }
    }
    return found;
  };
  for (auto& [key, m] : measured) {
    std::set<std::string> instances;
    std::set<std::uint64_t> ios;
    for (const nlohmann::json* r : m.runs) {
      instances.insert(r->value("instance", ""));
      ios.insert(r->value("ios", std::uint64_t{0}));
    }
    const std::vector<double> iops = summarise_runs(m);
    // The case's prediction. Pooled: one simulation with the one
    // calibration. Per instance: one simulation per instance with that
    // instance's calibration, each compared with that instance's runs; the
    // case's prediction is their median.
    nlohmann::json result;
    double sim = 0;
    double sim_service = 0;
    std::optional<double> sim_batch;
    nlohmann::json instance_rows = nlohmann::json::array();
    std::map<std::string, nlohmann::json> instance_results;
    auto commands_per_batch = [](const nlohmann::json& r) -> std::optional<double> {
      double batches = 0, commands = 0;
      for (const ThreadWork& core : simulated_processors(r)) {
        batches += core.batches;
        commands += core.commands;
      }
      return batches > 0 ? std::optional<double>(commands / batches) : std::nullopt;
    };
    if (!per_instance) {
      result = simulate(m, *pooled_cal, {});
      sim = result.at("summary").at("iops").get<double>();
      sim_service = result.at("stages").at("ssd_service").at("mean").get<double>();
      sim_batch = commands_per_batch(result);
    } else {
      std::vector<double> sims, services, batches, medians;
      for (const auto& [instance, mi] : instances_of_case(m)) {
        const std::vector<double> own = summarise_runs(*mi);
        nlohmann::json r = simulate(*mi, instance_cals.at(instance), {});
        const double s = r.at("summary").at("iops").get<double>();
        const double e = (s - mi->iops.median) / mi->iops.median;
        instance_abs_errors[instance].push_back(std::fabs(e));
        sims.push_back(s);
        medians.push_back(mi->iops.median);
        services.push_back(r.at("stages").at("ssd_service").at("mean").get<double>());
        if (const auto b = commands_per_batch(r)) batches.push_back(*b);
        instance_rows.push_back({{"instance", instance},
                                 {"measured_iops",
                                  {{"median", mi->iops.median},
                                   {"q1", mi->iops.q1},
                                   {"q3", mi->iops.q3},
                                   {"runs", own.size()}}},
                                 {"simulated_iops", s},
                                 {"error_pct", 100.0 * e}});
        instance_results.emplace(instance, std::move(r));
      }
      sim = median_of(sims);
      sim_service = median_of(services);
      if (!batches.empty()) sim_batch = median_of(batches);
      auto spread_pct = [&](const std::vector<double>& v) {
        return 100.0 *
               (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) /
               m.iops.median;
      };
      // How far apart the instances lie, measured (their medians) and
      // predicted (their calibrations), as a share of the pooled median.
      instance_rows = {{"by_instance", instance_rows},
                       {"measured_spread_pct", spread_pct(medians)},
                       {"simulated_spread_pct", spread_pct(sims)}};
    }
    const double err = (sim - m.iops.median) / m.iops.median;
    abs_errors.push_back(std::fabs(err));
    errors_by_strategy[m.strategy].push_back(err);
    sim_all.push_back(sim);
    hw_all.push_back(m.iops.median);
    order.push_back({m.strategy, m.warps, m.iops, sim});
    rows.push_back({{"strategy", m.strategy},
                    {"warps", m.warps},
                    {"ios", ios},
                    {"measured_iops",
                     {{"median", m.iops.median},
                      {"q1", m.iops.q1},
                      {"q3", m.iops.q3},
                      {"iqr_pct", 100.0 * (m.iops.q3 - m.iops.q1) / m.iops.median},
                      {"min", *std::min_element(iops.begin(), iops.end())},
                      {"max", *std::max_element(iops.begin(), iops.end())},
                      {"runs", iops.size()},
                      {"instances", instances}}},
                    {"simulated_iops", sim},
                    {"error_pct", 100.0 * err},
                    {"inside_measured_iqr", sim >= m.iops.q1 && sim <= m.iops.q3},
                    {"simulated_service_ns", sim_service},
                    {"measured_service_ns_median", [&] {
                       std::vector<double> s;
                       for (const nlohmann::json* r : m.runs) {
                         s.push_back(r->at("target").at("service_ns").value("mean", 0.0));
                       }
                       return median_of(s);
                     }()}});
    // The target's batch size: how many commands one fetch found. Where the
    // GPU code sets the pace, it follows from the rate the doorbells move at
    // (the batch line and gap being calibrated), so a mismatch here points
    // at the submitting side as much as at the target.
    {
      std::vector<double> s;
      for (const nlohmann::json* r : m.runs) {
        const nlohmann::json& target = r->at("target");
        if (target.contains("batch_commands") && target.at("batch_commands").is_object()) {
          s.push_back(target.at("batch_commands").value("mean", 0.0));
        }
      }
      if (!s.empty() && sim_batch) {
        rows.back()["batch_commands_mean"] = {{"measured_median", median_of(s)},
                                              {"simulated", *sim_batch}};
      }
    }
    if (per_instance) rows.back()["instances_view"] = instance_rows;
    // The op profile beside the simulation of the profiled run's instance.
    const auto profile_run = profile_runs.find(key);
    if (profile_run != profile_runs.end()) {
      const auto& [run, run_path] = profile_run->second;
      const nlohmann::json* simulated = &result;
      if (per_instance) {
        const auto own = instance_results.find(instance_tag(*run, hw_file, run_path));
        simulated = own != instance_results.end() ? &own->second : nullptr;
      }
      if (simulated != nullptr) {
        rows.back()["op_profile_ns_per_io"] =
            op_profile_rows(run->at("op_profile"), *simulated, hw_file, run_path);
      }
    }
  }

  // Leave-one-strategy-out cross-validation of the one GPU parameter fitted
  // on strategy cases (lane_loop_iteration_ns, from op profiles at 1 warp):
  // each strategy is predicted again with the median of the other
  // strategies' fitted values.
  nlohmann::json cross = nullptr;
  if (hw.contains("lane_loop_fit")) {
    const nlohmann::json& fit = hw.at("lane_loop_fit");
    const nlohmann::json& per = field(fit, hw_file, "$.lane_loop_fit", "per_strategy_ns");
    std::map<std::string, double> values;
    for (const auto& [name, v] : per.items()) {
      if (!v.is_number()) {
        throw ConfigError(hw_file, "$.lane_loop_fit.per_strategy_ns." + name, v.dump(),
                          "expected a number (ns per lane-loop iteration)");
      }
      values[name] = v.get<double>();
    }
    cross = {{"parameter", "topology.nodes.gpu0.lane_loop_iteration_ns"},
             {"source", fit.value("source", "")},
             {"folds", nlohmann::json::array()}};
    if (options.busy_scale) {
      cross["frozen"] =
          options.footprint_scale
              ? "every controller parameter, batch_time_busy_cores, batch_time_scale and the "
                "footprint term included: fitted on controller-only runs, no strategy, so no "
                "fold re-fits them"
              : "every controller parameter, batch_time_busy_cores and batch_time_scale "
                "included: fitted on controller-only runs, no strategy, so no fold re-fits them";
    }
    std::vector<double> cv_abs;
    for (const auto& [held_out, unused] : errors_by_strategy) {
      (void)unused;
      std::vector<double> others;
      for (const auto& [name, v] : values) {
        if (name != held_out) others.push_back(v);
      }
      if (others.empty()) continue;
      const double value = median_of(others);
      nlohmann::json fold = {{"held_out", held_out},
                             {"value_ns", value},
                             {"fitted_on", nlohmann::json::array()},
                             {"cases", nlohmann::json::array()}};
      for (const auto& [name, v] : values) {
        if (name != held_out) fold["fitted_on"].push_back(name);
      }
      for (const auto& [key, m] : measured) {
        if (m.strategy != held_out) continue;
        const std::vector<std::string> lane_loop = {
            fmt::format("topology.nodes.gpu0.lane_loop_iteration_ns={:.2f}", value)};
        double sim = 0;
        if (!per_instance) {
          sim = simulate(m, *pooled_cal, lane_loop).at("summary").at("iops").get<double>();
        } else {
          std::vector<double> sims;
          for (const auto& [instance, mi] : instances_of_case(m)) {
            sims.push_back(simulate(*mi, instance_cals.at(instance), lane_loop)
                               .at("summary")
                               .at("iops")
                               .get<double>());
          }
          sim = median_of(sims);
        }
        const double err = (sim - m.iops.median) / m.iops.median;
        cv_abs.push_back(std::fabs(err));
        fold["cases"].push_back({{"warps", m.warps},
                                 {"measured_median", m.iops.median},
                                 {"simulated", sim},
                                 {"error_pct", 100.0 * err}});
      }
      cross["folds"].push_back(fold);
    }
    double mae = 0;
    for (double e : cv_abs) mae += e;
    cross["cases"] = cv_abs.size();
    cross["mean_abs_error_pct"] = cv_abs.empty() ? 0.0 : 100.0 * mae / double(cv_abs.size());
  }

  // Summary over the predicted cases.
  const OrderCheck oc = order_check(order);
  double mae = 0, worst = 0, sum_s = 0, sum_h = 0;
  for (std::size_t i = 0; i < abs_errors.size(); ++i) {
    mae += abs_errors[i];
    worst = std::max(worst, abs_errors[i]);
    sum_s += sim_all[i];
    sum_h += hw_all[i];
  }
  mae /= double(abs_errors.size());
  nlohmann::json strategies = nlohmann::json::object();
  for (const auto& [name, errs] : errors_by_strategy) {
    double w = 0;
    for (double e : errs) w = std::max(w, std::fabs(e));
    nlohmann::json e_pct = nlohmann::json::array();
    for (double e : errs) e_pct.push_back(100.0 * e);
    strategies[name] = {{"gated_cases", errs.size()},
                        {"error_pct_by_warps", e_pct},
                        {"max_abs_error_pct", 100.0 * w},
                        {"within_tolerance", w <= 1.5 * options.tolerance}};
  }
  // Kendall tau of the six strategies' order per warp count (medians).
  nlohmann::json tau = nlohmann::json::object();
  {
    std::map<std::uint32_t, std::vector<const OrderCase*>> by_warps;
    for (const OrderCase& c : order) by_warps[c.warps].push_back(&c);
    for (const auto& [w, cs] : by_warps) {
      double concordant = 0, discordant = 0;
      for (std::size_t i = 0; i < cs.size(); ++i) {
        for (std::size_t j = i + 1; j < cs.size(); ++j) {
          const double p = (cs[i]->measured.median - cs[j]->measured.median) *
                           (cs[i]->simulated - cs[j]->simulated);
          if (p > 0) ++concordant;
          if (p < 0) ++discordant;
        }
      }
      const double n = concordant + discordant;
      tau[std::to_string(w)] = n > 0 ? (concordant - discordant) / n : 0.0;
    }
  }
  const bool within =
      mae <= options.tolerance && worst <= 1.5 * options.tolerance && oc.agreed == oc.pairs;
  nlohmann::json summary = {
      {"iops",
       {{"unit", "IO/s"},
        {"calibrated", true},
        {"doc",
         "predicted: I/Os of the case / kernel time against the median of its untraced "
         "runs"},
        {"cases", abs_errors.size()},
        {"mean_abs_error_pct", 100.0 * mae},
        {"max_abs_error_pct", 100.0 * worst},
        {"aggregate_error_pct", finite_or_null(sum_h > 0 ? 100.0 * (sum_s - sum_h) / sum_h : NAN)},
        {"pearson_r", finite_or_null(pearson(hw_all, sim_all))},
        {"within_tolerance", within}}}};
  nlohmann::json report = {
      {"schema", "gpunvme.validate/1"},
      {"mode", "prediction"},
      {"measured_file", hw_file},
      {"device", hw.at("device")},
      {"instances", hw.value("instances", nlohmann::json::array())},
      {"date_measured", hw.value("date", "")},
      {"target", hw.at("target")},
      {"topology", topology_file},
      {"gpu_profile", profile},
      {"seed", options.seed},
      {"tolerance_pct", 100.0 * options.tolerance},
      {"calibrated_within_tolerance", within},
      {"verdict", fmt::format("IOPS MAE <= {0:.0f} %, every case within {1:.0f} %, every pair with "
                              "disjoint measured IQRs ordered alike: {2}",
                              100.0 * options.tolerance, 150.0 * options.tolerance,
                              within ? "met" : "not met")},
      {"method",
       "calibrate, freeze, predict: the controller model's parameters come from the "
       "controller-only runs (calibration), then every strategy case is simulated once with "
       "them and compared with the median of its untraced runs; nothing is fitted per case "
       "or per strategy. error = (simulated - median) / median; the measured spread is the "
       "interquartile range of the case's runs over all machine instances; "
       "batch_commands_mean: the target's commands per batch (median over the runs of "
       "target.batch_commands.mean) beside the controller model's (commands / batches)"},
      {"calibration", per_instance ? nlohmann::json(nullptr) : pooled_cal->report},
      {"metrics", summary},
      {"strategies", strategies},
      {"order_check",
       {{"pairs_with_disjoint_iqr", oc.pairs},
        {"ordered_alike", oc.agreed},
        {"disagreements", oc.disagreements}}},
      {"kendall_tau_by_warps", tau},
      {"cross_validation", cross},
      {"cases", rows},
      {"not_simulated", nlohmann::json::array()}};
  if (!options.instances.empty()) report["instances_selected"] = options.instances;
  if (per_instance) {
    report["calibration_scope"] = "per_instance";
    nlohmann::json by_instance = nlohmann::json::object();
    for (const auto& [instance, c] : instance_cals) by_instance[instance] = c.report;
    report["calibration"] = {
        {"scope", "per_instance"},
        {"doc",
         "each machine instance's controller calibrated from that instance's own "
         "controller-only runs alone (the same fit as the pooled calibration); no strategy run "
         "is used"},
        {"instances", by_instance}};
    report["method"] =
        "calibrate per machine instance, freeze, predict: each instance's controller model "
        "parameters come from that instance's own controller-only runs (calibration), then "
        "every strategy case is simulated once per instance with that instance's parameters and "
        "compared with the median of that instance's untraced runs of the case "
        "(cases[].instances_view); nothing is fitted per case or per strategy. The pooled view, "
        "on which the error, MAE, per-strategy errors, order check, Kendall tau and "
        "cross-validation are computed: the case's prediction is the median of its instances' "
        "predictions, against the median of its untraced runs over all instances. error = "
        "(simulated - median) / median; the measured spread is the interquartile range of the "
        "case's runs over all machine instances; batch_commands_mean and simulated_service_ns: "
        "medians over the instances' simulations";
    nlohmann::json summary_by_instance = nlohmann::json::object();
    std::vector<double> all;
    for (const auto& [instance, errs] : instance_abs_errors) {
      double sum = 0, w = 0;
      for (double e : errs) {
        sum += e;
        w = std::max(w, e);
        all.push_back(e);
      }
      summary_by_instance[instance] = {{"cases", errs.size()},
                                       {"mean_abs_error_pct", 100.0 * sum / double(errs.size())},
                                       {"max_abs_error_pct", 100.0 * w}};
    }
    double sum = 0;
    for (double e : all) sum += e;
    report["per_instance_summary"] = {
        {"doc",
         "each instance's predictions against that instance's own measured medians (not the "
         "verdict's figures, which are the pooled view's)"},
        {"instances", summary_by_instance},
        {"case_instance_pairs", all.size()},
        {"mean_abs_error_pct", all.empty() ? 0.0 : 100.0 * sum / double(all.size())}};
  }
  return report;
}

}  // namespace

const std::vector<Metric>& metrics() {
  // Throughput is the calibrated figure: the untraced hardware runs measure
  // it without the GPU's stage records, whose cost (a clock read and a store
  // per stage per I/O, by one lane for the warp) is itself of the order of
  // the stages: warp_batch at 1 warp does 188 K IOPS traced, 310 K untraced
  // (configs/measurements/hw-strategies-h100-2026-11-24.json). The latency
  // and stage figures come from traced runs and are reported beside it.
  static const std::vector<Metric> m = {
      {"iops", "IO/s", true,
       "I/Os of the case / kernel time (hardware: the untraced run of the same case; a case "
       "without one is reported, not held to the tolerance) or simulated time; in these "
       "closed loops it also fixes the mean loop latency (Little's law: threads / IOPS)"},
      {"end_to_end.mean", "ns", false,
       "request to delivery, mean over the case's I/Os (hardware: traced run, records "
       "included)"},
      {"end_to_end.p50", "ns", false, "request to delivery, median (traced run)"},
      {"completion.mean", "ns", false,
       "doorbell to CQE seen by a GPU thread (simulator: completion_wait + completion_polling): "
       "doorbell propagation, controller fetch and service, CQE polling over PCIe"},
      {"submission.mean", "ns", false,
       "request to SQ doorbell: cid_allocation + sqe_construction + sq_tail_sync + doorbell "
       "(GPU atomics, SQE stores to host memory, fences, the doorbell store)"},
      {"reap.mean", "ns", false, "CQE seen to the requester knowing: cq_head_sync + delivery"},
  };
  return m;
}

nlohmann::json merge_hardware_results(const std::vector<nlohmann::json>& docs) {
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json controller = nlohmann::json::array();
  nlohmann::json instances = nlohmann::json::array();
  for (const nlohmann::json& doc : docs) {
    const std::string schema = doc.is_object() ? doc.value("schema", "") : "";
    if (schema == "gpunvme.lane_loop_fit/1") {
      out["lane_loop_fit"] = doc;
      continue;
    }
    // Each case carries its machine instance (where the document names one).
    nlohmann::json cases =
        doc.is_object() ? doc.value("cases", nlohmann::json::array()) : nlohmann::json::array();
    if (doc.is_object() && doc.contains("instance")) {
      for (nlohmann::json& c : cases) {
        if (c.is_object() && !c.contains("instance")) c["instance"] = doc.at("instance");
      }
    }
    if (doc.is_object()) {
      for (const nlohmann::json& i : doc.value("instances", nlohmann::json::array())) {
        instances.push_back(i);
      }
    }
    if (schema == "gpunvme.hw_controller/1") {
      for (nlohmann::json& c : cases) controller.push_back(std::move(c));
      continue;
    }
    if (!out.contains("schema")) {
      out = doc;
      out["cases"] = nlohmann::json::array();
    }
    for (nlohmann::json& c : cases) out["cases"].push_back(std::move(c));
  }
  if (!controller.empty()) out["controller_only"] = controller;
  if (!instances.empty()) out["instances"] = instances;
  return out;
}

namespace {

// What both modes take from a results file before simulating: the topology,
// the measured device and the GPU profile that simulates it.
struct MeasuredSetup {
  std::string topology_file;
  const nlohmann::json& device;
  std::string device_name;
  std::string profile;
};

MeasuredSetup measured_setup(const nlohmann::json& hw, const std::string& hw_file,
                             const Options& options) {
  // The placement follows the target the runs were made against: the
  // GPU-resident target (gpunvme-hw --target gpu) or the host threads.
  const bool gpu_target = hw.contains("target") && hw.at("target").is_object() &&
                          hw.at("target").value("kind", "") == "gpu_target";
  const std::string topology_file =
      !options.topology_file.empty()
          ? options.topology_file
          : shipped_configs_dir() + (gpu_target ? "/topologies/hw-gpu-target.json"
                                                : "/topologies/hw-soft-controller.json");
  if (field(hw, hw_file, "$", "schema") != "gpunvme.hw/1") {
    throw ConfigError(hw_file, "$.schema", hw.at("schema").dump(),
                      "expected \"gpunvme.hw/1\" (a gpunvme-hw results file)");
  }
  const nlohmann::json& device = field(hw, hw_file, "$", "device");
  const std::string device_name = field(device, hw_file, "$.device", "name").get<std::string>();
  const std::string profile =
      options.gpu_profile.empty() ? gpu_profile_for(device_name) : options.gpu_profile;
  if (profile.empty()) {
    throw ConfigError(hw_file, "$.device.name", device_name,
                      "no GPU profile known for this device; pass --gpu-profile");
  }
  return {topology_file, device, device_name, profile};
}

// Postdiction: each traced case's controller fitted to that case's own
// measured service time (a diagnostic of the GPU side; not a prediction).
nlohmann::json postdict(const nlohmann::json& hw, const std::string& hw_file,
                        const Options& options) {
  const MeasuredSetup setup = measured_setup(hw, hw_file, options);
  const std::string& topology_file = setup.topology_file;
  const nlohmann::json& device = setup.device;
  const std::string& profile = setup.profile;
  const double file_bytes =
      number(field(hw, hw_file, "$", "target"), hw_file, "$.target", "file_bytes");
  const nlohmann::json& cases = field(hw, hw_file, "$", "cases");
  if (!cases.is_array()) throw ConfigError(hw_file, "$.cases", "", "expected an array");

  // Runs without stage records (gpunvme-hw --trace 0) measure throughput
  // without the records' own cost (a clock read and stores per stage per
  // I/O); a traced case takes its IOPS from its untraced twin when there is
  // one.
  // The software controller's host threads make repeated runs of one case
  // differ by up to 15-25 % at 4-8 warps (H100, 2026-11-24), so a case may be
  // measured several times: the run with the median IOPS is compared, and
  // the spread is reported. Runs in stage-means mode (--trace 2) cost a clock
  // read per record, 5-15 % of throughput: their means are reported beside
  // the per-I/O records', their IOPS are not used. Nor are an op-profile
  // run's (--trace 3: two clock reads per platform call); its split of the
  // warps' time by kind of call is reported beside the simulator's.
  using CaseKey = std::pair<std::string, std::uint32_t>;
  std::map<CaseKey, std::vector<const nlohmann::json*>> untraced_runs;
  std::map<CaseKey, const nlohmann::json*> means_runs;
  std::map<CaseKey, const nlohmann::json*> profile_runs;
  for (const nlohmann::json& c : cases) {
    if (c.contains("error") || c.value("trace", true)) continue;
    const CaseKey key{c.value("strategy", ""), c.value("warps", 0u)};
    const std::string timing = c.value("stage_timing", "none");
    if (timing == "means") {
      means_runs[key] = &c;
    } else if (timing == "op_profile") {
      profile_runs[key] = &c;
    } else {
      untraced_runs[key].push_back(&c);
    }
  }
  std::map<CaseKey, const nlohmann::json*> untraced;  // the median run of each case
  for (auto& [key, runs] : untraced_runs) {
    std::stable_sort(runs.begin(), runs.end(),
                     [](const nlohmann::json* a, const nlohmann::json* b) {
                       return a->value("iops", 0.0) < b->value("iops", 0.0);
                     });
    untraced[key] = runs[(runs.size() - 1) / 2];
  }
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json skipped = nlohmann::json::array();
  std::map<std::string, std::vector<double>> sim_values, hw_values;
  // Per strategy: the gated cases' largest error on a calibrated metric.
  struct StrategyFit {
    std::size_t cases = 0;
    double worst = 0;
  };
  std::map<std::string, StrategyFit> fits;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& c = cases[i];
    const std::string path = fmt::format("$.cases[{}]", i);
    if (c.contains("error")) continue;      // the hardware run failed: nothing to compare
    if (!c.value("trace", true)) continue;  // no stage figures: lends its IOPS (above)
    const std::string strategy = field(c, hw_file, path, "strategy").get<std::string>();
    const auto warps = static_cast<std::uint32_t>(number(c, hw_file, path, "warps"));
    if (!options.strategies.empty() &&
        std::find(options.strategies.begin(), options.strategies.end(), strategy) ==
            options.strategies.end()) {
      continue;
    }
    if (!options.warps.empty() &&
        std::find(options.warps.begin(), options.warps.end(), warps) == options.warps.end()) {
      continue;
    }
    // The controller's service time from the run whose throughput is
    // compared: the untraced twin where there is one.
    const auto twin = untraced.find({strategy, warps});
    const bool gated = twin != untraced.end();
    const double service_ns =
        number(field(field(gated ? *twin->second : c, hw_file, path, "target"), hw_file,
                     path + ".target", "service_ns"),
               hw_file, path + ".target.service_ns", "mean");

    // The matching scenario: the hardware's own launch shape and queue
    // layout (its `scenario` block), rings in host memory, reads spread over
    // the namespace file's span.
    RawConfig raw;
    raw.topology_file = topology_file;
    raw.topology = read_json_file(topology_file);
    raw.scenario_file = hw_file + " " + path;
    raw.scenario = field(c, hw_file, path, "scenario");
    raw.scenario["name"] = fmt::format("hw-{}-{}w", strategy, warps);
    raw.scenario["kind"] = "microbenchmark";
    raw.scenario["path"] = "gpu_initiated";
    raw.scenario["queue_memory"] = rings_in_gpu_memory(hw.at("target")) ? "gpu" : "host";
    raw.scenario["distribution"] = "uniform";
    raw.scenario["span_gib"] = file_bytes / double(1ull << 30);
    raw.seed = options.seed;
    apply_set(raw, "topology.nodes.gpu0.profile=" + profile);
    for (const std::string& own : own_code_settings(c)) apply_set(raw, own);
    // A batch's time grows with its size (a pread and a copy per command):
    // where the run measured that slope (target.batch_per_command_ns), each
    // command costs it and the batch overhead covers the rest.
    const nlohmann::json& target = field(gated ? *twin->second : c, hw_file, path, "target");
    const std::string target_path = path + ".target";
    const double per_command_ns =
        std::max(0.0, optional_number(target, hw_file, target_path, "batch_per_command_ns", 0.0));
    apply_set(raw, fmt::format("topology.nodes.ssd0.command_overhead_ns={:.1f}", per_command_ns));
    // Between back-to-back batches a controller thread passes on to its
    // next queue: where the run measured that gap, the processors spend it.
    double gap_ns = 0;
    if (target.contains("batch_gap_ns")) {
      const nlohmann::json& gaps = target.at("batch_gap_ns");
      const std::string gaps_path = target_path + ".batch_gap_ns";
      if (number(gaps, hw_file, gaps_path, "count") > 0) {
        gap_ns = number(gaps, hw_file, gaps_path, "mean");
      }
    }
    apply_set(raw, fmt::format("topology.nodes.ssd0.batch_gap_ns={:.1f}", gap_ns));
    // The target's threads do not run at one speed, and a run lasts as long
    // as its slowest: where the run measured each thread's busy time, the
    // controller model's processors (one per thread, owning the same
    // queues) get their own speeds, found with the batch overhead below.
    const double batch_fixed_ns =
        std::max(0.0, optional_number(target, hw_file, target_path, "batch_fixed_ns", 0.0));
    const std::vector<double> thread_ratio = relative_speed(
        measured_threads(target, hw_file, target_path), batch_fixed_ns, per_command_ns);
    // A speed the user sets (--set) is kept, not fitted.
    const bool speeds_given =
        std::any_of(options.overrides.begin(), options.overrides.end(), [](const std::string& o) {
          return o.rfind("topology.nodes.ssd0.processor_time_scale=", 0) == 0;
        });
    std::vector<double> processor_scale = speeds_given ? std::vector<double>{} : thread_ratio;
    if (!processor_scale.empty()) {
      apply_set(raw, fmt::format("topology.nodes.ssd0.controller_cores={}", thread_ratio.size()));
    }
    for (const std::string& o : options.overrides) apply_set(raw, o);

    // The batch overhead that brings the controller model's mean service
    // time (SQE fetched to CQE posted) to the measured one. The placement's
    // controller serves each fetch as one batch on the processor that owns
    // the queue (batch_service), as the software controller's threads do;
    // its service time also holds the batch's data transfer, which depends on
    // how the batches spread in time, so the overhead is found by fixed-point
    // steps from the measured figure (a few runs: each step moves it by the
    // remaining gap).
    const double mean_batch =
        target.contains("batch_commands")
            ? number(target.at("batch_commands"), hw_file, target_path + ".batch_commands", "mean")
            : 0.0;
    double overhead = std::max(0.0, service_ns - per_command_ns * mean_batch);
    nlohmann::json result;
    // nvme_ssd's batch_overhead_ns ends at 10 ms; a case whose controller
    // queued for longer (the software controller overloaded) is listed as
    // not simulated rather than clamped.
    constexpr double kMaxOverheadNs = 1e7;
    if (overhead > kMaxOverheadNs) {
      skipped.push_back({{"strategy", strategy},
                         {"warps", warps},
                         {"measured_service_ns", service_ns},
                         {"reason",
                          "the controller's measured service time is beyond the SSD "
                          "model's batch_overhead_ns range (10 ms)"}});
      continue;
    }
    // Each processor's speed (processor_time_scale) is found by the same
    // steps: its relative speed (relative_speed, from its busy time) must
    // come to its thread's. The scale multiplies only the processor's work,
    // not the batch's transfers, so it ends beyond the ratio for a thread
    // that is slower or faster than the others.
    constexpr int kSteps = 5;
    constexpr double kServiceTolerance = 0.005;
    std::vector<double> processor_ratio;  // simulated, as thread_ratio
    for (int step = 0; step < kSteps; ++step) {
      RawConfig attempt = raw;
      apply_set(attempt, fmt::format("topology.nodes.ssd0.batch_overhead_ns={:.1f}", overhead));
      if (!processor_scale.empty()) {
        apply_set(attempt, fmt::format("topology.nodes.ssd0.processor_time_scale={}",
                                       nlohmann::json(processor_scale).dump()));
      }
      result = run(resolve_config(attempt));
      const double simulated = result.at("stages").at("ssd_service").at("mean").get<double>();
      processor_ratio =
          relative_speed(simulated_processors(result), batch_fixed_ns, per_command_ns);
      bool speeds_match = true;
      for (std::size_t t = 0; t < processor_scale.size() && t < processor_ratio.size(); ++t) {
        if (std::fabs(processor_ratio[t] - thread_ratio[t]) > kServiceTolerance * thread_ratio[t]) {
          speeds_match = false;
        }
      }
      if (std::fabs(simulated - service_ns) <= kServiceTolerance * service_ns && speeds_match) {
        break;
      }
      if (step + 1 == kSteps) break;
      overhead = std::max(0.0, overhead + service_ns - simulated);
      for (std::size_t t = 0; t < processor_scale.size() && t < processor_ratio.size(); ++t) {
        if (processor_ratio[t] > 0) {
          processor_scale[t] =
              std::clamp(processor_scale[t] * thread_ratio[t] / processor_ratio[t], 0.01, 100.0);
        }
      }
    }

    nlohmann::json row = {
        {"strategy", strategy},
        {"warps", warps},
        {"ios", c.value("ios", 0)},
        {"measured_service_ns", service_ns},
        {"batch_overhead_ns", overhead},
        {"command_overhead_ns", per_command_ns},
        {"batch_gap_ns", gap_ns},
        {"processor_time_scale", speeds_given ? ssd_param(raw.topology, "processor_time_scale")
                                              : nlohmann::json(processor_scale)},
        {"thread_time_ratio", {{"measured", thread_ratio}, {"simulated", processor_ratio}}},
        {"gated", gated},
        {"measured_runs", gated ? untraced_runs.at({strategy, warps}).size() : 1},
        {"simulated_service_ns", result.at("stages").at("ssd_service").at("mean").get<double>()},
        {"metrics", nlohmann::json::object()}};
    // Per-stage means side by side (diagnostics: where a gap comes from).
    {
      nlohmann::json stages = nlohmann::json::object();
      const nlohmann::json& hs = c.at("stages");
      const nlohmann::json& ss = result.at("stages");
      for (const char* s :
           {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell", "completion_wait",
            "completion_polling", "cq_head_sync", "delivery", "ssd_service"}) {
        const std::string hw_name = std::string(s) == "completion_wait" ? "completion" : s;
        nlohmann::json e = nlohmann::json::object();
        e["measured"] = hs.contains(hw_name) ? nlohmann::json(hs.at(hw_name).value("mean", 0.0))
                                             : nlohmann::json(nullptr);
        e["simulated"] =
            ss.contains(s) ? nlohmann::json(ss.at(s).value("mean", 0.0)) : nlohmann::json(nullptr);
        stages[s] = e;
      }
      // From a stage-means run (--trace 2), where there is one: the same
      // intervals without the per-I/O records' own cost.
      const auto means = means_runs.find({strategy, warps});
      if (means != means_runs.end() && means->second->contains("stage_means")) {
        const nlohmann::json& hm = means->second->at("stage_means");
        for (auto& [name, e] : stages.items()) {
          const std::string hw_name = name == "completion_wait" ? "completion" : name;
          e["measured_means_mode"] =
              hm.contains(hw_name) ? nlohmann::json(hm.at(hw_name)) : nlohmann::json(nullptr);
        }
      }
      row["stage_means_ns"] = stages;
    }
    const auto profile_run = profile_runs.find({strategy, warps});
    if (profile_run != profile_runs.end() && profile_run->second->contains("op_profile")) {
      row["op_profile_ns_per_io"] =
          op_profile_rows(profile_run->second->at("op_profile"), result, hw_file, path);
    }
    if (gated) {
      const auto& runs = untraced_runs.at({strategy, warps});
      row["measured_iops_range"] = {runs.front()->value("iops", 0.0),
                                    runs.back()->value("iops", 0.0)};
    }
    for (const Metric& m : metrics()) {
      const double h = m.name == "iops" && gated ? number(*twin->second, hw_file, path, "iops")
                                                 : measured_metric(m.name, c, hw_file, path);
      const double s = simulated_metric(m.name, result);
      const double err = h > kTiny ? (s - h) / h : std::nan("");
      row["metrics"][m.name] = {
          {"measured", h}, {"simulated", s}, {"error_pct", finite_or_null(100.0 * err)}};
      if (std::isfinite(err)) {
        sim_values[m.name].push_back(s);
        hw_values[m.name].push_back(h);
      }
      if (m.calibrated && gated) {
        StrategyFit& fit = fits[strategy];
        ++fit.cases;
        fit.worst = std::max(fit.worst, std::isfinite(err) ? std::fabs(err) : INFINITY);
      }
    }
    rows.push_back(row);
  }
  if (rows.empty()) {
    throw ConfigError(hw_file, "$.cases", "", "no successful case matches the selection");
  }

  nlohmann::json summary = nlohmann::json::object();
  nlohmann::json strategies = nlohmann::json::object();
  nlohmann::json calibrated_strategies = nlohmann::json::array();
  bool all_within = !fits.empty();
  for (const auto& [name, fit] : fits) {
    const bool within = fit.worst <= options.tolerance;
    all_within = all_within && within;
    if (within) calibrated_strategies.push_back(name);
    strategies[name] = {{"gated_cases", fit.cases},
                        {"max_abs_error_pct", finite_or_null(100.0 * fit.worst)},
                        {"within_tolerance", within}};
  }
  for (const Metric& m : metrics()) {
    const std::vector<double>& s = sim_values[m.name];
    const std::vector<double>& h = hw_values[m.name];
    double mae = 0, sum_s = 0, sum_h = 0, worst = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const double e = std::fabs(s[i] - h[i]) / h[i];
      mae += e;
      worst = std::max(worst, e);
      sum_s += s[i];
      sum_h += h[i];
    }
    const double n = static_cast<double>(std::max<std::size_t>(1, s.size()));
    // A calibrated metric is held to the tolerance on the gated cases only.
    const bool within = m.calibrated ? all_within : worst <= options.tolerance;
    summary[m.name] = {{"unit", m.unit},
                       {"calibrated", m.calibrated},
                       {"doc", m.doc},
                       {"cases", s.size()},
                       {"mean_abs_error_pct", 100.0 * mae / n},
                       {"max_abs_error_pct", 100.0 * worst},
                       {"aggregate_error_pct",
                        finite_or_null(sum_h > kTiny ? 100.0 * (sum_s - sum_h) / sum_h : NAN)},
                       {"pearson_r", finite_or_null(pearson(h, s))},
                       {"within_tolerance", within}};
  }
  return {{"schema", "gpunvme.validate/1"},
          {"mode", "postdiction"},
          {"measured_file", hw_file},
          {"device", device},
          {"date_measured", hw.value("date", "")},
          {"target", hw.at("target")},
          {"topology", topology_file},
          {"gpu_profile", profile},
          {"seed", options.seed},
          {"tolerance_pct", 100.0 * options.tolerance},
          {"calibrated_within_tolerance", all_within},
          {"calibrated_strategies", calibrated_strategies},
          {"method",
           "postdiction (no calibration set given): each hardware case re-run in the simulator "
           "with the hardware's launch shape, queue "
           "count and depth, rings in host memory (queue_memory = host) and a controller of the "
           "software target's shape (4 processors, each owning its queues and serving a fetch "
           "as one batch) whose batch overhead is set so that its mean service time equals the "
           "software controller's measured mean service time for that case; error = (simulated "
           "- measured) / measured; MAE and Pearson r over the cases (Accel-Sim's correlation "
           "figures); a case is gated (held to the tolerance on the calibrated metrics) when "
           "its throughput was measured without stage records"},
          {"metrics", summary},
          {"strategies", strategies},
          {"cases", rows},
          {"not_simulated", skipped}};
}

}  // namespace

nlohmann::json correlate(const nlohmann::json& hw, const std::string& hw_file,
                         const Options& options) {
  nlohmann::json report;
  if (!hw.contains("controller_only")) {
    if (!options.instances.empty()) {
      throw ConfigError(hw_file, "$.controller_only", "",
                        "a selection of machine instances (--instances) is for prediction "
                        "mode, which needs controller-only runs (gpunvme-hw --controller-only); "
                        "none were given");
    }
    if (options.calibration == CalibrationScope::per_instance) {
      throw ConfigError(hw_file, "$.controller_only", "",
                        "per-instance calibration needs controller-only runs (gpunvme-hw "
                        "--controller-only) of every machine instance; none were given");
    }
    report = postdict(hw, hw_file, options);
  } else {
    const MeasuredSetup setup = measured_setup(hw, hw_file, options);
    report = predict(hw, hw_file, options, setup.topology_file, setup.profile);
  }
  // A --set changes every simulated case: the report names it beside the
  // topology, so that it says what it was made with.
  if (!options.overrides.empty()) report["overrides"] = options.overrides;
  report["gpunvme"] = build_info_json();
  return report;
}

namespace {

// Log-log axes over whole decades covering [lo, hi] (1 to 10 when nothing is
// positive), in a plot area of pw x ph pixels at (left, top): what both
// validation plots draw their points on.
class LogLogAxes {
 public:
  LogLogAxes(double lo, double hi, int left, int top, int pw, int ph)
      : left_(left), top_(top), pw_(pw), ph_(ph) {
    if (hi <= 0) {
      lo = 1;
      hi = 10;
    }
    l0_ = std::floor(std::log10(lo));
    span_ = std::max(1.0, std::ceil(std::log10(hi)) - l0_);
  }
  double x(double v) const { return left_ + (std::log10(v) - l0_) / span_ * pw_; }
  double y(double v) const { return top_ + ph_ - (std::log10(v) - l0_) / span_ * ph_; }
  // The smallest value on the axes (a bar reaching below it starts there).
  double lowest() const { return std::pow(10.0, l0_); }

  // The tolerance band around y = x (a fraction `tol` either side), the
  // diagonal, the frame and the decade labels of both axes.
  void draw_frame(std::ostringstream& s, double tol) const {
    const int left = left_, top = top_, pw = pw_, ph = ph_;
    auto x = [&](double v) { return this->x(v); };
    auto y = [&](double v) { return this->y(v); };
    const double a = std::pow(10.0, l0_), b = std::pow(10.0, l0_ + span_);
    s << fmt::format(
        "<polygon points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\" "
        "fill=\"#eeeeee\"/>\n",
        x(a), y(a * (1 + tol)), x(b / (1 + tol)), y(b), x(b), y(b * (1 - tol)), x(a),
        y(a * (1 - tol)));
    s << fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#888\"/>\n", x(a),
        y(a), x(b), y(b));
    s << fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
        left, top, pw, ph);
    for (double e = l0_; e <= l0_ + span_ + 1e-9; e += 1) {
      const double v = std::pow(10.0, e);
      s << fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">1e{:.0f}</text>\n", x(v),
                       top + ph + 18, e);
      s << fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">1e{:.0f}</text>\n",
                       left - 6, y(v) + 4, e);
    }
  }

 private:
  int left_, top_, pw_, ph_;
  double l0_ = 0, span_ = 1;
};

// The colours of the plots' series (matplotlib's tab10, less grey and olive).
constexpr const char* kSeriesColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
const char* series_colour(std::size_t k) {
  return kSeriesColours[k % (sizeof kSeriesColours / sizeof kSeriesColours[0])];
}

// The opening of both plots: the svg element on a white background and the title.
void svg_header(std::ostringstream& s, int w, int h, int left, const std::string& title) {
  s << fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"25\" font-size=\"15\">{}</text>\n",
      w, h, left, title);
}

// Axis titles below and left of a plot area.
void axis_titles(std::ostringstream& s, int left, int top, int pw, int ph,
                 const std::string& x_title, const std::string& y_title) {
  s << fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", left + pw / 2,
                   top + ph + 45, x_title);
  s << fmt::format(
      "<text x=\"20\" y=\"{}\" transform=\"rotate(-90 20 {})\" text-anchor=\"middle\">{}"
      "</text>\n",
      top + ph / 2, top + ph / 2, y_title);
}

// A prediction report's plot: simulated against measured IOPS per case, the
// measured interquartile range as a horizontal bar, log-log axes, y = x and
// the tolerance band; one colour per strategy.
std::string prediction_svg(const nlohmann::json& report) {
  const int w = 900, h = 700, left = 90, right = 260, top = 50, bottom = 70;
  const int pw = w - left - right, ph = h - top - bottom;
  double lo = 1e300, hi = 0;
  for (const nlohmann::json& row : report.at("cases")) {
    for (double v :
         {row.at("measured_iops").at("q1").get<double>(),
          row.at("measured_iops").at("q3").get<double>(), row.at("simulated_iops").get<double>()}) {
      if (v > 0) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  const LogLogAxes axes(lo, hi, left, top, pw, ph);
  auto x = [&](double v) { return axes.x(v); };
  auto y = [&](double v) { return axes.y(v); };
  std::ostringstream s;
  const nlohmann::json& iops = report.at("metrics").at("iops");
  svg_header(
      s, w, h, left,
      fmt::format("gpunvme validate (prediction{}): IOPS, {} ({}); MAE {:.1f} %, order {}/{}",
                  report.contains("calibration_scope") ? ", per-instance calibration" : "",
                  report.at("device").value("name", "?"), report.value("date_measured", ""),
                  iops.at("mean_abs_error_pct").get<double>(),
                  report.at("order_check").at("ordered_alike").get<std::size_t>(),
                  report.at("order_check").at("pairs_with_disjoint_iqr").get<std::size_t>()));
  axes.draw_frame(s, report.value("tolerance_pct", 10.0) / 100.0);
  axis_titles(s, left, top, pw, ph, "measured IOPS (median, bar: IQR over the runs)",
              "predicted IOPS");
  std::map<std::string, const char*> colour;
  for (const nlohmann::json& row : report.at("cases")) {
    const std::string name = row.at("strategy").get<std::string>();
    if (colour.count(name) == 0) {
      colour[name] = series_colour(colour.size());
    }
    const nlohmann::json& m = row.at("measured_iops");
    const double med = m.at("median").get<double>(), sim = row.at("simulated_iops").get<double>();
    if (med <= 0 || sim <= 0) continue;
    s << fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\"/>\n",
        x(std::max(m.at("q1").get<double>(), axes.lowest())), y(sim), x(m.at("q3").get<double>()),
        y(sim), colour[name]);
    s << fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.8\"><title>{} "
        "{} warps: measured {:.0f} (IQR {:.0f}-{:.0f}), predicted {:.0f}</title></circle>\n",
        x(med), y(sim), colour[name], name, row.at("warps").get<int>(), med,
        m.at("q1").get<double>(), m.at("q3").get<double>(), sim);
  }
  int k = 0;
  for (const auto& [name, c] : colour) {
    const nlohmann::json& st = report.at("strategies").at(name);
    s << fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n", left + pw + 20,
                     top + 10 + 40 * k, c);
    s << fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left + pw + 30, top + 14 + 40 * k,
                     name);
    s << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">max |error| {:.1f}%</text>\n",
                     left + pw + 30, top + 29 + 40 * k, st.at("max_abs_error_pct").get<double>());
    ++k;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace

std::string correlation_svg(const nlohmann::json& report) {
  if (report.value("mode", "") == "prediction") return prediction_svg(report);
  // Two panels: the latencies (ns) above, IOPS (the calibrated metric, in
  // another unit) below, each on its own log-log axes.
  const int w = 900, panel_h = 650, left = 90, right = 260, top = 50, bottom = 70;
  const int pw = w - left - right, ph = panel_h - top - bottom;
  const int h = 2 * panel_h;
  const double tolerance = report.value("tolerance_pct", 10.0) / 100.0;
  const nlohmann::json& metrics = report.at("metrics");
  auto range_of = [&](bool iops_panel) {
    double lo = 1e300, hi = 0;
    for (const nlohmann::json& row : report.at("cases")) {
      for (const auto& [name, m] : row.at("metrics").items()) {
        if ((name == "iops") != iops_panel) continue;
        for (const char* k : {"measured", "simulated"}) {
          const double v = m.at(k).get<double>();
          if (v > 0) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          }
        }
      }
    }
    return std::make_pair(lo, hi);
  };
  std::ostringstream s;
  svg_header(
      s, w, h, left,
      fmt::format("gpunvme validate: simulated vs measured, {} ({})",
                  report.at("device").value("name", "?"), report.value("date_measured", "")));
  std::size_t k = 0;
  for (const bool iops_panel : {false, true}) {
    const int panel_top = top + (iops_panel ? panel_h : 0);
    const auto [lo, hi] = range_of(iops_panel);
    const LogLogAxes axes(lo, hi, left, panel_top, pw, ph);
    axes.draw_frame(s, tolerance);
    axis_titles(s, left, panel_top, pw, ph,
                iops_panel ? "measured on hardware (IOPS)" : "measured on hardware (ns)",
                iops_panel ? "simulated (IOPS)" : "simulated (ns)");
    int legend_row = 0;
    for (const auto& [name, summary] : metrics.items()) {
      if ((name == "iops") != iops_panel) continue;
      const char* colour = series_colour(k++);
      for (const nlohmann::json& row : report.at("cases")) {
        if (!row.at("metrics").contains(name)) continue;
        const nlohmann::json& m = row.at("metrics").at(name);
        const double hv = m.at("measured").get<double>(), sv = m.at("simulated").get<double>();
        if (hv <= 0 || sv <= 0) continue;
        s << fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.7\">"
            "<title>{} {} {} warps: measured {:.0f}, simulated {:.0f}</title></circle>\n",
            axes.x(hv), axes.y(sv), colour, name, row.value("strategy", ""), row.value("warps", 0),
            hv, sv);
      }
      const int legend_y = panel_top + 10 + 40 * legend_row++;
      s << fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"{}\"/>\n", left + pw + 20,
                       legend_y, colour);
      s << fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", left + pw + 30, legend_y + 4, name);
      s << fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">MAE {:.1f}%, {}</text>\n",
                       left + pw + 30, legend_y + 19,
                       summary.at("mean_abs_error_pct").get<double>(), correlation_text(summary));
    }
  }
  s << "</svg>\n";
  return s.str();
}

std::string correlation_text(const nlohmann::json& metric_summary) {
  const nlohmann::json& r = metric_summary.at("pearson_r");
  if (metric_summary.at("cases").get<std::size_t>() < kMinCasesForCorrelation) {
    return fmt::format("r omitted ({} cases; needs {})",
                       metric_summary.at("cases").get<std::size_t>(), kMinCasesForCorrelation);
  }
  return r.is_null() ? std::string("r n/a") : fmt::format("r {:.3f}", r.get<double>());
}

std::string report_table(const nlohmann::json& report) {
  std::ostringstream s;
  bool r_omitted = false;
  s << fmt::format("{:<18} {:>5} {:>8} {:>8} {:>9} {:>8}  {}\n", "metric", "cases", "MAE %",
                   "max %", "aggr. %", "r", "calibrated");
  for (const auto& [name, m] : report.at("metrics").items()) {
    const nlohmann::json& r = m.at("pearson_r");
    const bool too_few = m.at("cases").get<std::size_t>() < kMinCasesForCorrelation;
    r_omitted = r_omitted || too_few;
    const nlohmann::json& ag = m.at("aggregate_error_pct");
    s << fmt::format("{:<18} {:>5} {:>8.1f} {:>8.1f} {:>9} {:>8}  {}\n", name,
                     m.at("cases").get<int>(), m.at("mean_abs_error_pct").get<double>(),
                     m.at("max_abs_error_pct").get<double>(),
                     ag.is_null() ? std::string("n/a") : fmt::format("{:+.1f}", ag.get<double>()),
                     too_few       ? std::string("-")
                     : r.is_null() ? std::string("n/a")
                                   : fmt::format("{:.3f}", r.get<double>()),
                     m.at("calibrated").get<bool>()
                         ? (m.at("within_tolerance").get<bool>() ? "yes, within" : "yes, OUTSIDE")
                         : "no");
  }
  if (r_omitted) {
    s << fmt::format(
        "r (Pearson) is left out (-) for a metric with fewer than {} cases: two points always "
        "lie on a line\n",
        kMinCasesForCorrelation);
  }
  // Per-instance calibration: the figures above are the pooled view's; each
  // instance's predictions against its own medians are printed beside them.
  if (report.contains("per_instance_summary")) {
    const nlohmann::json& per = report.at("per_instance_summary");
    std::string by_instance;
    for (const auto& [instance, figures] : per.at("instances").items()) {
      by_instance += fmt::format("{}{} {:.1f} %", by_instance.empty() ? "" : ", ", instance,
                                 figures.at("mean_abs_error_pct").get<double>());
    }
    s << fmt::format(
        "per-instance calibration: the figures above compare the median of the instances' "
        "predictions with the pooled measured median; each instance against its own medians: "
        "IOPS MAE {:.1f} % over {} case-instance pairs ({})\n",
        per.at("mean_abs_error_pct").get<double>(), per.at("case_instance_pairs").get<int>(),
        by_instance);
  }
  if (report.contains("strategies")) {
    s << fmt::format("{:<26} {:>11} {:>14}  {}\n", "strategy", "gated cases", "max |error| %",
                     "within the tolerance");
    for (const auto& [name, st] : report.at("strategies").items()) {
      const nlohmann::json& worst = st.at("max_abs_error_pct");
      s << fmt::format(
          "{:<26} {:>11} {:>14}  {}\n", name, st.at("gated_cases").get<int>(),
          worst.is_null() ? std::string("n/a") : fmt::format("{:.1f}", worst.get<double>()),
          st.at("within_tolerance").get<bool>() ? "yes" : "no");
    }
  }
  return s.str();
}

}  // namespace gpunvme::validate
