#include "sim/system/run/setup_checks.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "models/cxl/cxl_memory.h"
#include "models/flash/flash_params.h"
#include "models/gpu/gpu.h"
#include "models/network/network.h"
#include "models/nvme/fault_injector.h"
#include "models/nvme/ssd_params.h"
#include "models/topology/topology_graph.h"
#include "sim/core/algo/strategy_names.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/run/tenants.h"
#include "sim/system/workload/csr_graph.h"
#include "sim/system/workload/gather.h"
#include "sim/system/workload/graph_bfs.h"
#include "sim/system/workload/kv_cache.h"
#include "sim/system/workload/remote_io_path.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kPage = 4096;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

std::string mib(std::uint64_t bytes) { return fmt::format("{} MiB", (bytes + kMiB - 1) / kMiB); }

std::uint64_t ssd_capacity_bytes(const NodeConfig& ssd) {
  return flash::flash_params_from(ssd.params).capacity_bytes;
}

// The flit a cxl_memory node declares must be one its link's rate carries.
void check_cxl_link(const TopologyConfig& topo, std::size_t node) {
  const NodeConfig& memory = topo.nodes[node];
  for (const LinkConfig& link : topo.links) {
    if (link.from != memory.id && link.to != memory.id) continue;
    const pcie::LinkParams params = pcie::LinkParams::from(link.params);
    if (params.type != pcie::LinkType::pcie) continue;
    const auto flit = cxl::CxlMemoryParams::from(memory.params).flit_bytes;
    const std::string problem = cxl::link_problem(
        pcie::gen_from_number(static_cast<int>(params.gen)), static_cast<std::uint32_t>(flit));
    if (!problem.empty()) {
      throw ConfigError(topo.file, index_path("$.nodes", node) + ".flit_bytes",
                        std::to_string(flit), problem);
    }
  }
}

// A network switch's port buffer holds at least the largest packet of each
// of its cables (flow control admits whole packets), and its PFC thresholds
// are ordered within it.
void check_switch_buffers(const TopologyConfig& topo, std::size_t node) {
  const NodeConfig& sw = topo.nodes[node];
  const network::NetworkSwitchParams params = network::NetworkSwitchParams::from(sw.params);
  const std::string path = index_path("$.nodes", node);
  const auto buffer = static_cast<std::uint64_t>(params.port_buffer_bytes);
  if (params.pfc_xon_bytes > params.pfc_xoff_bytes) {
    throw ConfigError(topo.file, path + ".pfc_xon_bytes", std::to_string(params.pfc_xon_bytes),
                      fmt::format("expected at most pfc_xoff_bytes ({}): a paused sender "
                                  "resumes when the queue falls under pfc_xon_bytes",
                                  params.pfc_xoff_bytes));
  }
  if (static_cast<std::uint64_t>(params.pfc_xoff_bytes) > buffer) {
    throw ConfigError(topo.file, path + ".pfc_xoff_bytes", std::to_string(params.pfc_xoff_bytes),
                      fmt::format("expected at most port_buffer_bytes ({})", buffer));
  }
  for (std::size_t l = 0; l < topo.network_links.size(); ++l) {
    const LinkConfig& link = topo.network_links[l];
    if (link.from != sw.id && link.to != sw.id) continue;
    const network::NetworkLinkParams cable = network::NetworkLinkParams::from(link.params);
    const auto mtu = static_cast<std::uint32_t>(cable.mtu_bytes);
    // The largest packet: a full MTU of payload with an RDMA WRITE's RETH.
    const std::uint64_t largest =
        network::packet_wire_bytes(cable.protocol, network::RdmaOp::rdma_write, mtu, mtu, 0);
    if (buffer < largest) {
      throw ConfigError(
          topo.file, path + ".port_buffer_bytes", std::to_string(buffer),
          fmt::format("expected at least one packet of its cable $.network_links[{}] ({} B: "
                      "a {} B MTU with its headers)",
                      l, largest, mtu));
    }
  }
}

