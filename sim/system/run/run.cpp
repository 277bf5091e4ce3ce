#include "sim/system/run/run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "models/pcie/routing.h"
#include "sim/kernel/build_info.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/system/machine/machine.h"
#include "sim/system/run/catalog.h"
#include "sim/system/run/setup_checks.h"
#include "sim/system/run/tenants.h"
#include "sim/system/trace/link_counters.h"
#include "sim/system/trace/ssd_commands.h"
#include "sim/system/trace/trace_writer.h"
#include "sim/system/workload/remote_io_path.h"
#include "sim/system/workload/scenario_spec.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {

namespace {
double round_to(double v, double unit) { return std::round(v / unit) * unit; }

// The run's timed activations by what they were for (Simulation::EventKind).
nlohmann::json events_by_kind() {
  nlohmann::json kinds = nlohmann::json::object();
  for (int k = 0; k < Simulation::kEventKinds; ++k) {
    kinds[Simulation::kEventKindNames[k]] =
        Simulation::events(static_cast<Simulation::EventKind>(k));
  }
  return kinds;
}

// The path each requester -> target pair that exchanged data took, like nvidia-smi topo -p2p,
// as the fabric routed it (direct, root complex, ACS-redirected, IOMMU-translated, CPU fabric),
// with its bytes and IOTLB hits and misses.
nlohmann::json paths_json(Machine& machine, const RunConfig&) { return machine.fabric().paths(); }

// The GPU and each SSD exchange traffic both ways (doorbells one way, queue
// entries and data the other); a platform that refuses it is a configuration
// error, not a run that hangs.
void check_fabric_paths(const RunConfig& config) {
  check_hosts(config);
  // On the bounce path data crosses host memory; GPU and SSD never talk
  // directly, which is what it is for on platforms that refuse peer traffic.
  if (config.scenario.params.json().value("path", "gpu_initiated") == "bounce") return;
  // A remote path's SSDs are in another host; its own check admits the NIC's
  // DMA into the GPU (resolve_remote_route).
  if (is_remote_path(config)) return;
  const TopologyConfig& topo = config.topology;
  TopologyGraph graph(topo);
  pcie::Router router(topo, graph);
  auto index = [&](const std::string& id) {
    return static_cast<std::size_t>(topo.node(id) - topo.nodes.data());
  };
  const std::size_t g = index(ScenarioParams::from(config.scenario.params).gpu);
  const std::vector<std::string> ssds = ScenarioParams::from(config.scenario.params).ssds;
  for (const std::string& ssd : ssds) {
    router.require_path(g, index(ssd));
  }
}
}  // namespace

void check_resolved(const RunConfig& config) {
  check_workload(config);
  check_fabric_paths(config);
  check_setup(config);
}

RunConfig resolve_config(const RawConfig& raw) {
  try {
    if (is_tenants_document(raw.scenario)) return resolve_tenants(raw);
    RunConfig config = resolve(catalog(), raw);
    apply_scenario_kind(raw.scenario, config);
    check_resolved(config);
    return config;
  } catch (const ConfigError& error) {
    // A value an override set is blamed on the override (`--set
    // scenario.iodepth=0`), not on the file it replaced a value of.
    if (raw.overrides.empty()) throw;
    throw blame_override(raw, error);
  }
}

RunConfig load_config(const std::string& topology_file, const std::string& scenario_file,
                      const std::vector<std::string>& overrides, std::uint64_t seed) {
  RawConfig raw = load_raw_config(topology_file, scenario_file);
  raw.seed = seed;
  for (const std::string& o : overrides) apply_set(raw, o);
  return resolve_config(raw);
}

const std::vector<std::string>& wall_clock_fields() {
  static const std::vector<std::string> fields{"wall_time_s"};
  return fields;
}

nlohmann::json run(const RunConfig& config) { return run(config, RunOptions{}); }

