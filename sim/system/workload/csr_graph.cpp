#include "sim/system/workload/csr_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <fstream>
#include <numeric>
#include <sstream>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/random.h"
#include "sim/system/config/resource_limits.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {

CsrGraph csr_from_edges(std::uint64_t vertices,
                        std::vector<std::pair<std::uint64_t, std::uint64_t>> edges,
                        bool undirected) {
  if (undirected) {
    const std::size_t n = edges.size();
    edges.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) edges.emplace_back(edges[i].second, edges[i].first);
  }
  edges.erase(
      std::remove_if(edges.begin(), edges.end(), [](const auto& e) { return e.first == e.second; }),
      edges.end());
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  CsrGraph g;
  g.vertices = vertices;
  g.offsets.assign(vertices + 1, 0);
  for (const auto& e : edges) ++g.offsets[e.first + 1];
  std::partial_sum(g.offsets.begin(), g.offsets.end(), g.offsets.begin());
  g.neighbors.reserve(edges.size());
  for (const auto& e : edges) g.neighbors.push_back(static_cast<std::uint32_t>(e.second));
  return g;
}

CsrGraph generate_rmat(std::uint32_t scale, std::uint32_t edge_factor, double a, double b, double c,
                       std::uint64_t seed, bool undirected) {
  const std::uint64_t n = 1ull << scale;
  const std::uint64_t m = n * edge_factor;
  RandomEngine rng(seed * 0xD1B54A32D192ED03ull + 0x5851F42D4C957F2Dull);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> edges;
  edges.reserve(m);
  for (std::uint64_t e = 0; e < m; ++e) {
    std::uint64_t u = 0, v = 0;
    for (std::uint32_t bit = 0; bit < scale; ++bit) {
      const double r = random_unit(rng);
      const bool down = r >= a + b;  // quadrants c and d: u gets the bit
      const bool right = (r >= a && r < a + b) || r >= a + b + c;  // b and d: v gets it
      u = (u << 1) | (down ? 1u : 0u);
      v = (v << 1) | (right ? 1u : 0u);
    }
    edges.emplace_back(u, v);
  }
  std::vector<std::uint64_t> permutation(n);
  std::iota(permutation.begin(), permutation.end(), 0);
  random_shuffle(permutation, rng);
  for (auto& e : edges) e = {permutation[e.first], permutation[e.second]};
  return csr_from_edges(n, std::move(edges), undirected);
}

CsrGraph read_graph_file(const std::string& path, bool undirected) {
  require_readable_input(path, "graph file");
  std::ifstream in(path);
  if (!in) throw ConfigError(path, "", "", "cannot open graph file");
  // Memory grows with the vertices and edges the file declares or holds;
  // both are checked against the cap before they are allocated.
  const std::uint64_t cap = max_memory_bytes();
  auto graph_bytes = [undirected](std::uint64_t vertex_count, std::uint64_t edge_count) {
    const std::uint64_t directed = undirected ? 2 * edge_count : edge_count;
    return (vertex_count + 1) * 8 + directed * 20;
  };
  const bool matrix_market = path.size() >= 4 && path.substr(path.size() - 4) == ".mtx";
  std::vector<std::pair<std::uint64_t, std::uint64_t>> edges;
  std::uint64_t vertices = 0;
  bool symmetric = false;
  bool size_seen = !matrix_market;
  std::string line;
  std::uint64_t number = 0;
  auto fail = [&](const std::string& why) {
    throw ConfigError(path, fmt::format("line {}", number), line.substr(0, 80), why);
  };
  while (std::getline(in, line)) {
    ++number;
    if (line.find('\0') != std::string::npos) fail("not a text file: the line holds a NUL byte");
    if (matrix_market && number == 1) {
      if (line.rfind("%%MatrixMarket", 0) != 0) fail("expected a %%MatrixMarket header");
      if (line.find("coordinate") == std::string::npos) {
        fail("only coordinate (sparse) Matrix Market files are graphs");
      }
      symmetric = line.find("symmetric") != std::string::npos;
      continue;
    }
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '%' || line[first] == '#') continue;
    std::istringstream fields(line);
    long long u = 0, v = 0;
    if (!(fields >> u >> v)) fail("expected two vertex ids");
    if (!size_seen) {
      long long nnz = 0;
      if (!(fields >> nnz) || u <= 0 || v <= 0 || nnz < 0) {
        fail("expected the size line: rows cols entries");
      }
      vertices = static_cast<std::uint64_t>(std::max(u, v));
      if (vertices > (1ull << 32)) fail("vertex ids must fit in 32 bits");
      // nnz may be near 2^63: its bytes are compared once it is known to be small.
      const std::uint64_t max_entries = cap / 20;
      const std::uint64_t entries = std::min(static_cast<std::uint64_t>(nnz), max_entries + 1);
      const std::uint64_t declared = graph_bytes(vertices, entries) * (symmetric ? 2 : 1);
      if (declared > cap) {
        fail(
            fmt::format("the graph it declares ({} vertices, {} entries) needs more than the "
                        "memory cap of {} MiB (--max-memory-gib)",
                        vertices, nnz, cap >> 20));
      }
      size_seen = true;
      continue;
    }
    if (matrix_market) {
      if (u < 1 || v < 1 || static_cast<std::uint64_t>(u) > vertices ||
          static_cast<std::uint64_t>(v) > vertices) {
        fail(fmt::format("vertex ids must be 1..{}", vertices));
      }
      --u;
      --v;
    } else {
      if (u < 0 || v < 0) fail("vertex ids must be non-negative");
      vertices = std::max<std::uint64_t>(vertices, static_cast<std::uint64_t>(std::max(u, v)) + 1);
    }
    if (std::max(u, v) >= (1ll << 32)) fail("vertex ids must fit in 32 bits");
    if (edges.size() % 65536 == 0 && graph_bytes(vertices, edges.size()) > cap) {
      fail(
          fmt::format("the graph needs more than {} MiB by this line, above the memory cap of {} "
                      "MiB (--max-memory-gib)",
                      graph_bytes(vertices, edges.size()) >> 20, cap >> 20));
    }
    edges.emplace_back(static_cast<std::uint64_t>(u), static_cast<std::uint64_t>(v));
  }
  if (!size_seen) throw ConfigError(path, "", "", "no size line: not a Matrix Market graph");
  if (vertices == 0) {
    throw ConfigError(path, "", "",
                      matrix_market ? "the graph has no vertices"
                                    : "no edges: expected lines of two vertex ids, 'u v'");
  }
  if (graph_bytes(vertices, edges.size()) > cap) {
    throw ConfigError(
        path, "", "",
        fmt::format("the graph ({} vertices, {} edges) needs about {} MiB, above "
                    "the memory cap of {} MiB (--max-memory-gib)",
                    vertices, edges.size(), graph_bytes(vertices, edges.size()) >> 20, cap >> 20));
  }
  return csr_from_edges(vertices, std::move(edges), undirected || symmetric);
}

std::vector<std::int64_t> reference_bfs(const CsrGraph& graph, std::uint64_t source) {
  std::vector<std::int64_t> level(graph.vertices, -1);
  std::deque<std::uint64_t> queue{source};
  level[source] = 0;
  while (!queue.empty()) {
    const std::uint64_t v = queue.front();
    queue.pop_front();
    for (std::uint64_t e = graph.offsets[v]; e < graph.offsets[v + 1]; ++e) {
      const std::uint32_t w = graph.neighbors[e];
      if (level[w] < 0) {
        level[w] = level[v] + 1;
        queue.push_back(w);
      }
    }
  }
  return level;
}

}  // namespace gpunvme
