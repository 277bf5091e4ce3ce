// Randomized streams of posted writes and reads on a fabric, for the tests that compare two ways
// of running the same fabric (a memo against recomputation, fast delivery against the per-hop
// path): a shipped topology, a stream of transfers of many sizes between GPUs, SSDs, host and
// CXL memory, and what running it produced (each transfer's delivery time or refusal, the
// fabric's report and paths).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/pcie/fabric_bench.h"

namespace gpunvme::pcie::testing {

inline nlohmann::json shipped_topology(const std::string& name) {
  std::ifstream in(std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + name + ".json");
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// The shipped topologies the streams run on: one switch, four SSDs, two sockets, IOMMU
// translation, two GPUs sharing SSDs, CXL memory, two root ports.
inline const char* const kStreamTopologies[] = {"default",
                                                "four-gen4-ssds",
                                                "two-sockets",
                                                "iommu-translating",
                                                "two-gpus-shared-ssds-iommu",
                                                "cxl-memory",
                                                "two-root-ports"};

// four-gen4-ssds with round-robin egress arbitration on its switch and buffers smaller than a
// burst's window: credits set the pace and bursts wait for room.
inline nlohmann::json round_robin_small_buffers() {
  nlohmann::json topology = shipped_topology("four-gen4-ssds");
  for (auto& n : topology.at("nodes")) {
    if (n.at("kind") == "switch") {
      n["port_arbitration"] = "round_robin";
      n["posted_header_credits"] = 4;
      n["posted_data_credits"] = 64;
      n["completion_header_credits"] = 4;
      n["completion_data_credits"] = 64;
    }
  }
  return topology;
}

// One transfer of a stream: at `at`, `src` writes `len` bytes to (or reads them from) the
// memory of node `target` at `offset`.
struct StreamOp {
  Picoseconds at;
  bool read;
  std::string src;
  std::string target;
  std::uint64_t offset;
  std::uint32_t len;
};

inline std::vector<StreamOp> random_stream(const nlohmann::json& topology, std::uint64_t seed,
                                           int count) {
  std::vector<std::string> requesters, memories;
  for (const auto& n : topology.at("nodes")) {
    const std::string kind = n.at("kind");
    const std::string id = n.at("id");
    if (kind == "gpu" || kind == "nvme_ssd") requesters.push_back(id);
    if (kind == "gpu" || kind == "host_memory" || kind == "cxl_memory") memories.push_back(id);
  }
  // Sizes of queue entries, doorbells, flags, data blocks, unaligned and long transfers.
  const std::uint32_t sizes[] = {4, 8, 16, 64, 100, 256, 512, 4096, 4096, 4096, 8192, 65536};
  std::mt19937_64 random(seed);
  std::vector<StreamOp> ops;
  Picoseconds at = 0;
  for (int i = 0; i < count; ++i) {
    StreamOp op;
    // Mostly back to back (bursts meet on shared links), sometimes after a gap.
    at += random() % 4 == 0 ? random() % 2'000'000 : random() % 20'000;
    op.at = at;
    op.read = random() % 2 == 0;
    op.src = requesters[random() % requesters.size()];
    do {
      op.target = memories[random() % memories.size()];
    } while (op.target == op.src);
    op.len = random() % 5 == 0 ? static_cast<std::uint32_t>(1 + random() % 20000)
                               : sizes[random() % std::size(sizes)];
    op.offset = (random() % 4096) * 64 + (random() % 3 == 0 ? random() % 64 : 0);
    ops.push_back(op);
  }
  return ops;
}

// What a stream produced: each transfer's delivery time (or that the platform refused its
// path), then the fabric's report and paths.
struct StreamRun {
  std::string deliveries;
  nlohmann::json report;
  nlohmann::json paths;
  std::string text() const { return deliveries + report.dump() + "\n" + paths.dump(); }
};

// Runs `ops` on a fresh fabric of `topology`, set up by `configure` first.
inline StreamRun run_stream(const nlohmann::json& topology, const std::vector<StreamOp>& ops,
                            const std::function<void(Fabric&)>& configure) {
  Bench b(topology.dump());
  configure(b.fabric);
  for (std::size_t i = 0; i < b.topology.nodes.size(); ++i) {
    const NodeConfig& n = b.topology.nodes[i];
    if (n.kind == "cxl_memory") {
      b.base[n.id] = b.memory.allocate(1ull << 30, i, RegionKind::HostMemory, n.id).base;
    }
  }
  constexpr Picoseconds kRefused = ~Picoseconds{0};
  std::vector<Picoseconds> done(ops.size(), 0);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const StreamOp& op = ops[i];
    b.at(op.at, [&b, &done, &op, i] {
      const std::uint64_t addr = b.base.at(op.target) + op.offset;
      try {
        if (op.read) {
          b.fabric.read(
              b.node(op.src), addr, op.len,
              [&done, i](const std::uint8_t*, std::uint32_t) { done[i] = Simulation::now(); });
        } else {
          b.fabric.write(b.node(op.src), addr, op.len, nullptr,
                         [&done, i] { done[i] = Simulation::now(); });
        }
      } catch (const BlockedTransfer&) {
        done[i] = kRefused;
      }
    });
  }
  b.run();
  StreamRun run;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    run.deliveries += done[i] == kRefused ? fmt::format("{} refused\n", i)
                      : done[i] == 0      ? fmt::format("{} never delivered\n", i)
                                          : fmt::format("{} {}\n", i, done[i]);
  }
  run.report = b.fabric.report(Simulation::now());
  run.paths = b.fabric.paths();
  return run;
}

}  // namespace gpunvme::pcie::testing