void require_complete(const Workload& workload, const std::string& who) {
  const std::uint64_t done = workload.completed();
  if (workload.stopped_before_drain()) {
    // Fast mode's run-length stop: the I/Os in flight there are accounted
    // for (summary.run_length.in_flight_at_stop), not completed; only a
    // converged controller may have ended the run.
    const RunLengthController* controller = workload.run_length();
    if (controller == nullptr || !controller->converged()) {
      throw std::runtime_error(fmt::format(
          "{}run stopped before its I/Os drained with {} of {} I/Os complete, but run-length "
          "control had not converged",
          who, done, workload.ios()));
    }
    if (done > workload.ios()) {
      throw std::runtime_error(fmt::format(
          "{}run stopped at its run-length stop with {} I/Os complete, more than the {} issued",
          who, done, workload.ios()));
    }
    return;
  }
  if (done != workload.ios() || !workload.finished()) {
    throw std::runtime_error(fmt::format("{}run ended with {} of {} I/Os complete{}", who, done,
                                         workload.ios(),
                                         workload.finished() ? "" : ", workload unfinished"));
  }
}

nlohmann::json workload_figures(const Workload& workload, const RunConfig& config,
                                Picoseconds elapsed) {
  const std::uint64_t done = workload.completed();
  // Throughput counts from the workload's start to its last completion: the
  // controllers' bring-up before it (CC.EN, admin queue, Set Features, queue
  // creation: ~71 us on the default topology) moves no data and would dilute
  // short runs. It is reported on its own as bring_up_ns.
  const Picoseconds io_start = std::min(workload.started_at(), elapsed);
  const Picoseconds io_end = std::clamp(workload.finished_at(), io_start, elapsed);
  const double seconds = static_cast<double>(io_end - io_start) * 1e-12;
  // A failed I/O is accounted for but is not throughput: every I/O submitted
  // either succeeded (ios) or failed (failed), and only the successful ones
  // count in iops and bandwidth_gbps.
  const std::uint64_t failed = workload.errors();
  const std::uint64_t succeeded = done - failed;
  const double iops = seconds > 0 ? static_cast<double>(succeeded) / seconds : 0.0;
  const double bytes_per_s = seconds > 0 ? static_cast<double>(workload.bytes()) / seconds : 0.0;
  nlohmann::json summary = {
      {"path", workload.path()},
      {"strategy", workload.strategy()},
      {"submitted", workload.ios()},
      {"ios", succeeded},
      {"failed", failed},
      {"errors", failed},
      {"timeouts", workload.timeouts()},
      {"reset_aborted", workload.reset_aborted()},
      {"iops", round_to(iops, 0.001)},
      {"bandwidth_gbps", round_to(bytes_per_s / 1e9, 1e-6)},
      {"latency_ns", workload.end_to_end().summary_ns()},
      {"simulated_time_ns", round_to(ps_to_ns(elapsed), 0.001)},
      {"bring_up_ns", round_to(ps_to_ns(io_start), 0.001)},
      {"io_time_ns", round_to(ps_to_ns(io_end - io_start), 0.001)},
      {"mean_in_flight", round_to(workload.mean_in_flight(io_end - io_start), 1e-6)},
      {"bytes", workload.bytes()},
  };
  summary.update(workload.summary(elapsed));
  return {{"summary", summary},
          {"stages", workload.stages()},
          {"fio", workload.fio_latency().json(
                      ScenarioParams::from(config.scenario.params).percentile_list)}};
}

namespace {
// The trace's otherData: the one place that says what the trace is of (the
// writer adds its window and truncation notes).
nlohmann::json trace_metadata(const RunConfig& config, Picoseconds elapsed) {
  return {{"scenario", ScenarioParams::from(config.scenario.params).name},
          {"simulated_time_ns", ps_to_ns(elapsed)},
          {"gpunvme", build_info_json()}};
}
}  // namespace

