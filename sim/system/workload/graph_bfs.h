// BFS over a graph whose CSR edge array lives on the SSDs, read through a
// GPU software cache (BaM's graph analytics, ASPLOS 2023).
//
// The vertex offsets stay in GPU memory; the edge array (vertex_bytes per
// neighbour id) is cut into lines of bs bytes, line i on SSD i mod ssds. The
// traversal is level-synchronous: each level is one kernel (kernel_launch_us)
// that walks its frontier; the lines the frontier's neighbour lists touch are
// held in the cache (a reference each, CLOCK eviction), misses are read
// through the scenario's path, and once a chunk's lines are in the GPU
// scans its edges (edge_ns each) and marks new vertices for the next level.
// A frontier whose lines do not fit in the cache is walked in chunks.
//
// A line whose read fails is not retried: its edges are not scanned (the
// vertices only they lead to stay unreached), the cache forgets it, and the
// result says data_complete false and matches_reference_bfs false.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "sim/system/workload/csr_graph.h"
#include "sim/system/workload/software_cache.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {

// Checks the graph fields; returns the bytes of one I/O (a cache line).
std::uint64_t check_graph(const RunConfig& config);

// The file a scenario's graph names: looked up beside the scenario first,
// then in the working directory.
std::string graph_file_path(const RunConfig& config);

// The graph a scenario names (generated with the run's seed, or read).
CsrGraph scenario_graph(const RunConfig& config);

class GraphWorkload : public PathWorkload {
 public:
  GraphWorkload(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);
  nlohmann::json summary(Picoseconds elapsed) const override;
  nlohmann::json sections(Picoseconds elapsed) const override;

  const CsrGraph& graph() const { return graph_; }
  std::uint64_t source() const { return source_; }
  // Level of each vertex as the simulated traversal found it (-1: unreached).
  const std::vector<std::int64_t>& levels() const { return level_; }
  // How many times a vertex was marked visited (each reachable one once).
  std::uint64_t visits() const { return visits_; }
  const SoftwareCache& cache() const { return cache_; }
  // Every line the traversal needed arrived (no read failed).
  bool data_complete() const { return failed_ios_ == 0; }

 private:
  struct Item {
    std::uint32_t vertex;
    std::uint64_t line;
  };
  void begin() override;
  void build_chunk();
  void compute_chunk();
  void process_chunk();
  void end_level();
  std::uint64_t first_line(std::uint64_t v) const;
  std::uint64_t last_line(std::uint64_t v) const;

  CsrGraph graph_;
  std::uint64_t vertex_bytes_;
  std::uint64_t line_bytes_;
  std::uint64_t lines_;
  SoftwareCache cache_;
  std::uint64_t cache_base_ = 0;
  std::vector<std::uint32_t> lbas_per_line_;
  Picoseconds edge_cost_;
  Picoseconds launch_cost_;
  std::uint32_t threads_;
  std::uint64_t source_ = 0;

  std::vector<std::int64_t> level_;
  std::vector<std::uint32_t> frontier_;
  std::vector<std::uint32_t> next_;
  std::size_t frontier_pos_ = 0;
  std::uint64_t line_cursor_ = ~std::uint64_t{0};  // next line of frontier_[frontier_pos_]
  std::int64_t depth_ = 0;
  std::vector<std::uint32_t> line_stamp_;  // chunk that last took the line
  std::uint32_t chunk_ = 1;
  std::vector<Item> items_;
  std::vector<std::uint32_t> held_;  // slots to release after the chunk
  std::uint64_t outstanding_ = 0;
  std::uint64_t visits_ = 0;
  std::uint64_t edges_scanned_ = 0;
  std::uint64_t chunks_ = 0;
  std::uint64_t levels_ = 0;
  std::uint64_t ios_ = 0;
  std::uint64_t failed_ios_ = 0;                    // line reads that failed
  std::uint64_t edges_unread_ = 0;                  // edges of lines that never arrived
  std::unordered_set<std::uint64_t> failed_lines_;  // of the chunk in flight
  bool verified_ = false;
};

}  // namespace gpunvme
