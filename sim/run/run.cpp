#include "sim/run/run.h"

#include <chrono>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "sim/config/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/run/catalog.h"
#include "sim/run/machine.h"
#include "sim/workload/microbenchmark.h"

namespace gpunvme {

namespace {
double round_to(double v, double unit) { return std::round(v / unit) * unit; }

// The path each device pair that exchanged data took, like nvidia-smi topo -p2p.
nlohmann::json paths_json(const Machine& machine, const RunConfig& config) {
  nlohmann::json paths = nlohmann::json::array();
  const auto& topo = machine.topology();
  const std::string& gpu = config.scenario.params.string("gpu");
  const std::size_t g = machine.node_index(gpu);
  for (const std::string& ssd : config.scenario.params.string_list("ssds")) {
    const std::size_t s = machine.node_index(ssd);
    nlohmann::json route = nlohmann::json::array();
    bool through_root = false;
    bool through_socket_link = false;
    const auto nodes = machine.graph().route(s, g);
    for (std::size_t v : nodes) {
      route.push_back(topo.nodes[v].id);
      if (topo.nodes[v].kind == "root_complex") through_root = true;
      if (topo.nodes[v].kind == "cpu") through_socket_link = true;
    }
    const char* kind = through_socket_link ? "SYS"    // across the CPU fabric
                       : through_root      ? "PHB"    // through a root complex
                                           : "PIX";   // within a switch
    paths.push_back({{"from", ssd}, {"to", gpu}, {"route", route}, {"kind", kind}});
  }
  return paths;
}
}  // namespace

RunConfig resolve_config(const RawConfig& raw) {
  RunConfig config = resolve(catalog(), raw);
  check_microbenchmark(config);
  return config;
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

nlohmann::json run(const RunConfig& config) {
  const auto wall_start = std::chrono::steady_clock::now();
  check_microbenchmark(config);
  Simulation simulation;
  Machine machine(config.topology);
  Microbenchmark workload("workload", config, machine);
  simulation.run();
  const Picoseconds elapsed = Simulation::now();
  for (const auto& [id, ssd] : machine.ssds()) ssd->check_drained();

  const StageRecorder& stages = workload.stages();
  const std::uint64_t done = stages.completed();
  if (done != workload.ios()) {
    throw std::runtime_error(fmt::format("run ended with {} of {} I/Os complete", done,
                                         workload.ios()));
  }
  const double seconds = static_cast<double>(elapsed) * 1e-12;
  const double iops = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  nlohmann::json result;
  result["schema"] = "gpunvme.result/1";
  result["config"] = config.to_json();
  nlohmann::json latency = stages.end_to_end().summary_ns();
  result["summary"] = {
      {"path", "gpu_initiated"},
      {"strategy", config.scenario.params.string("strategy")},
      {"ios", done},
      {"errors", workload.errors()},
      {"iops", round_to(iops, 0.001)},
      {"bandwidth_gbps", round_to(iops * static_cast<double>(workload.bytes_per_io()) / 1e9, 1e-6)},
      {"latency_ns", latency},
      {"simulated_time_ns", round_to(ps_to_ns(elapsed), 0.001)},
      {"events", Simulation::events()},
      {"wall_time_s", round_to(wall, 1e-6)},
  };
  nlohmann::json stage_json = stages.stages_json();
  LatencyHistogram fetch, service;
  nlohmann::json ssds = nlohmann::json::object();
  for (const auto& [id, ssd] : machine.ssds()) {
    fetch.merge(ssd->fetch_wait());
    service.merge(ssd->service());
    ssds[id] = ssd->statistics(elapsed);
  }
  stage_json["ssd_fetch_wait"] = fetch.summary_ns();
  stage_json["ssd_service"] = service.summary_ns();
  result["stages"] = stage_json;
  result["ssds"] = ssds;
  nlohmann::json gpus = nlohmann::json::object();
  for (const auto& [id, gpu] : machine.gpus()) {
    const platform::WarpCounters& c = workload.counters();
    gpus[id] = {{"atomics", gpu->atomics()},
                {"atomic_queueing_ns", round_to(ps_to_ns(gpu->atomic_queueing_ps()), 0.001)},
                {"polls", c.polls},
                {"wait_ns", round_to(ps_to_ns(c.wait_ps), 0.001)},
                {"fences", c.fences},
                {"mmio_stores", c.mmio_stores}};
  }
  result["gpus"] = gpus;
  result["pcie"] = {{"links", machine.fabric().statistics(elapsed)},
                    {"posted_write_tlps", machine.fabric().tlps(pcie::TlpClass::PostedWrite)},
                    {"read_request_tlps", machine.fabric().tlps(pcie::TlpClass::ReadRequest)},
                    {"completion_tlps", machine.fabric().tlps(pcie::TlpClass::Completion)}};
  result["paths"] = paths_json(machine, config);
  return result;
}

std::string summary_table(const nlohmann::json& result) {
  std::ostringstream out;
  const nlohmann::json& s = result.at("summary");
  const nlohmann::json& cfg = result.at("config");
  out << fmt::format("scenario {} on topology {} (seed {})\n",
                     cfg["scenario"]["name"].get<std::string>(),
                     cfg["topology"]["name"].get<std::string>(), cfg["seed"].get<std::uint64_t>());
  out << fmt::format("  path {}, strategy {}\n", s["path"].get<std::string>(),
                     s["strategy"].get<std::string>());
  out << fmt::format("  {} I/Os ({} errors) in {:.3f} us simulated, {:.3f} s wall, {} events\n",
                     s["ios"].get<std::uint64_t>(), s["errors"].get<std::uint64_t>(),
                     s["simulated_time_ns"].get<double>() / 1000.0,
                     s["wall_time_s"].get<double>(), s["events"].get<std::uint64_t>());
  out << fmt::format("  {:.1f} KIOPS, {:.3f} GB/s\n", s["iops"].get<double>() / 1000.0,
                     s["bandwidth_gbps"].get<double>());
  out << fmt::format("  {:<18} {:>10} {:>10} {:>10} {:>10} {:>10}\n", "stage (ns)", "mean", "p50",
                     "p99", "p999", "max");
  for (const auto& [name, h] : result.at("stages").items()) {
    if (h["count"].get<std::uint64_t>() == 0) continue;
    out << fmt::format("  {:<18} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f} {:>10.1f}\n", name,
                       h["mean"].get<double>(), h["p50"].get<double>(), h["p99"].get<double>(),
                       h["p999"].get<double>(), h["max"].get<double>());
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

}  // namespace gpunvme