namespace {
// Fast mode's run-length control, as the result reports it: whether it
// applied (and why not), the rule, and where it did, what the run answers
// for the requested I/Os from the converged steady state. The summary's
// iops, bandwidth_gbps and latency_ns become the steady state's; every
// other count stays the simulated segment's (README, Fast mode).
nlohmann::json apply_run_length(const Workload& workload, const RunConfig& config,
                                nlohmann::json& summary, Picoseconds elapsed) {
  const std::string refusal = run_length_refusal(config);
  if (!refusal.empty()) return {{"applied", false}, {"reason", refusal}};
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  nlohmann::json out = {
      {"requested_ios", workload.requested_ios()},
      {"simulated_ios", workload.ios()},
      {"rule",
       {{"method", "batch means after MSER-5 warm-up truncation, 95 % Student t intervals"},
        {"precision", s.fast_precision},
        {"min_batches", s.fast_min_batches},
        {"min_ios", s.fast_min_ios},
        {"min_ios_per_thread", s.fast_min_ios_per_thread},
        {"trend_tolerance", s.fast_trend_tolerance},
        {"max_lag1", s.fast_max_lag1}}}};
  const RunLengthController* controller = workload.run_length();
  if (controller == nullptr || !controller->converged()) {
    out["applied"] = false;
    out["reason"] = "not converged";
    return out;
  }
  const SteadyState& steady = *controller->steady_state();
  if (!workload.stopped_before_drain() && workload.ios() >= workload.requested_ios()) {
    out["applied"] = false;
    out["reason"] = "converged only once every requested I/O was issued";
    return out;
  }
  const std::uint64_t requested = workload.requested_ios();
  const Picoseconds io_start = std::min(workload.started_at(), elapsed);
  const Picoseconds io_end = std::clamp(workload.finished_at(), io_start, elapsed);
  // The requested I/Os: the simulated warm-up, then the rest at the
  // converged rate.
  const double rest_s = static_cast<double>(requested - steady.warmup_ios) / steady.ios_per_s;
  const double projected_io_ns =
      ps_to_ns(steady.warmup_end - std::min(steady.warmup_end, io_start)) + rest_s * 1e9;
  const std::uint64_t succeeded = workload.completed() - workload.errors();
  const double bytes_per_io =
      succeeded > 0 ? static_cast<double>(workload.bytes()) / static_cast<double>(succeeded) : 0.0;
  out["applied"] = true;
  out["completed_ios"] = workload.completed();
  out["observed_ios"] = steady.observed_ios;
  out["warmup_ios"] = steady.warmup_ios;
  out["measured_ios"] = steady.observed_ios - steady.warmup_ios;
  out["batches"] = steady.batches;
  out["batch_ios"] = steady.batch_ios;
  out["warmup_end_ns"] = round_to(ps_to_ns(steady.warmup_end), 0.001);
  out["stop_time_ns"] = round_to(ps_to_ns(steady.stop_time), 0.001);
  out["ci_half_width"] = {{"iops", round_to(steady.ios_per_s_half_width, 1e-6)},
                          {"latency_mean", round_to(steady.latency_mean_half_width, 1e-6)}};
  out["lag1"] = {{"time_per_io", round_to(steady.lag1_time, 1e-6)},
                 {"latency_mean", round_to(steady.lag1_latency, 1e-6)}};
  // How each half-width was computed: independent batch means, or (batch
  // means correlated at every batch size the run allows) the bound that
  // holds under any correlation, sqrt(batches) times wider.
  out["ci_method"] = {
      {"iops", steady.correlated_time ? "correlation bound" : "independent batches"},
      {"latency_mean", steady.correlated_latency ? "correlation bound" : "independent batches"}};
  out["trend"] = {{"p50", round_to(steady.p50_drift, 1e-6)},
                  {"p99", round_to(steady.p99_drift, 1e-6)}};
  out["projected_io_time_ns"] = round_to(projected_io_ns, 0.001);
  out["projected_simulated_time_ns"] =
      round_to(ps_to_ns(elapsed - (io_end - io_start)) + projected_io_ns, 0.001);
  // The run ended at the stop: the I/Os issued and not completed there were
  // not simulated further (stopped_before_drain), and each SSD says how
  // many of them it held (ssds.<id>.undrained_at_stop).
  out["drain"] = workload.stopped_before_drain() ? "not simulated" : "simulated";
  out["in_flight_at_stop"] = workload.ios() - workload.completed();
  out["stopped_at_ns"] = round_to(ps_to_ns(elapsed), 0.001);
  out["segment"] =
      "summary.iops, bandwidth_gbps and latency_ns are the steady state's (the post-warm-up "
      "completions until the stop); every other count is the simulated segment's, which ends "
      "at the stop (stopped_at_ns): submitted counts the I/Os issued, ios and errors those "
      "that completed before the stop, in_flight_at_stop the rest (submitted - ios - errors), "
      "never simulated to completion; bytes, io_time_ns, mean_in_flight, stages, fio and the "
      "gpus' counts cover the completed I/Os; simulated_time_ns, events, ssds and pcie cover "
      "the simulated time, in which the in-flight I/Os did part of their work";
  summary["iops"] = round_to(steady.ios_per_s, 0.001);
  summary["bandwidth_gbps"] = round_to(steady.ios_per_s * bytes_per_io / 1e9, 1e-6);
  summary["latency_ns"] = steady.latency->summary_ns();
  return out;
}

// What fast mode approximates, one line each, in every fast result
// (README, Fast mode, says each precisely); run-length control reports itself
// in summary.run_length.
nlohmann::json fast_approximations() {
  return nlohmann::json::array({
      "warps run up to fast_quantum_ns ahead of the kernel: their loads may miss writes made "
      "in between; atomics, stores, waits, PCIe reads and doorbells wait for the warp's time",
      "GPU issue slots and L2 atomic units take bookings out of time order",
      "a herd of waiters on one CQ is settled without waking the losers; what waking to lose "
      "costs is charged to them",
      "a PCIe burst's arrival at a target other than host or CXL memory is booked at its last "
      "stage, not in an event of its own: same delivery times, same-time order may differ",
  });
}

}  // namespace

