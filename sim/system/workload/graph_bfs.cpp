#include "sim/system/workload/graph_bfs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "models/gpu/gpu.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/random.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
double round_to(double v, double unit) { return std::round(v / unit) * unit; }

std::uint32_t cache_slots(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const double bytes = s.cache_mib * 1048576.0;
  return static_cast<std::uint32_t>(std::max(1.0, std::floor(bytes / static_cast<double>(s.bs))));
}
}  // namespace

std::string graph_file_path(const RunConfig& config) {
  const std::string name = ScenarioParams::from(config.scenario.params).graph;
  const std::string& scenario_file = config.scenario.file;
  const auto slash = scenario_file.find_last_of('/');
  if (!name.empty() && name[0] != '/' && slash != std::string::npos) {
    const std::string beside = scenario_file.substr(0, slash + 1) + name;
    if (std::ifstream(beside).good()) return beside;
  }
  return name;
}

std::uint64_t check_graph(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  if (s.graph != "rmat" && !std::ifstream(graph_file_path(config)).good()) {
    throw ConfigError(file, "$.graph", "\"" + s.graph + "\"",
                      "expected rmat or a readable graph file (.mtx or an edge list)");
  }
  if (s.graph == "rmat") {
    const double abc = s.rmat_a + s.rmat_b + s.rmat_c;
    if (abc > 1.0 + 1e-12) {
      throw ConfigError(file, "$.rmat_c", fmt::format("{}", s.rmat_c),
                        fmt::format("rmat_a + rmat_b + rmat_c = {} exceeds 1", abc));
    }
  }
  const NodeConfig& gpu = *config.topology.node(s.gpu);
  const double gpu_bytes = gpu::GpuParams::from(gpu.params).memory_gib * 1073741824.0;
  if (static_cast<double>(cache_slots(config)) * static_cast<double>(s.bs) > gpu_bytes / 2) {
    throw ConfigError(file, "$.cache_mib", fmt::format("{}", s.cache_mib),
                      "the cache would take more than half of the GPU's memory");
  }
  return static_cast<std::uint64_t>(s.bs);
}

CsrGraph scenario_graph(const RunConfig& config) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& name = s.graph;
  if (name == "rmat") {
    return generate_rmat(static_cast<std::uint32_t>(s.scale),
                         static_cast<std::uint32_t>(s.edge_factor), s.rmat_a, s.rmat_b, s.rmat_c,
                         config.seed, s.undirected);
  }
  return read_graph_file(graph_file_path(config), s.undirected);
}

GraphWorkload::GraphWorkload(const sc_core::sc_module_name& name, const RunConfig& config,
                             Machine& machine)
    : PathWorkload(name, config, machine, check_graph(config)),
      graph_(scenario_graph(config)),
      vertex_bytes_(
          static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).vertex_bytes)),
      line_bytes_(static_cast<std::uint64_t>(ScenarioParams::from(config.scenario.params).bs)),
      lines_((graph_.edges() * vertex_bytes_ + line_bytes_ - 1) / line_bytes_),
      cache_(cache_slots(config)),
      edge_cost_(ScenarioParams::from(config.scenario.params).edge_ns),
      launch_cost_(ScenarioParams::from(config.scenario.params).kernel_launch_us),
      threads_(static_cast<std::uint32_t>(ScenarioParams::from(config.scenario.params).threads)) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::string& file = config.scenario.file;
  const std::uint64_t per_ssd = (lines_ + ssd_ids_.size() - 1) / ssd_ids_.size();
  for (const std::string& id : ssd_ids_) {
    const nvme::Controller& ssd = machine.ssd(id);
    lbas_per_line_.push_back(static_cast<std::uint32_t>(line_bytes_ / ssd.lba_bytes()));
    if (per_ssd * line_bytes_ > ssd.capacity_lbas() * ssd.lba_bytes()) {
      throw ConfigError(
          file, "$.graph", "\"" + s.graph + "\"",
          fmt::format("the edge array needs {} B on each SSD; {} holds {} B", per_ssd * line_bytes_,
                      id, ssd.capacity_lbas() * ssd.lba_bytes()));
    }
  }
  cache_base_ = gpu_.allocate(std::uint64_t{cache_.slots()} * line_bytes_, 4096);
  level_.assign(graph_.vertices, -1);
  line_stamp_.assign(lines_, 0);
  const std::int64_t source = s.bfs_source;
  if (source >= 0) {
    if (static_cast<std::uint64_t>(source) >= graph_.vertices) {
      throw ConfigError(file, "$.bfs_source", std::to_string(source),
                        fmt::format("the graph has vertices 0..{}", graph_.vertices - 1));
    }
    source_ = static_cast<std::uint64_t>(source);
  } else {
    // Graph500: a root among the vertices with edges, drawn with the seed.
    std::vector<std::uint32_t> candidates;
    for (std::uint64_t v = 0; v < graph_.vertices; ++v) {
      if (graph_.degree(v) != 0) candidates.push_back(static_cast<std::uint32_t>(v));
    }
    if (candidates.empty()) {
      throw ConfigError(file, "$.graph", "\"" + s.graph + "\"", "the graph has no edges");
    }
    RandomEngine rng(config.seed * 0x9E3779B97F4A7C15ull + 17);
    source_ = candidates[random_below(rng, candidates.size())];
  }
}