// What the SSD model (models/nvme/controller.cpp, models/flash) and the GPU
// model (models/gpu/gpu.cpp) refuse when they are built.
void check_devices(const TopologyConfig& topo) {
  for (std::size_t i = 0; i < topo.nodes.size(); ++i) {
    const NodeConfig& node = topo.nodes[i];
    const ParamValues& p = node.params;
    const std::string path = index_path("$.nodes", i);
    if (node.kind == "nvme_ssd") {
      try {
        flash::flash_params_from(p);
      } catch (const std::invalid_argument& e) {
        throw ConfigError(topo.file, path, "\"" + node.id + "\"",
                          std::string(e.what()) + " (the SSD's flash parameters)");
      }
      const nvme::SsdParams ssd = nvme::SsdParams::from(p);
      const auto cores = static_cast<std::size_t>(ssd.controller_cores);
      const std::vector<double>& scale = ssd.processor_time_scale;
      if (!scale.empty() && scale.size() != cores) {
        throw ConfigError(
            topo.file, path + ".processor_time_scale",
            render_value(p.json().at("processor_time_scale")),
            fmt::format("expected one entry per controller core ({}), or none", cores));
      }
      nvme::check_batch_time_scale(ssd, p, topo.file, path);
      if (ssd.shadow_doorbell_polling && !ssd.shadow_doorbells) {
        throw ConfigError(topo.file, path + ".shadow_doorbell_polling", "true",
                          "needs shadow_doorbells true: the controller polls the shadow "
                          "doorbells of Doorbell Buffer Config");
      }
      const std::vector<std::string>& faults = ssd.fault_schedule;
      for (std::size_t k = 0; k < faults.size(); ++k) {
        try {
          nvme::parse_scheduled_fault(faults[k]);
        } catch (const std::invalid_argument& e) {
          throw ConfigError(topo.file, index_path(path + ".fault_schedule", k),
                            "\"" + faults[k] + "\"", e.what());
        }
      }
    } else if (node.kind == "gpu") {
      const gpu::GpuParams gpu_params = gpu::GpuParams::from(p);
      const auto sms = static_cast<std::size_t>(gpu_params.sms);
      const std::vector<std::int64_t>& order = gpu_params.block_sm_order;
      if (!order.empty()) {
        std::vector<bool> seen(sms, false);
        bool permutation = order.size() == sms;
        for (std::size_t k = 0; permutation && k < order.size(); ++k) {
          const auto sm = static_cast<std::size_t>(order[k]);
          permutation = order[k] >= 0 && sm < sms && !seen[sm];
          if (permutation) seen[sm] = true;
        }
        if (!permutation) {
          throw ConfigError(topo.file, path + ".block_sm_order",
                            render_value(p.json().at("block_sm_order")),
                            fmt::format("expected each of the {} SMs once, or none", sms));
        }
      }
      const std::size_t partitions = gpu_params.sm_l2_partition.size();
      if (partitions != 0 && partitions != sms) {
        throw ConfigError(topo.file, path + ".sm_l2_partition",
                          render_value(p.json().at("sm_l2_partition")),
                          fmt::format("expected one entry per SM ({}), or none", sms));
      }
    } else if (node.kind == "cxl_memory") {
      check_cxl_link(topo, i);
    } else if (node.kind == "network_switch") {
      check_switch_buffers(topo, i);
    }
  }
}

// The microbenchmark addresses span_gib of every SSD; a span beyond a drive
// would address blocks it does not have.
void check_span(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  if (!(s.span_gib > 0)) return;
  const double span_gib = s.span_gib;
  const auto span_bytes = static_cast<std::uint64_t>(span_gib * (1ull << 30));
  const NodeConfig* smallest = nullptr;
  std::uint64_t smallest_bytes = 0;
  for (const std::string& id : s.ssds) {
    const NodeConfig& ssd = *config.topology.node(id);
    const auto lba = static_cast<std::uint64_t>(nvme::SsdParams::from(ssd.params).lba_bytes);
    const std::uint64_t bytes = ssd_capacity_bytes(ssd) / lba * lba;
    if (smallest == nullptr || bytes < smallest_bytes) {
      smallest = &ssd;
      smallest_bytes = bytes;
    }
  }
  if (smallest != nullptr && span_bytes > smallest_bytes) {
    throw ConfigError(config.scenario.file, "$.span_gib", fmt::format("{}", span_gib),
                      fmt::format("beyond the capacity of the smallest SSD of the scenario, {} "
                                  "({} B = {:.3f} GiB); allowed: 0 (the whole namespace) to "
                                  "{:.3f}",
                                  smallest->id, smallest_bytes,
                                  static_cast<double>(smallest_bytes) / (1ull << 30),
                                  static_cast<double>(smallest_bytes) / (1ull << 30)));
  }
}

