#include "sim/system/workload/workload.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "models/nvme/ssd_params.h"
#include "models/pcie/routing.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/trace/trace_writer.h"
#include "sim/system/workload/address_stream.h"
#include "sim/system/workload/gather.h"
#include "sim/system/workload/gpu_io_path.h"
#include "sim/system/workload/graph_bfs.h"
#include "sim/system/workload/kv_cache.h"
#include "sim/system/workload/microbenchmark.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

// The microbenchmark's own warp loop covers these patterns; randrw and zipf
// go through the request-driven GPU path.
bool classic_microbenchmark(const ScenarioParams& s) {
  return s.rw != Pattern::RandRW && s.distribution != Distribution::Zipf;
}

// The scenario with every declared field present (the kind's pruned ones
// at their defaults) and some fields replaced: what the microbenchmark's
// checks expect to read.
RunConfig check_view(const RunConfig& config, const nlohmann::json& replace) {
  RunConfig view = config;
  nlohmann::json values = nlohmann::json::object();
  for (const ParamSpec& p : scenario_spec().params) values[p.name] = p.default_value;
  for (auto it = config.scenario.params.json().begin(); it != config.scenario.params.json().end();
       ++it) {
    values[it.key()] = it.value();
  }
  for (auto it = replace.begin(); it != replace.end(); ++it) values[it.key()] = it.value();
  view.scenario.params = ParamValues(values);
  return view;
}

// Limits of the SSDs an I/O of `bytes` (the scenario's bs) must respect.
void check_ssd_io(const RunConfig& config, std::uint64_t bytes) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  for (const std::string& id : s.ssds) {
    const nvme::SsdParams ssd = nvme::SsdParams::from(config.topology.node(id)->params);
    const auto queues = s.queues;
    if (queues > ssd.max_io_queues) {
      throw ConfigError(
          file, "$.queues", std::to_string(queues),
          fmt::format("{} grants at most {} I/O queues (max_io_queues)", id, ssd.max_io_queues));
    }
    const auto entries = s.queue_entries;
    if (entries > ssd.mqes) {
      throw ConfigError(
          file, "$.queue_entries", std::to_string(entries),
          fmt::format("{} accepts queues of at most {} entries (mqes)", id, ssd.mqes));
    }
    const auto lba = static_cast<std::uint64_t>(ssd.lba_bytes);
    const auto bs = s.bs;
    if (bytes % lba != 0) {
      throw ConfigError(
          file, "$.bs", std::to_string(bs),
          fmt::format("I/Os of {} B are not a multiple of {}'s {} B LBAs", bytes, id, lba));
    }
    const auto mdts = ssd.mdts;
    if (mdts != 0 && bytes > (4096ull << mdts)) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("I/Os of {} B exceed {}'s maximum transfer of {} B (mdts {})",
                                    bytes, id, 4096ull << mdts, mdts));
    }
    if (bytes > 4096ull * 513) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("I/Os of {} B exceed what one PRP list page describes (513 "
                                    "pages of 4 KiB)",
                                    bytes));
    }
  }
}

// A host_memory or cxl_memory node that holds host data of the CPU-initiated paths (`field`:
// host_buffers for the bounce path's staging buffers, host_queues for the driver's queues and
// the GPU's request rings), which every one of `users` must reach through the router's ACS and
// IOMMU rules.
static void check_host_placement(const RunConfig& config, const TopologyGraph& graph,
                                 const pcie::Router& router, const std::string& field,
                                 const std::string& id, const std::vector<std::string>& users) {
  if (id.empty()) return;
  const std::string& file = config.scenario.file;
  const std::string value = "\"" + id + "\"";
  const TopologyConfig& topo = config.topology;
  const NodeConfig* node = topo.node(id);
  if (node == nullptr || (node->kind != "host_memory" && node->kind != "cxl_memory")) {
    throw ConfigError(file, "$." + field, value,
                      "expected the id of a host_memory or cxl_memory node in the topology");
  }
  auto index = [&](const std::string& n) {
    return static_cast<std::size_t>(topo.node(n) - topo.nodes.data());
  };
  const std::size_t memory = index(id);
  for (const std::string& user : users) {
    if (graph.route(index(user), memory).empty()) {
      throw ConfigError(file, "$." + field, value, fmt::format("{} has no route to {}", user, id));
    }
    router.require_path(index(user), memory);
  }
}

