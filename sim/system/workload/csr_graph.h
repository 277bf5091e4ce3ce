// Graphs for the BFS workload in compressed sparse row form: generated
// (R-MAT / Kronecker, Graph500's generator) or read from a Matrix Market or
// edge-list file; and the plain queue-based BFS the simulated one is checked
// against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpunvme {

struct CsrGraph {
  std::uint64_t vertices = 0;
  std::vector<std::uint64_t> offsets;    // vertices + 1 entries
  std::vector<std::uint32_t> neighbors;  // offsets.back() entries, each row sorted

  std::uint64_t edges() const { return neighbors.size(); }
  std::uint64_t degree(std::uint64_t v) const { return offsets[v + 1] - offsets[v]; }
};

// Builds a CSR from an edge list: self loops and duplicate edges dropped,
// rows sorted; `undirected` adds every edge in both directions.
CsrGraph csr_from_edges(std::uint64_t vertices,
                        std::vector<std::pair<std::uint64_t, std::uint64_t>> edges,
                        bool undirected);

// R-MAT: 2^scale vertices, edge_factor * 2^scale edges, each edge placed by
// picking a quadrant per bit with probabilities a, b, c and 1 - a - b - c;
// vertex ids are then permuted (Graph500 scrambles them), all from `seed`.
CsrGraph generate_rmat(std::uint32_t scale, std::uint32_t edge_factor, double a, double b, double c,
                       std::uint64_t seed, bool undirected);

// Matrix Market coordinate files (.mtx: 1-based, general or symmetric,
// pattern/integer/real) or edge lists (one "u v" per line, 0-based, lines
// starting with # or % are comments). Throws ConfigError naming the file and
// line for malformed input.
CsrGraph read_graph_file(const std::string& path, bool undirected);

// Level of every vertex from `source` (-1: unreachable).
std::vector<std::int64_t> reference_bfs(const CsrGraph& graph, std::uint64_t source);

}  // namespace gpunvme