// Where the I/O queue rings live, and what they take there.
struct RingBytes {
  std::uint64_t gpu = 0;   // SQ and CQ rings and PRP list pages in GPU memory
  std::uint64_t host = 0;  // rings in host memory
};

RingBytes ring_bytes(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const auto rings =
      static_cast<std::uint64_t>(s.ssds.size()) * static_cast<std::uint64_t>(s.queues);
  const auto entries = static_cast<std::uint64_t>(s.queue_entries);
  const std::uint64_t sq = round_up(entries * 64, kPage);
  const std::uint64_t cq = round_up(entries * 16, kPage);
  RingBytes out;
  if (s.path != IoPathKind::gpu_initiated) {
    out.host = rings * (sq + cq);
    return out;
  }
  // Fields of other kinds read as their defaults (rings and SQs in GPU memory).
  const bool rings_in_host = s.queue_memory == QueueMemory::host;
  const bool sq_in_gpu = !rings_in_host && s.sq_placement == SqPlacement::gpu;
  const bool sq_in_host = rings_in_host || s.sq_placement == SqPlacement::host;
  out.gpu = rings * ((sq_in_gpu ? sq : 0) + (rings_in_host ? 0 : cq));
  out.host = rings * ((sq_in_host ? sq : 0) + (rings_in_host ? cq : 0));
  // Commands of more than two pages carry a PRP list page per SQ slot.
  if (s.kind == ScenarioKind::microbenchmark && s.bs > 2 * 4096) {
    out.gpu += rings * entries * kPage;
  }
  return out;
}

std::uint64_t microbenchmark_buffer_bytes(const ScenarioParams& s) {
  return static_cast<std::uint64_t>(s.threads) * static_cast<std::uint64_t>(s.iodepth) *
         round_up(static_cast<std::uint64_t>(s.bs), kPage);
}

// The queue rings and the workload's buffers must fit the memory they are
// placed in (the GPU's memory_gib, the host memory nodes' capacity). The
// buffers counted are those every path of the kind places in GPU memory, so
// the sum is at most what the run allocates there.
void check_queue_memory(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const ScenarioKind kind = s.kind;
  const RingBytes rings = ring_bytes(config);
  std::uint64_t buffers = 0;
  std::string buffer_field = "threads";
  std::string buffer_what = "threads x iodepth x bs";
  if (kind == ScenarioKind::microbenchmark) {
    buffers = microbenchmark_buffer_bytes(s);
  } else if (kind == ScenarioKind::graph) {
    const auto line = static_cast<std::uint64_t>(s.bs);
    const auto slots = std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(s.cache_mib * static_cast<double>(kMiB)) / line);
    buffers = slots * line;
    buffer_field = "cache_mib";
    buffer_what = "the software cache";
  } else if (kind == ScenarioKind::gather) {
    const GatherLayout l =
        gather_layout(static_cast<std::uint64_t>(s.rows), static_cast<std::uint64_t>(s.row_bytes),
                      static_cast<std::uint64_t>(s.bs));
    buffers = static_cast<std::uint64_t>(std::min(s.batch_lookups, s.lookups)) *
              round_up(l.extent_bytes, kPage);
    buffer_field = "batch_lookups";
    buffer_what = "a batch of rows";
  }
  const NodeConfig& gpu = *config.topology.node(s.gpu);
  const auto gpu_bytes =
      static_cast<std::uint64_t>(gpu::GpuParams::from(gpu.params).memory_gib * (1ull << 30));
  if (rings.gpu + buffers > gpu_bytes) {
    const bool buffers_larger = buffers > rings.gpu;
    const std::string field = buffers_larger ? buffer_field : "queues";
    throw ConfigError(
        file, "$." + field, render_value(config.scenario.params.json().at(field)),
        fmt::format("the I/O queue rings ({} B: {} SSDs x {} queues of {} entries{}) and buffers "
                    "({} B: {}) need more than {}'s {} B of memory (memory_gib {})",
                    rings.gpu, s.ssds.size(), s.queues, s.queue_entries,
                    kind == ScenarioKind::microbenchmark && s.bs > 2 * 4096
                        ? ", with a PRP list page per entry"
                        : "",
                    buffers, buffer_what, gpu.id, gpu_bytes,
                    gpu::GpuParams::from(gpu.params).memory_gib));
  }
  if (rings.host == 0) return;
  std::uint64_t host_bytes = 0;
  for (const NodeConfig* memory : config.topology.nodes_of_kind("host_memory")) {
    host_bytes += static_cast<std::uint64_t>(
        pcie::HostMemoryParams::from(memory->params).capacity_gib * (1ull << 30));
  }
  if (host_bytes != 0 && rings.host > host_bytes) {
    const bool chosen = s.queue_memory == QueueMemory::host;
    throw ConfigError(
        file, chosen ? "$.queue_memory" : "$.queues",
        chosen ? "\"host\"" : std::to_string(s.queues),
        fmt::format("the I/O queue rings in host memory ({} B: {} SSDs x {} queues "
                    "of {} entries) exceed the topology's host memory ({} B)",
                    rings.host, s.ssds.size(), s.queues, s.queue_entries, host_bytes));
  }
}