// The CPU-initiated paths need a host: memory for queues and buffers, a CPU
// whose cores run them, and routes for their traffic.
void check_cpu_path(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const TopologyConfig& topo = config.topology;
  if (topo.nodes_of_kind("host_memory").empty()) {
    throw ConfigError(file, "$.path", "\"" + enum_name(s.path) + "\"",
                      "the CPU-initiated paths need a host_memory node in the topology");
  }
  const std::string& cpu = s.cpu;
  if (!cpu.empty()) {
    const NodeConfig* node = topo.node(cpu);
    if (node == nullptr || node->kind != "cpu") {
      throw ConfigError(file, "$.cpu", "\"" + cpu + "\"",
                        "expected the id of a cpu node in the topology");
    }
  }
  TopologyGraph graph(topo);
  pcie::Router router(topo, graph);
  auto index = [&](const std::string& id) {
    return static_cast<std::size_t>(topo.node(id) - topo.nodes.data());
  };
  for (const std::string& ssd : s.ssds) {
    bool reachable = false;
    for (const NodeConfig* memory : topo.nodes_of_kind("host_memory")) {
      if (!graph.route(index(memory->id), index(ssd)).empty()) reachable = true;
    }
    if (!reachable) {
      throw ConfigError(file, "$.ssds", "\"" + ssd + "\"",
                        "no host memory can reach this SSD for its queues");
    }
  }
  // The SSDs DMA into the staging buffers and the GPU's copy engine reads them; the SSDs
  // fetch commands from the queues and post completions there, and a GPU that originates
  // requests writes them into rings beside the queues.
  std::vector<std::string> buffer_users = s.ssds;
  buffer_users.push_back(s.gpu);
  check_host_placement(config, graph, router, "host_buffers", s.host_buffers, buffer_users);
  std::vector<std::string> queue_users = s.ssds;
  if (s.request_origin == RequestOrigin::gpu) queue_users.push_back(s.gpu);
  check_host_placement(config, graph, router, "host_queues", s.host_queues, queue_users);
}

class MicrobenchmarkWorkload : public Workload {
 public:
  MicrobenchmarkWorkload(const char* name, const RunConfig& config, Machine& machine)
      : config_(config), bench_(name, config, machine) {
    if (trace::TraceWriter* t = trace::active()) {
      const auto ssds = ScenarioParams::from(config.scenario.params).ssds;
      t->set_queue_namer([ssds](std::uint32_t trace_id) {
        return std::pair<std::string, std::uint32_t>(
            ssds[trace_id % ssds.size()], static_cast<std::uint32_t>(trace_id / ssds.size() + 1));
      });
    }
  }
  std::string path() const override { return "gpu_initiated"; }
  std::string strategy() const override { return bench_.plan().name; }
  std::uint64_t ios() const override { return bench_.ios(); }
  std::uint64_t completed() const override { return bench_.stages().completed(); }
  std::uint64_t errors() const override { return bench_.errors(); }
  std::uint64_t timeouts() const override { return bench_.timeouts(); }
  std::uint64_t reset_aborted() const override { return bench_.reset_aborted(); }
  std::uint64_t bytes() const override {
    return (completed() - bench_.errors()) * bench_.bytes_per_io();
  }
  const LatencyHistogram& end_to_end() const override { return bench_.stages().end_to_end(); }
  nlohmann::json stages() const override { return bench_.stages().stages_json(); }
  std::vector<std::string> stage_order() const override { return StageRecorder::stage_order(); }
  const FioLatency& fio_latency() const override { return bench_.stages().fio_latency(); }
  const platform::WarpCounters& counters() const override { return bench_.counters(); }
  bool finished() const override { return completed() == ios(); }
  Picoseconds started_at() const override { return bench_.started_at(); }
  Picoseconds finished_at() const override { return bench_.stages().last_delivered(); }
  nlohmann::json error_handling() const override { return bench_.error_handling(); }
  const RunLengthController* run_length() const override { return bench_.run_length(); }
  std::uint64_t requested_ios() const override { return bench_.requested(); }
  bool stopped_before_drain() const override { return bench_.stopped_before_drain(); }

