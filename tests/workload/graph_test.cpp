// BFS over a graph on the SSDs: every reachable vertex is visited exactly
// once at the level a plain BFS gives it, on every path, and the cache
// reads each line it needs once when it holds the whole edge array.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/system/machine/machine.h"
#include "sim/system/workload/graph_bfs.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

// The levels a textbook BFS assigns, written here independently of the
// simulator's reference.
std::vector<std::int64_t> textbook_bfs(const CsrGraph& g, std::uint64_t source) {
  std::vector<std::int64_t> level(g.vertices, -1);
  std::deque<std::uint64_t> queue{source};
  level[source] = 0;
  while (!queue.empty()) {
    const std::uint64_t v = queue.front();
    queue.pop_front();
    for (std::uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      if (level[g.neighbors[e]] < 0) {
        level[g.neighbors[e]] = level[v] + 1;
        queue.push_back(g.neighbors[e]);
      }
    }
  }
  return level;
}

struct Traversal {
  std::vector<std::int64_t> levels;
  std::uint64_t visits;
  std::uint64_t source;
  std::uint64_t misses;
  CsrGraph graph;
};

Traversal traverse(const RunConfig& config) {
  Simulation simulation;
  Machine machine(config.topology);
  GraphWorkload bfs("workload", config, machine);
  simulation.run();
  EXPECT_TRUE(bfs.finished());
  return {bfs.levels(), bfs.visits(), bfs.source(), bfs.cache().misses(), bfs.graph()};
}

std::vector<std::string> small_rmat(std::vector<std::string> more) {
  std::vector<std::string> o{"scenario.scale=10", "scenario.edge_factor=8", "scenario.bs=512",
                             "scenario.threads=256"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

TEST(GraphBfs, VisitsEveryReachableVertexOnceAtItsBfsLevel) {
  for (const char* scenario : {"graph-bfs-gpu", "graph-bfs-gds", "graph-bfs-bounce"}) {
    // A 16 KiB cache (32 lines of 512 B) is smaller than the edge array, so
    // frontiers are walked in chunks and lines are evicted.
    const Traversal t =
        traverse(test::scenario(scenario, small_rmat({"scenario.cache_mib=0.015625"})));
    const std::vector<std::int64_t> expected = textbook_bfs(t.graph, t.source);
    EXPECT_EQ(t.levels, expected) << scenario;
    std::uint64_t reachable = 0;
    for (std::int64_t l : expected) reachable += l >= 0 ? 1 : 0;
    EXPECT_EQ(t.visits, reachable) << scenario;
    EXPECT_GT(reachable, 100u);
  }
}

TEST(GraphBfs, AWholeGraphCacheReadsEachNeededLineOnce) {
  const RunConfig config = test::scenario("graph-bfs-gpu", small_rmat({"scenario.cache_mib=16"}));
  const Traversal t = traverse(config);
  // Lines of 512 B holding 128 neighbour ids of 4 B; a vertex with edges
  // needs the lines its neighbour list spans.
  const std::vector<std::int64_t> level = textbook_bfs(t.graph, t.source);
  std::set<std::uint64_t> lines;
  for (std::uint64_t v = 0; v < t.graph.vertices; ++v) {
    if (level[v] < 0 || t.graph.degree(v) == 0) continue;
    for (std::uint64_t line = t.graph.offsets[v] * 4 / 512;
         line <= (t.graph.offsets[v + 1] * 4 - 1) / 512; ++line) {
      lines.insert(line);
    }
  }
  EXPECT_EQ(t.misses, lines.size());
  const nlohmann::json r = run(config);
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), lines.size());
  EXPECT_TRUE(r["graph"]["matches_reference_bfs"].get<bool>());
  EXPECT_EQ(r["graph"]["cache"]["evictions"].get<std::uint64_t>(), 0u);
}

TEST(GraphBfs, ReadsEdgeListAndMatrixMarketFiles) {
  const auto dir = std::filesystem::temp_directory_path();
  // A path 0-1-2-3-4 plus an isolated edge 5-6.
  const std::string edges = (dir / "gpunvme_path.el").string();
  std::ofstream(edges) << "# a path\n0 1\n1 2\n2 3\n3 4\n5 6\n";
  const std::string mtx = (dir / "gpunvme_path.mtx").string();
  std::ofstream(mtx) << "%%MatrixMarket matrix coordinate pattern symmetric\n% a path\n7 7 5\n"
                        "2 1\n3 2\n4 3\n5 4\n7 6\n";
  for (const std::string& file : {edges, mtx}) {
    const Traversal t = traverse(
        test::scenario("graph-bfs-gds", {"scenario.graph=" + file, "scenario.bfs_source=0"}));
    EXPECT_EQ(t.levels, (std::vector<std::int64_t>{0, 1, 2, 3, 4, -1, -1})) << file;
    EXPECT_EQ(t.visits, 5u);
  }
}

TEST(GraphBfs, RmatIsDeterministicAndHasTheRequestedSize) {
  const CsrGraph a = generate_rmat(10, 8, 0.57, 0.19, 0.19, 3, true);
  const CsrGraph b = generate_rmat(10, 8, 0.57, 0.19, 0.19, 3, true);
  const CsrGraph c = generate_rmat(10, 8, 0.57, 0.19, 0.19, 4, true);
  EXPECT_EQ(a.neighbors, b.neighbors);
  EXPECT_NE(a.neighbors, c.neighbors);
  EXPECT_EQ(a.vertices, 1024u);
  // At most 2 x 8 x 1024 directed edges after symmetrizing, fewer after
  // dropping duplicates and self loops (R-MAT's skew makes many).
  EXPECT_LE(a.edges(), 2u * 8 * 1024);
  EXPECT_GT(a.edges(), 8u * 1024);
  // Symmetric: every edge has its reverse.
  for (std::uint64_t v = 0; v < a.vertices; ++v) {
    for (std::uint64_t e = a.offsets[v]; e < a.offsets[v + 1]; ++e) {
      const std::uint32_t w = a.neighbors[e];
      EXPECT_TRUE(std::binary_search(a.neighbors.begin() + a.offsets[w],
                                     a.neighbors.begin() + a.offsets[w + 1], v));
    }
  }
}

// A warp that finds no request reads its mailbox (a load) before it sleeps;
// a request submitted during that load must not be left waiting. With one
// warp (32 threads or fewer) it was: the BFS stopped with I/Os pending. The
// other request-driven kinds run on one warp too.
TEST(GraphBfs, CompletesOnOneWarpAndJustAboveIt) {
  for (int threads : {1, 32, 33, 64}) {
    const nlohmann::json r =
        run(test::scenario("graph-bfs-gpu", {"scenario.threads=" + std::to_string(threads)}));
    EXPECT_TRUE(r["graph"]["matches_reference_bfs"].get<bool>()) << threads;
    EXPECT_EQ(r["summary"]["ios"], r["graph"]["ios"]) << threads;
  }
  for (const char* name : {"kv-cache-gpu", "gather-gpu"}) {
    const nlohmann::json r = run(test::scenario(name, {"scenario.threads=1"}));
    EXPECT_TRUE(r["summary"]["data_complete"].get<bool>()) << name;
  }
}

}  // namespace
}  // namespace gpunvme