nlohmann::json run(const RunConfig& config, const RunOptions& options) {
  if (config.tenants) return run_tenants(config, options);
  const auto wall_start = std::chrono::steady_clock::now();
  check_workload(config);
  check_fabric_paths(config);
  Simulation simulation;
  Machine machine(config.topology);
  const ScenarioParams scenario = ScenarioParams::from(config.scenario.params);
  if (scenario.fidelity == Fidelity::fast) {
    for (const auto& [id, gpu] : machine.gpus()) gpu->set_fast_mode(scenario.fast_quantum_ns);
    // A burst's arrival at its target is booked at its last stage (Fabric::set_fast_delivery).
    machine.fabric().set_fast_delivery(true);
  }
  std::unique_ptr<trace::TraceWriter> trace_writer;
  if (!options.trace_file.empty()) {
    trace_writer = std::make_unique<trace::TraceWriter>(
        options.trace_file, options.trace_limit_bytes, options.trace_window);
    trace_writer->set_sampler(ns_to_ps(options.trace_sample_ns),
                              trace::link_utilization_sampler(machine.fabric()));
    trace_writer->set_gpu(ScenarioParams::from(config.scenario.params).gpu);
    for (const auto& [id, ssd] : machine.ssds()) trace::observe_ssd_commands(*ssd, id);
  }
  const trace::ScopedTrace tracing(trace_writer.get());
  std::unique_ptr<Workload> workload = make_workload(config, machine);
  simulation.run();
  const Picoseconds elapsed = Simulation::now();
  // Every command an SSD fetched completed, unless run-length control ended
  // the run at its stop: then what each SSD holds is counted and reported.
  const bool undrained = workload->stopped_before_drain();
  nlohmann::json undrained_ssds = nlohmann::json::object();
  for (const auto& [id, ssd] : machine.ssds()) {
    if (!undrained) {
      ssd->check_drained();
      continue;
    }
    const nvme::Controller::Undrained held = ssd->undrained();
    if (held.admin != 0) {
      throw std::runtime_error(
          fmt::format("{}: {} admin commands outstanding at the run-length stop", id, held.admin));
    }
    undrained_ssds[id] = {{"fetched", held.fetched}, {"rung_not_fetched", held.unfetched}};
  }

  require_complete(*workload, "");
  if (undrained) {
    // An SSD's undrained commands are issued I/Os that did not complete.
    std::uint64_t held = 0;
    for (const auto& [id, counts] : undrained_ssds.items()) {
      held +=
          counts["fetched"].get<std::uint64_t>() + counts["rung_not_fetched"].get<std::uint64_t>();
    }
    const std::uint64_t in_flight = workload->ios() - workload->completed();
    if (held > in_flight) {
      throw std::runtime_error(
          fmt::format("the SSDs hold {} commands at the run-length stop, but only {} I/Os were "
                      "in flight",
                      held, in_flight));
    }
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  nlohmann::json result;
  result["schema"] = "gpunvme.result/1";
  result["gpunvme"] = build_info_json();
  result["config"] = config.to_json();
  nlohmann::json figures = workload_figures(*workload, config, elapsed);
  result["summary"] = figures["summary"];
  result["summary"]["events"] = Simulation::events();
  result["summary"]["events_by_kind"] = events_by_kind();
  result["summary"]["wall_time_s"] = round_to(wall, 1e-6);
  if (scenario.fidelity == Fidelity::fast) {
    // Said in the result itself, not only in its config: these figures are
    // approximations of exact mode's (README, Fast mode).
    result["summary"]["fidelity"] = "fast";
    result["summary"]["fast_quantum_ns"] = ps_to_ns(scenario.fast_quantum_ns);
    result["summary"]["fast_approximations"] = fast_approximations();
    result["summary"]["run_length"] =
        apply_run_length(*workload, config, result["summary"], elapsed);
  }
  nlohmann::json stage_json = figures["stages"];
  LatencyHistogram fetch, service;
  nlohmann::json ssds = nlohmann::json::object();
  for (const auto& [id, ssd] : machine.ssds()) {
    fetch.merge(ssd->fetch_wait());
    service.merge(ssd->service());
    ssds[id] = ssd->statistics(elapsed);
    if (undrained) ssds[id]["undrained_at_stop"] = undrained_ssds[id];
  }
  // The GPU path's error handling through the host (error_policy).
  const nlohmann::json error_handling = workload->error_handling();
  if (!error_handling.is_null()) {
    result["summary"]["error_handling"] = error_handling.at("summary");
    for (const auto& [id, figures] : error_handling.at("ssds").items()) {
      ssds[id]["error_handling"] = figures;
    }
  }
  stage_json["ssd_fetch_wait"] = fetch.summary_ns();
  stage_json["ssd_service"] = service.summary_ns();
  result["stages"] = stage_json;
  // The order an I/O passes the stages (JSON objects keep keys sorted): the
  // path's, then the SSD's own breakdown of completion_wait, then the whole.
  nlohmann::json order = workload->stage_order();
  for (const char* name : {"ssd_fetch_wait", "ssd_service", "end_to_end"}) order.push_back(name);
  result["stage_order"] = order;
  result["fio"] = figures["fio"];
  result["ssds"] = ssds;
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [id, gpu] : machine.gpus()) {
    const platform::WarpCounters& c = workload->counters();
    gpus[id] = {{"atomics", gpu->atomics()},
                {"atomic_queueing_ns", round_to(ps_to_ns(gpu->atomic_queueing_ps()), 0.001)},
                {"polls", c.polls},
                {"wait_ns", round_to(ps_to_ns(c.wait_ps), 0.001)},
                {"fences", c.fences},
                {"mmio_stores", c.mmio_stores},
                {"pcie_stores", c.pcie_stores},
                {"pcie_loads", c.pcie_loads},
                {"instructions", c.instructions},
                {"divergent_paths", c.divergent_paths},
                {"issue_stall_ns", round_to(ps_to_ns(gpu->issue_stall_ps()), 0.001)},
                {"sleep_ns", round_to(ps_to_ns(c.sleep_ps), 0.001)},
                {"lane_loop_iterations", c.lane_loop_iterations},
                {"lane_loop_ns", round_to(ps_to_ns(c.lane_loop_ps), 0.001)}};
    nlohmann::json profile = nlohmann::json::object();
    for (int k = 0; k < platform::kProfiledOps; ++k) {
      profile[platform::kProfiledOpNames[k]] = {{"ns", round_to(ps_to_ns(c.op_ps[k]), 0.001)},
                                                {"calls", c.op_calls[k]}};
    }
    gpus[id]["op_profile"] = profile;
  }
  result["gpus"] = gpus;
  // Links by direction (utilization, bytes by TLP class, overhead, credit stalls), root
  // complexes (fabric load, IOTLB hits and misses), host memory, read-tag waits.
  result["pcie"] = machine.fabric().report(elapsed);
  result["pcie"]["dma_engines"] = machine.dma_engines();
  result["paths"] = paths_json(machine, config);
  result.update(workload->sections(elapsed));
  if (trace_writer) {
    nlohmann::json metadata = trace_metadata(config, elapsed);
    // The trace holds the I/Os that completed; those in flight at a
    // run-length stop have no end in it.
    if (undrained) metadata["in_flight_at_stop"] = workload->ios() - workload->completed();
    trace_writer->finish(metadata);
  }
  return result;
}