 private:
  const RunConfig& config_;
  Microbenchmark bench_;
};

// How long a microbenchmark runs, as fio says it: a number of I/Os (ios,
// fio's number_ios), or bytes (io_size, fio's io_size: it becomes ios =
// io_size / bs), optionally capped by runtime_us; time_based runs for the
// whole runtime whatever ios says. io_size replaces ios (the resolved
// scenario shows the ios it gave) so that it can be set over a scenario file
// that names ios.
void resolve_run_length(const std::string& file, nlohmann::json& values) {
  const auto io_size = values.at("io_size").get<std::int64_t>();
  const auto bs = values.at("bs").get<std::int64_t>();
  if (io_size > 0) {
    if (io_size % bs != 0) {
      throw ConfigError(file, "$.io_size", std::to_string(io_size),
                        fmt::format("a multiple of bs ({} B): whole I/Os", bs));
    }
    values["ios"] = io_size / bs;
  }
  const auto complete_min = values.at("iodepth_batch_complete_min").get<std::int64_t>();
  const auto complete_max = values.at("iodepth_batch_complete_max").get<std::int64_t>();
  if (complete_max != 0 && complete_max < complete_min) {
    throw ConfigError(file, "$.iodepth_batch_complete_max", std::to_string(complete_max),
                      fmt::format("at least iodepth_batch_complete_min ({}), or 0 for the same: "
                                  "a reap takes at least the completions it waited for",
                                  complete_min));
  }
  if (values.at("time_based").get<bool>() && !(values.at("runtime_us").get<double>() > 0)) {
    throw ConfigError(file, "$.time_based", "true",
                      "needs runtime_us > 0: a time-based run lasts runtime_us (fio's "
                      "time_based with runtime)");
  }
}

}  // namespace

nlohmann::json Workload::summary(Picoseconds) const { return nlohmann::json::object(); }
nlohmann::json Workload::sections(Picoseconds) const { return nlohmann::json::object(); }
nlohmann::json Workload::error_handling() const { return nullptr; }

double Workload::mean_in_flight(Picoseconds io_time) const {
  const LatencyHistogram& latency = end_to_end();
  if (io_time == 0) return 0.0;
  return latency.mean() * static_cast<double>(latency.count()) / static_cast<double>(io_time);
}

void apply_scenario_kind(const nlohmann::json& given, RunConfig& config) {
  const std::string& kind = enum_name(ScenarioParams::from(config.scenario.params).kind);
  auto belongs = [&](const std::string& field) {
    const auto& kinds = field_kinds(field);
    return kinds.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  };
  if (given.is_object()) {
    for (auto it = given.begin(); it != given.end(); ++it) {
      if (belongs(it.key())) continue;
      std::string kinds;
      for (const std::string& k : field_kinds(it.key())) kinds += (kinds.empty() ? "" : ", ") + k;
      throw ConfigError(
          config.scenario.file, child_path("$", it.key()), render_value(it.value()),
          fmt::format("applies to kind {} only; this scenario's kind is {}", kinds, kind));
    }
  }
  nlohmann::json kept = nlohmann::json::object();
  for (auto it = config.scenario.params.json().begin(); it != config.scenario.params.json().end();
       ++it) {
    if (belongs(it.key())) kept[it.key()] = it.value();
  }
  if (kind == "microbenchmark") resolve_run_length(config.scenario.file, kept);
  config.scenario.params = ParamValues(kept);
}