std::uint64_t GraphWorkload::first_line(std::uint64_t v) const {
  return graph_.offsets[v] * vertex_bytes_ / line_bytes_;
}
std::uint64_t GraphWorkload::last_line(std::uint64_t v) const {
  return (graph_.offsets[v + 1] * vertex_bytes_ - 1) / line_bytes_;
}

void GraphWorkload::begin() {
  level_[source_] = 0;
  visits_ = 1;
  frontier_ = {static_cast<std::uint32_t>(source_)};
  ++levels_;
  schedule_in(launch_cost_, [this] { build_chunk(); });
}

void GraphWorkload::build_chunk() {
  items_.clear();
  held_.clear();
  std::vector<std::pair<std::uint64_t, std::uint32_t>> misses;  // line, slot
  bool full = false;
  while (frontier_pos_ < frontier_.size() && !full) {
    const std::uint32_t v = frontier_[frontier_pos_];
    if (graph_.degree(v) == 0) {
      ++frontier_pos_;
      continue;
    }
    if (line_cursor_ == ~std::uint64_t{0}) line_cursor_ = first_line(v);
    for (; line_cursor_ <= last_line(v); ++line_cursor_) {
      const std::uint64_t line = line_cursor_;
      if (line_stamp_[line] != chunk_) {
        const auto hold = cache_.acquire(line);
        if (!hold) {
          // Every slot holds a line of this chunk: process it first.
          full = true;
          break;
        }
        line_stamp_[line] = chunk_;
        held_.push_back(hold->slot);
        if (!hold->hit) misses.emplace_back(line, hold->slot);
      }
      items_.push_back({v, line});
    }
    if (!full) {
      ++frontier_pos_;
      line_cursor_ = ~std::uint64_t{0};
    }
  }
  if (items_.empty()) {
    end_level();
    return;
  }
  ++chunks_;
  outstanding_ = misses.size();
  if (misses.empty()) {
    compute_chunk();
    return;
  }
  const std::uint64_t ssds = ssd_ids_.size();
  for (std::size_t i = 0; i < misses.size(); ++i) {
    BlockIo request;
    request.ssd = static_cast<std::uint32_t>(misses[i].first % ssds);
    request.lbas = lbas_per_line_[request.ssd];
    request.slba = misses[i].first / ssds * request.lbas;
    request.buffer = cache_base_ + std::uint64_t{misses[i].second} * line_bytes_;
    request.issuer = static_cast<std::uint32_t>(i % threads_);
    ++ios_;
    const std::uint64_t line = misses[i].first;
    const std::uint32_t slot = misses[i].second;
    io().submit(request, [this, line, slot](std::uint16_t status) {
      if (status != 0) {
        // The line never arrived: its edges cannot be scanned, and the slot
        // must not serve it to a later chunk.
        ++failed_ios_;
        failed_lines_.insert(line);
        cache_.invalidate(slot);
      }
      if (--outstanding_ == 0) compute_chunk();
    });
  }
}