namespace {
// A tenant's figures as a result of its own (for its summary table or terse
// line).
nlohmann::json tenant_view(const nlohmann::json& result, const nlohmann::json& tenant) {
  const nlohmann::json& cfg = result.at("config");
  nlohmann::json view = tenant;
  view["config"] = {{"scenario", {{"name", tenant.at("name")}}},
                    {"topology", {{"name", cfg.at("topology").at("name")}}},
                    {"seed", cfg.at("seed")}};
  view["summary"]["wall_time_s"] = 0.0;
  view["summary"]["events"] = 0;
  view["paths"] = nlohmann::json::array();
  return view;
}

std::string tenants_summary_table(const nlohmann::json& result) {
  std::ostringstream out;
  const nlohmann::json& s = result.at("summary");
  const nlohmann::json& cfg = result.at("config");
  out << fmt::format("scenario {} on topology {} (seed {}): {} tenants\n",
                     cfg["scenario"]["name"].get<std::string>(),
                     cfg["topology"]["name"].get<std::string>(), cfg["seed"].get<std::uint64_t>(),
                     s["tenants"].get<std::uint64_t>());
  out << fmt::format("  {} I/Os ({} errors) in {:.3f} us simulated, {:.3f} s wall, {} events\n",
                     s["submitted"].get<std::uint64_t>(), s["failed"].get<std::uint64_t>(),
                     s["simulated_time_ns"].get<double>() / 1000.0, s["wall_time_s"].get<double>(),
                     s["events"].get<std::uint64_t>());
  out << fmt::format("  {:<12} {:<14} {:<9} {:>10} {:>9} {:>10} {:>10} {:>10}\n", "tenant", "path",
                     "priority", "KIOPS", "GB/s", "mean ns", "p99 ns", "slowdown");
  for (const nlohmann::json& t : result.at("tenants")) {
    const nlohmann::json& ts = t["summary"];
    out << fmt::format(
        "  {:<12} {:<14} {:<9} {:>10.1f} {:>9.3f} {:>10.1f} {:>10.1f} {:>10}\n",
        t["name"].get<std::string>(), ts["path"].get<std::string>(),
        t["priority"].get<std::string>(), ts["iops"].get<double>() / 1000.0,
        ts["bandwidth_gbps"].get<double>(), ts["latency_ns"]["mean"].get<double>(),
        ts["latency_ns"]["p99"].get<double>(),
        t.contains("alone") ? fmt::format("{:.3f}", t["alone"]["slowdown"].get<double>()) : "-");
  }
  const nlohmann::json& f = result.at("fairness");
  out << fmt::format(
      "  fairness: Jain's index {:.4f} over throughput / weight; p99 {:.1f} ns ({}) "
      "to {:.1f} ns ({}), ratio {:.3f}\n",
      f["jain_index"].get<double>(), f["max_p99_ns"].get<double>(),
      f["max_p99_tenant"].get<std::string>(), f["min_p99_ns"].get<double>(),
      f["min_p99_tenant"].get<std::string>(), f["p99_ratio"].get<double>());
  return out.str();
}
}  // namespace