void check_workload(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const ScenarioKind kind = s.kind;
  const bool gpu_initiated = s.path == IoPathKind::gpu_initiated;
  if (!s.host_buffers.empty() && s.path != IoPathKind::bounce) {
    throw ConfigError(config.scenario.file, "$.host_buffers", "\"" + s.host_buffers + "\"",
                      fmt::format("host_buffers places the bounce path's staging buffers; path "
                                  "{} keeps no data in a host buffer (use path bounce, or leave "
                                  "host_buffers empty)",
                                  enum_name(s.path)));
  }
  if (!s.host_queues.empty() && s.path != IoPathKind::gds && s.path != IoPathKind::bounce) {
    throw ConfigError(config.scenario.file, "$.host_queues", "\"" + s.host_queues + "\"",
                      fmt::format("host_queues places the host driver's queues of the gds and "
                                  "bounce paths; path {} has no host-driven queues of its own "
                                  "(use path gds or bounce, or leave host_queues empty)",
                                  enum_name(s.path)));
  }
  std::uint64_t max_io = static_cast<std::uint64_t>(s.bs);
  if (kind == ScenarioKind::kv_cache) max_io = check_kv_cache(config);
  if (kind == ScenarioKind::graph) max_io = check_graph(config);
  if (kind == ScenarioKind::gather) max_io = check_gather(config);
  // The GPU's own fio loop (MicrobenchmarkWorkload); make_workload's choice.
  const bool own_loop = gpu_initiated && classic_microbenchmark(s) && !config.qos.rate_limited();
  if (kind == ScenarioKind::microbenchmark && !own_loop) {
    // Only the microbenchmark's own warp loop builds queues with these
    // options; elsewhere they would be silently ignored.
    if (s.sq_placement != SqPlacement::gpu) {
      throw ConfigError(config.scenario.file, "$.sq_placement",
                        "\"" + enum_name(s.sq_placement) + "\"",
                        "only gpu_initiated microbenchmarks with rw other than randrw and a "
                        "uniform or sequential distribution place SQs; allowed here: gpu");
    }
    if (s.shadow_doorbells) {
      throw ConfigError(config.scenario.file, "$.shadow_doorbells", "true",
                        "only gpu_initiated microbenchmarks with rw other than randrw and a "
                        "uniform or sequential distribution use shadow doorbells; allowed "
                        "here: false");
    }
  }
  if (!gpu_initiated && s.error_policy != ErrorPolicy::none) {
    // The host paths' driver handles its errors itself; the error mailbox
    // is the GPU threads' way to it.
    throw ConfigError(config.scenario.file, "$.error_policy",
                      "\"" + enum_name(s.error_policy) + "\"",
                      "only gpu_initiated hands errors to the host through the error mailbox; "
                      "allowed on " +
                          enum_name(s.path) + ": none");
  }
  if (gpu_initiated && s.error_policy != ErrorPolicy::none && strategy_plan(config).agents) {
    throw ConfigError(config.scenario.file, "$.error_policy",
                      "\"" + enum_name(s.error_policy) + "\"",
                      "the error mailbox needs threads that consume their own completions; "
                      "with io_agents the agents consume them; allowed with io_agents: none");
  }
  if (gpu_initiated && s.error_policy != ErrorPolicy::none && s.iodepth > 1) {
    // A failed command keeps its SQ slot until the host's verdict, and a
    // warp resolves a round's errors once the round is in: with several
    // rounds in flight, a warp could wait for a command queued behind a slot
    // it holds itself.
    throw ConfigError(config.scenario.file, "$.iodepth", std::to_string(s.iodepth),
                      "error_policy " + enum_name(s.error_policy) +
                          " holds a failed command's SQ slot until the host's verdict, which a "
                          "warp with several rounds in flight could wait on itself; allowed "
                          "with error_policy fail or retry: 1");
  }
  if (!gpu_initiated) {
    check_ssd_io(config, static_cast<std::uint64_t>(s.bs));
    check_ssd_io(config, max_io);
    check_cpu_path(config);
    return;
  }
  if (kind == ScenarioKind::microbenchmark && own_loop) {
    check_microbenchmark(config);
    return;
  }
  check_ssd_io(config, static_cast<std::uint64_t>(s.bs));
  // The request-driven GPU path maps like the microbenchmark's stripe
  // mapping: the request's SSD is given, the strategy picks the queue.
  check_microbenchmark(check_view(config, {{"bs", max_io},
                                           {"rw", "randread"},
                                           {"distribution", "uniform"},
                                           {"ssd_mapping", "stripe"}}));
}