// What the graph workload refuses when it builds its graph: a BFS root
// beyond the graph, a graph without edges, an edge array larger than an SSD.
void check_graph_shape(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  if (s.kind != ScenarioKind::graph) return;
  const std::string& file = config.scenario.file;
  const std::int64_t source = s.bfs_source;
  const bool rmat = s.graph == "rmat";
  std::uint64_t vertices = 0;
  std::uint64_t edges = 0;
  const auto vertex_bytes = static_cast<std::uint64_t>(s.vertex_bytes);
  const auto line_bytes = static_cast<std::uint64_t>(s.bs);
  const std::vector<std::string> ssds = s.ssds;
  auto fits = [&](std::uint64_t edge_count) {
    const std::uint64_t lines = (edge_count * vertex_bytes + line_bytes - 1) / line_bytes;
    const std::uint64_t per_ssd = (lines + ssds.size() - 1) / ssds.size();
    for (const std::string& id : ssds) {
      const NodeConfig& ssd = *config.topology.node(id);
      const auto lba = static_cast<std::uint64_t>(nvme::SsdParams::from(ssd.params).lba_bytes);
      const std::uint64_t capacity = ssd_capacity_bytes(ssd) / lba * lba;
      if (per_ssd * line_bytes > capacity) {
        throw ConfigError(file, "$.graph", "\"" + s.graph + "\"",
                          fmt::format("the edge array needs {} B on each SSD; {} holds {} B",
                                      per_ssd * line_bytes, id, capacity));
      }
    }
  };
  if (rmat) {
    vertices = 1ull << s.scale;
    // At most edge_factor edges per vertex, twice when undirected; the exact
    // count needs the graph, which is made only when the bound does not fit.
    const std::uint64_t bound =
        vertices * static_cast<std::uint64_t>(s.edge_factor) * (s.undirected ? 2 : 1);
    try {
      fits(bound);
    } catch (const ConfigError&) {
      fits(scenario_graph(config).edges());
    }
  } else {
    std::error_code error;
    if (std::filesystem::is_directory(graph_file_path(config), error)) {
      throw ConfigError(file, "$.graph", "\"" + s.graph + "\"", "is a directory, not a graph file");
    }
    const CsrGraph graph = scenario_graph(config);
    vertices = graph.vertices;
    edges = graph.edges();
    if (source < 0 && edges == 0) {
      throw ConfigError(file, "$.graph", "\"" + s.graph + "\"", "the graph has no edges");
    }
    fits(edges);
  }
  if (source >= 0 && static_cast<std::uint64_t>(source) >= vertices) {
    throw ConfigError(file, "$.bfs_source", std::to_string(source),
                      fmt::format("the graph has vertices 0..{}", vertices - 1));
  }
}