std::string summary_table(const nlohmann::json& result) {
  if (result.contains("tenants")) return tenants_summary_table(result);
  std::ostringstream out;
  const nlohmann::json& s = result.at("summary");
  const nlohmann::json& cfg = result.at("config");
  out << fmt::format("scenario {} on topology {} (seed {})\n",
                     cfg["scenario"]["name"].get<std::string>(),
                     cfg["topology"]["name"].get<std::string>(), cfg["seed"].get<std::uint64_t>());
  out << fmt::format("  path {}, strategy {}\n", s["path"].get<std::string>(),
                     s["strategy"].get<std::string>());
  // I/Os submitted, of which `errors` failed (and count in no throughput figure).
  out << fmt::format("  {} I/Os ({} errors) in {:.3f} us simulated, {:.3f} s wall, {} events\n",
                     s["submitted"].get<std::uint64_t>(), s["failed"].get<std::uint64_t>(),
                     s["simulated_time_ns"].get<double>() / 1000.0, s["wall_time_s"].get<double>(),
                     s["events"].get<std::uint64_t>());
  out << fmt::format("  {:.1f} KIOPS, {:.3f} GB/s\n", s["iops"].get<double>() / 1000.0,
                     s["bandwidth_gbps"].get<double>());
  if (s.contains("fidelity")) {
    out << fmt::format(
        "  fidelity fast (quantum {} ns): approximates exact mode, for sweeps (README, Fast "
        "mode)\n",
        s["fast_quantum_ns"].dump());
    const nlohmann::json rl = s.value("run_length", nlohmann::json::object());
    if (rl.value("applied", false)) {
      out << fmt::format(
          "  run length: {} requested I/Os answered from {} simulated ({} warm-up, stop at "
          "{:.3f} us); steady-state IOPS +-{:.2f} %, mean latency +-{:.2f} % (95 %); projected "
          "I/O time {:.3f} us; other counts are the simulated segment's, {} I/Os in flight at "
          "the stop not simulated to completion\n",
          rl["requested_ios"].get<std::uint64_t>(), rl["simulated_ios"].get<std::uint64_t>(),
          rl["warmup_ios"].get<std::uint64_t>(), rl["stop_time_ns"].get<double>() / 1000.0,
          rl["ci_half_width"]["iops"].get<double>() * 100.0,
          rl["ci_half_width"]["latency_mean"].get<double>() * 100.0,
          rl["projected_io_time_ns"].get<double>() / 1000.0,
          rl["in_flight_at_stop"].get<std::uint64_t>());
    } else if (rl.contains("reason")) {
      out << fmt::format("  run length: every I/O simulated ({})\n",
                         rl["reason"].get<std::string>());
    }
  }
  if (s["failed"].get<std::uint64_t>() != 0) {
    out << fmt::format(
        "  {} failed ({} timed out, {} aborted by a controller reset); throughput counts the {} "
        "that succeeded\n",
        s["failed"].get<std::uint64_t>(), s["timeouts"].get<std::uint64_t>(),
        s["reset_aborted"].get<std::uint64_t>(), s["ios"].get<std::uint64_t>());
  }
  // The scenario kind's own figures (tokens/s, traversal time, lookups/s).
  for (const char* key : {"tokens_per_s", "mean_stall_ns", "traversal_time_ns", "cache_hit_rate",
                          "lookups_per_s", "reads", "writes", "data_complete"}) {
    if (s.contains(key)) out << fmt::format("  {}: {}\n", key, s[key].dump());
  }
  out << fmt::format("  {:<18} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "stage (ns)", "mean", "p50",
                     "p99", "p999", "max");
  const nlohmann::json& stages = result.at("stages");
  std::vector<std::string> order;
  if (result.contains("stage_order")) order = result["stage_order"].get<std::vector<std::string>>();
  for (const auto& [name, h] : stages.items()) {
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
  }
  for (const std::string& name : order) {
    if (!stages.contains(name)) continue;
    const nlohmann::json& h = stages[name];
    if (h["count"].get<std::uint64_t>() == 0) continue;
    out << fmt::format("  {:<18} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n", name,
                       h["mean"].get<double>(), h["p50"].get<double>(), h["p99"].get<double>(),
                       h["p999"].get<double>(), h["max"].get<double>());
  }
  if (result.contains("fio")) {
    const nlohmann::json& fio = result["fio"];
    out << fmt::format("  {:<18} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "fio (ns)", "min", "mean",
                       "stdev", "max", "count");
    for (const char* key : {"slat", "clat", "lat"}) {
      const nlohmann::json& h = fio[std::string(key) + "_ns"];
      out << fmt::format("  {:<18} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10}\n", key,
                         h["min"].get<double>(), h["mean"].get<double>(), h["stdev"].get<double>(),
                         h["max"].get<double>(), h["count"].get<std::uint64_t>());
    }
    if (fio["ramp_ios"].get<std::uint64_t>() != 0) {
      out << fmt::format("  ramp_time: {} I/Os completed before {:.3f} us are left out\n",
                         fio["ramp_ios"].get<std::uint64_t>(),
                         fio["ramp_end_ns"].get<double>() / 1000.0);
    }
  }
  for (const auto& path : result.at("paths")) {
    std::string route;
    for (const auto& hop : path["route"]) {
      route += (route.empty() ? "" : " -> ") + hop.get<std::string>();
    }
    out << fmt::format("  path {} -> {}: {} ({})\n", path["from"].get<std::string>(),
                       path["to"].get<std::string>(), path["kind"].get<std::string>(), route);
  }
  return out.str();
}