std::unique_ptr<Workload> make_workload(const RunConfig& config, Machine& machine) {
  return make_workload(config, machine, "workload");
}

std::unique_ptr<Workload> make_workload(const RunConfig& config, Machine& machine,
                                        const std::string& name) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const char* module = name.c_str();
  if (s.kind == ScenarioKind::kv_cache) {
    return std::make_unique<KvCacheWorkload>(module, config, machine);
  }
  if (s.kind == ScenarioKind::graph) {
    return std::make_unique<GraphWorkload>(module, config, machine);
  }
  if (s.kind == ScenarioKind::gather) {
    return std::make_unique<GatherWorkload>(module, config, machine);
  }
  // A rate-limited tenant's I/Os pass its token buckets on their way to the
  // path, so the request-driven loop issues them (the GPU's own fio loop
  // would bypass the buckets).
  if (s.path == IoPathKind::gpu_initiated && classic_microbenchmark(s) &&
      !config.qos.rate_limited()) {
    return std::make_unique<MicrobenchmarkWorkload>(module, config, machine);
  }
  return std::make_unique<FioWorkload>(module, config, machine);
}

// ---------------------------------------------------------------------------
// PathWorkload
// ---------------------------------------------------------------------------

PathWorkload::PathWorkload(const sc_core::sc_module_name& name, const RunConfig& config,
                           Machine& machine, std::uint64_t max_io_bytes)
    : Component(name, ParamValues{}),
      config_(config),
      machine_(machine),
      gpu_(machine.gpu(ScenarioParams::from(config.scenario.params).gpu)),
      ssd_ids_(ScenarioParams::from(config.scenario.params).ssds),
      io_(make_io_path(config, machine, max_io_bytes)) {
  if (trace::TraceWriter* t = trace::active()) {
    if (auto* gpu_path = dynamic_cast<GpuIoPath*>(io_.get())) {
      t->set_queue_namer(
          [gpu_path](std::uint32_t trace_id) { return gpu_path->queue_name(trace_id); });
    }
  }
  io_->start([this] {
    began_at_ = now();
    begin();
  });
}

nlohmann::json PathWorkload::error_handling() const {
  const auto* gpu_path = dynamic_cast<const GpuIoPath*>(io_.get());
  return gpu_path != nullptr ? gpu_path->error_handling() : nlohmann::json(nullptr);
}

void PathWorkload::done() {
  if (finished_) return;
  finished_ = true;
  done_at_ = now();
  io_->close();
}

// ---------------------------------------------------------------------------
// FioWorkload
// ---------------------------------------------------------------------------

struct FioWorkload::Thread {
  AddressStream stream;
  FioDepth depth;
  bool done = false;
};