void check_memory(const RunConfig& config) {
  const MemoryEstimate estimate = estimate_memory(config);
  const std::uint64_t cap = max_memory_bytes();
  if (estimate.bytes() <= cap) return;
  const MemoryEstimate::Part& largest =
      *std::max_element(estimate.parts.begin(), estimate.parts.end(),
                        [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  const bool in_topology = largest.field.rfind("$.nodes", 0) == 0;
  const nlohmann::json& scenario = config.scenario.params.json();
  const std::string key = largest.field.substr(2);
  const std::string value =
      !in_topology && scenario.contains(key) ? render_value(scenario.at(key)) : "";
  throw ConfigError(in_topology ? config.topology.file : config.scenario.file, largest.field, value,
                    fmt::format("the run needs an estimated {} of memory, above the cap of {} "
                                "(--max-memory-gib; default half of this machine's memory); "
                                "the largest part is {}: {}",
                                mib(estimate.bytes()), mib(cap), largest.what, mib(largest.bytes)));
}

}  // namespace

std::uint64_t MemoryEstimate::bytes() const {
  std::uint64_t total = 0;
  for (const Part& p : parts) total += p.bytes;
  return total;
}

MemoryEstimate estimate_memory(const RunConfig& config) {
  if (config.tenants) {
    // Every tenant's workload lives in the one run.
    MemoryEstimate all;
    for (std::size_t i = 0; i < config.tenants->tenants.size(); ++i) {
      const Tenant& tenant = config.tenants->tenants[i];
      for (MemoryEstimate::Part part : estimate_memory(tenant.config).parts) {
        part.what = "tenant " + tenant.name + ": " + part.what;
        if (part.field.rfind("$.nodes", 0) != 0) {
          part.field = fmt::format("$.tenants[{}].scenario{}", i, part.field.substr(1));
        }
        all.parts.push_back(std::move(part));
      }
    }
    return all;
  }
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const ScenarioKind kind = s.kind;
  MemoryEstimate estimate;
  auto add = [&](std::string what, std::string field, std::uint64_t bytes) {
    estimate.parts.push_back({std::move(what), std::move(field), bytes});
  };
  // Simulated memory keeps the pages the models write (queue rings, flags,
  // doorbell words), with a stamp per line and an index entry: about 10 % over
  // the data. I/O payloads carry no bytes, so data buffers, the software
  // cache's lines and KV blocks take no pages; their bookkeeping does.
  auto stored = [](std::uint64_t bytes) { return bytes + bytes / 10; };

  // The program, SystemC and the device models: a fixed part measured on the
  // default configuration (peak RSS 15 MiB), then per node; an SSD's
  // controller and flash state take about 300 KiB plus 256 B per plane
  // (measured: 1,000 and 5,000 SSDs, 16 to 128 planes each).
  std::uint64_t models = 13 * kMiB;
  for (const NodeConfig& node : config.topology.nodes) {
    models += 16 * 1024;
    if (node.kind == "nvme_ssd") {
      const nvme::SsdParams ssd = nvme::SsdParams::from(node.params);
      const auto planes =
          static_cast<std::uint64_t>(ssd.channels * ssd.dies_per_channel * ssd.planes_per_die);
      models += 300 * 1024 + planes * 256;
      // The FTL's map, allocated once the SSD is written or preconditioned:
      // microbenchmarks that write, and KV caches (blocks move down to NVMe).
      const flash::FlashParams flash_params = flash::flash_params_from(node.params);
      const bool writes =
          kind == ScenarioKind::kv_cache || (kind == ScenarioKind::microbenchmark &&
                                             s.rw != Pattern::RandRead && s.rw != Pattern::Read);
      if (flash_params.precondition != flash::Precondition::none || writes) {
        models += flash_params.ftl_memory_bytes();
      }
    }
  }
  add("program and device models", "$.nodes", models);

  // Every GPU warp is a simulated thread: its stack (64 KiB reserved,
  // sim/kernel/threads.h, a fraction of it touched) and its lanes' state.
  // Measured: 17 to 23 KiB a warp (16,384 and 65,536 threads).
  const auto threads = static_cast<std::uint64_t>(s.threads);
  std::uint64_t warps = (threads + 31) / 32;
  if (s.path == IoPathKind::gpu_initiated) {
    const algo::StrategyEntry* strategy = algo::find_strategy(s.strategy);
    if (strategy != nullptr && strategy->value == algo::NamedStrategy::IoAgents) {
      warps += s.agent_warps;
    }
    if (algo::parse_name(algo::kCompletionNames, s.completion) == algo::Completion::PollingWarps) {
      warps += s.poller_warps;
    }
  }
  const auto iodepth = static_cast<std::uint64_t>(s.iodepth);
  add("GPU warps (stacks and lane state)", "$.threads", warps * 20 * 1024 + threads * iodepth * 64);

  // A ring's pages are stored as its entries are first written: a short run
  // touches the head of each ring only. Commands of more than two pages also
  // write a PRP list page per SQ slot they use, and every entry has its
  // completion and CID state (measured: about 10 B an entry).
  const auto ring_count =
      static_cast<std::uint64_t>(s.ssds.size()) * static_cast<std::uint64_t>(s.queues);
  const auto entries = static_cast<std::uint64_t>(s.queue_entries);
  std::uint64_t used = entries;
  if (kind == ScenarioKind::microbenchmark && !s.time_based) {
    used = std::min(entries, static_cast<std::uint64_t>(s.ios) / ring_count + 1);
  }
  const RingBytes rings = ring_bytes(config);
  const std::uint64_t touched =
      ring_count * (round_up(used * 64, kPage) + round_up(used * 16, kPage));
  std::uint64_t queue_bytes = stored(std::min(rings.gpu + rings.host, touched));
  if (s.path == IoPathKind::gpu_initiated && s.bs > 2 * 4096) {
    queue_bytes += stored(ring_count * used * kPage);
  }
  queue_bytes += ring_count * entries * 10;
  add("I/O queues (rings, PRP lists, entry state)", "$.queues", queue_bytes);

  if (kind == ScenarioKind::gather) {
    const auto batch = std::min(s.batch_lookups, s.lookups);
    add("gather batch state", "$.batch_lookups", static_cast<std::uint64_t>(batch) * 128);
  } else if (kind == ScenarioKind::kv_cache) {
    const KvShape k = kv_shape(config);
    const std::uint64_t blocks = k.layers * k.batch * (k.full_blocks + 1);
    add("KV block table", "$.context_tokens", blocks * 64);
  } else if (kind == ScenarioKind::graph) {
    std::uint64_t vertices = 0, edges = 0;
    if (s.graph == "rmat") {
      vertices = 1ull << s.scale;
      edges = vertices * static_cast<std::uint64_t>(s.edge_factor);
    } else {
      // An edge list line is at least 4 bytes ("0 1\n"), typically 8 or more;
      // the reader checks the exact figures against the cap as it reads.
      struct stat info {};
      const std::string path = graph_file_path(config);
      const auto bytes =
          stat(path.c_str(), &info) == 0 ? static_cast<std::uint64_t>(info.st_size) : 0;
      edges = bytes / 8;
      vertices = edges;
    }
    const std::uint64_t directed = s.undirected ? 2 * edges : edges;
    // Construction holds the edge pairs (16 B each, both directions when
    // undirected) beside the CSR (8 B per vertex, 4 B per edge); the
    // traversal keeps a level per vertex and a stamp per cache line.
    const std::uint64_t construction = directed * 16 + vertices * 8;
    const std::uint64_t csr = (vertices + 1) * 8 + directed * 4;
    const auto line = static_cast<std::uint64_t>(s.bs);
    const std::uint64_t lines =
        (directed * static_cast<std::uint64_t>(s.vertex_bytes) + line - 1) / line;
    const std::uint64_t traversal = vertices * 12 + lines * 8;
    add("graph (edge pairs while building, CSR, levels)", s.graph == "rmat" ? "$.scale" : "$.graph",
        construction + csr + traversal);
    const auto cache = static_cast<std::uint64_t>(s.cache_mib * static_cast<double>(kMiB));
    add("GPU software cache slots", "$.cache_mib", cache / line * 32);
  }
  return estimate;
}

void check_hosts(const RunConfig& config) {
  if (is_remote_path(config)) {
    resolve_remote_route(config);
    return;
  }
  if (config.topology.network_links.empty()) return;
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const TopologyConfig& topo = config.topology;
  auto index = [&topo](const std::string& id) {
    return static_cast<std::size_t>(topo.node(id) - topo.nodes.data());
  };
  const TopologyGraph graph(topo);
  const std::vector<bool> reached = graph.reachable_from(index(s.gpu));
  for (std::size_t k = 0; k < s.ssds.size(); ++k) {
    if (reached[index(s.ssds[k])]) continue;
    throw ConfigError(config.scenario.file, index_path("$.ssds", k), "\"" + s.ssds[k] + "\"",
                      "no path between " + s.gpu + " and " + s.ssds[k] +
                          " over PCIe (another host: use a remote path, remote_staged, "
                          "nvmf_gpudirect or dpu)");
  }
}

void check_setup(const RunConfig& config) {
  check_hosts(config);
  check_devices(config.topology);
  check_span(config);
  check_queue_memory(config);
  // Before anything large is made (a graph read or generated below).
  check_memory(config);
  check_graph_shape(config);
}

}  // namespace gpunvme