std::string terse_line(const nlohmann::json& result) {
  if (result.contains("tenants")) {
    // One line per tenant, its name in the scenario field.
    std::string lines;
    for (const nlohmann::json& t : result.at("tenants"))
      lines += terse_line(tenant_view(result, t));
    return lines;
  }
  const nlohmann::json& s = result.at("summary");
  const nlohmann::json& cfg = result.at("config");
  std::vector<std::string> fields = {
      "gpunvme",
      "1",
      cfg["scenario"]["name"].get<std::string>(),
      cfg["topology"]["name"].get<std::string>(),
      std::to_string(cfg["seed"].get<std::uint64_t>()),
      s["path"].get<std::string>(),
      s["strategy"].get<std::string>(),
      std::to_string(s["submitted"].get<std::uint64_t>()),
      std::to_string(s["ios"].get<std::uint64_t>()),
      std::to_string(s["failed"].get<std::uint64_t>()),
      fmt::format("{:.3f}", s["iops"].get<double>()),
      fmt::format("{:.6f}", s["bandwidth_gbps"].get<double>()),
      fmt::format("{:.3f}", s["io_time_ns"].get<double>()),
      fmt::format("{:.6f}", s["mean_in_flight"].get<double>()),
  };
  const nlohmann::json& fio = result.at("fio");
  for (const char* key : {"slat_ns", "clat_ns", "lat_ns"}) {
    for (const char* figure : {"min", "max", "mean", "stdev"}) {
      fields.push_back(fmt::format("{:.3f}", fio[key][figure].get<double>()));
    }
  }
  // By percentile, not by key (the JSON object sorts "10.000000" before
  // "5.000000").
  std::vector<std::pair<double, std::string>> points;
  for (const auto& [percent, value] : fio["clat_ns"]["percentile"].items()) {
    points.emplace_back(std::stod(percent),
                        fmt::format("{}%={:.3f}", percent, value.get<double>()));
  }
  std::sort(points.begin(), points.end());
  for (const auto& point : points) fields.push_back(point.second);
  std::string line;
  for (const std::string& field : fields) line += (line.empty() ? "" : ";") + field;
  return line + "\n";
}

}  // namespace gpunvme