FioWorkload::FioWorkload(const sc_core::sc_module_name& name, const RunConfig& config,
                         Machine& machine)
    : PathWorkload(name, config, machine,
                   static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).bs)) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  total_ios_ = static_cast<std::uint64_t>(s.ios);
  time_based_ = s.time_based;
  runtime_ = s.runtime_us;
  threads_ = static_cast<std::uint32_t>(s.threads);
  iodepth_ = static_cast<std::uint32_t>(s.iodepth);
  batching_ = FioBatching::resolve(s.iodepth, s.iodepth_batch_submit, s.iodepth_batch_complete_min,
                                   s.iodepth_batch_complete_max);
  ramp_time_ = s.ramp_time_us;
  bytes_per_io_ = static_cast<std::uint64_t>(s.bs);
  buffer_stride_ = round_up(bytes_per_io_, 4096);
  // Slots of bs bytes each SSD offers over the span; block b of the striped
  // space is slot b / ssds of SSD b mod ssds.
  std::uint64_t per_ssd = ~std::uint64_t{0};
  for (const std::string& id : ssd_ids_) {
    const nvme::Controller& ssd = machine.ssd(id);
    const double span_gib = s.span_gib;
    const std::uint64_t span_lbas =
        span_gib > 0 ? static_cast<std::uint64_t>(span_gib * (1ull << 30)) / ssd.lba_bytes()
                     : ssd.capacity_lbas();  // validation keeps span_gib within every SSD
    const auto lbas = static_cast<std::uint32_t>(bytes_per_io_ / ssd.lba_bytes());
    lbas_per_io_.push_back(lbas);
    per_ssd = std::min<std::uint64_t>(per_ssd, std::max<std::uint64_t>(1, span_lbas / lbas));
  }
  slots_ = per_ssd * ssd_ids_.size();
  const Pattern pattern = s.rw;
  const Distribution distribution = s.distribution;
  for (std::uint32_t t = 0; t < threads_; ++t) {
    auto thread = std::make_unique<Thread>(Thread{
        AddressStream(pattern, distribution, slots_, static_cast<std::uint32_t>(s.rwmixread),
                      s.zipf_theta, config.seed, t, threads_),
        FioDepth(batching_, time_based_
                                ? ~std::uint64_t{0}
                                : total_ios_ / threads_ + (t < total_ios_ % threads_ ? 1 : 0))});
    thread_state_.push_back(std::move(thread));
  }
  buffers_ = gpu_.allocate(std::uint64_t{threads_} * iodepth_ * buffer_stride_, 4096);
}

void FioWorkload::begin() {
  // fio counts runtime from when the job starts issuing, after setup.
  if (runtime_ > 0) deadline_ = now() + runtime_;
  // fio's ramp_time counts from the same start.
  if (ramp_time_ > 0) io().fio_latency().set_ramp_end(now() + ramp_time_);
  for (std::uint32_t t = 0; t < threads_; ++t) step(t);
}

void FioWorkload::step(std::uint32_t t) {
  Thread& thread = *thread_state_[t];
  // fio's runtime: past the deadline a thread issues nothing more.
  if (deadline_ != 0 && now() >= deadline_) thread.depth.stop_issuing();
  const std::vector<std::uint32_t> slots = thread.depth.step();
  if (thread.depth.finished()) {
    if (!thread.done) {
      thread.done = true;
      if (++threads_done_ == threads_) done();
    }
    return;
  }
  for (const std::uint32_t d : slots) {
    const AddressChoice choice = thread.stream.next();
    BlockIo request;
    request.ssd = static_cast<std::uint32_t>(choice.slot % ssd_ids_.size());
    request.lbas = lbas_per_io_[request.ssd];
    request.slba = choice.slot / ssd_ids_.size() * request.lbas;
    request.write = choice.write;
    request.buffer = buffers_ + (std::uint64_t{t} * iodepth_ + d) * buffer_stride_;
    request.issuer = t;
    ++(choice.write ? writes_ : reads_);
    this->io().submit(request, [this, t, d](std::uint16_t) {
      thread_state_[t]->depth.completed(d);
      step(t);
    });
  }
}

nlohmann::json FioWorkload::summary(Picoseconds) const {
  return {{"reads", reads_}, {"writes", writes_}};
}

}  // namespace gpunvme