void GraphWorkload::compute_chunk() {
  std::uint64_t edges = 0;
  const std::uint64_t per_line = line_bytes_ / vertex_bytes_;
  for (const Item& item : items_) {
    if (failed_lines_.count(item.line) != 0) continue;
    const std::uint64_t lo = std::max(graph_.offsets[item.vertex], item.line * per_line);
    const std::uint64_t hi = std::min(graph_.offsets[item.vertex + 1], (item.line + 1) * per_line);
    edges += hi - lo;
  }
  schedule_in(edges * edge_cost_, [this] { process_chunk(); });
}

void GraphWorkload::process_chunk() {
  const std::uint64_t per_line = line_bytes_ / vertex_bytes_;
  for (const Item& item : items_) {
    const std::uint64_t lo = std::max(graph_.offsets[item.vertex], item.line * per_line);
    const std::uint64_t hi = std::min(graph_.offsets[item.vertex + 1], (item.line + 1) * per_line);
    if (failed_lines_.count(item.line) != 0) {
      edges_unread_ += hi - lo;
      continue;
    }
    for (std::uint64_t e = lo; e < hi; ++e) {
      const std::uint32_t w = graph_.neighbors[e];
      ++edges_scanned_;
      if (level_[w] >= 0) continue;
      level_[w] = depth_ + 1;
      ++visits_;
      next_.push_back(w);
    }
  }
  for (std::uint32_t slot : held_) cache_.release(slot);
  held_.clear();
  failed_lines_.clear();
  ++chunk_;
  build_chunk();
}

void GraphWorkload::end_level() {
  if (next_.empty()) {
    // A traversal that skipped edges it could not read is no BFS of the
    // graph, whatever its levels happen to be.
    verified_ = data_complete() && level_ == reference_bfs(graph_, source_);
    done();
    return;
  }
  frontier_.swap(next_);
  next_.clear();
  frontier_pos_ = 0;
  line_cursor_ = ~std::uint64_t{0};
  ++depth_;
  ++levels_;
  schedule_in(launch_cost_, [this] { build_chunk(); });
}

nlohmann::json GraphWorkload::summary(Picoseconds) const {
  const std::uint64_t lookups = cache_.hits() + cache_.misses();
  return {{"traversal_time_ns", round_to(ps_to_ns(done_at() - began_at()), 0.001)},
          {"data_complete", data_complete()},
          {"cache_hit_rate",
           lookups == 0 ? 0.0 : round_to(static_cast<double>(cache_.hits()) / lookups, 1e-6)}};
}

nlohmann::json GraphWorkload::sections(Picoseconds elapsed) const {
  nlohmann::json out = PathWorkload::sections(elapsed);
  const double seconds = static_cast<double>(done_at() - began_at()) * 1e-12;
  const std::uint64_t lookups = cache_.hits() + cache_.misses();
  std::uint64_t reached = 0;
  for (std::int64_t l : level_) reached += l >= 0 ? 1 : 0;
  out["graph"] = {
      {"vertices", graph_.vertices},
      {"edges", graph_.edges()},
      {"edge_array_bytes", graph_.edges() * vertex_bytes_},
      {"source", source_},
      {"levels", levels_},
      {"vertices_reached", reached},
      {"visits", visits_},
      {"edges_scanned", edges_scanned_},
      {"chunks", chunks_},
      {"traversal_time_ns", round_to(ps_to_ns(done_at() - began_at()), 0.001)},
      {"teps", seconds > 0 ? round_to(static_cast<double>(edges_scanned_) / seconds, 0.001) : 0.0},
      {"submitted_ios", ios_},
      {"ios", ios_ - failed_ios_},
      {"failed_ios", failed_ios_},
      {"iops",
       seconds > 0 ? round_to(static_cast<double>(ios_ - failed_ios_) / seconds, 0.001) : 0.0},
      {"edges_unread", edges_unread_},
      {"data_complete", data_complete()},
      {"matches_reference_bfs", verified_},
      {"cache",
       {{"slots", cache_.slots()},
        {"line_bytes", line_bytes_},
        {"hits", cache_.hits()},
        {"misses", cache_.misses()},
        {"evictions", cache_.evictions()},
        {"hit_rate",
         lookups == 0 ? 0.0 : round_to(static_cast<double>(cache_.hits()) / lookups, 1e-6)}}},
  };
  return out;
}

}  // namespace gpunvme
