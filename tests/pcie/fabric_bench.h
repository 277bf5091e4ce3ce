// A small machine for fabric tests: a topology from JSON, its graph, the address space with
// 1 GiB of memory per GPU and per host memory node, the fabric, and a driver that issues
// transfers at chosen simulated times. Plus the independent oracles the tests compare with:
// link rates recomputed from the PCIe spec's figures, not from the model's code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/pcie/fabric.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/component.h"
#include "sim/kernel/simulation.h"
#include "sim/system/run/catalog.h"

namespace gpunvme::pcie::testing {

class Driver : public Component {
 public:
  Driver() : Component("driver", ParamValues()) {}
};

struct Bench {
  Simulation simulation;  // first: every component below lives in its context
  TopologyConfig topology;
  TopologyGraph graph;
  MemorySpace memory;
  Fabric fabric;
  Driver driver;
  std::map<std::string, std::uint64_t> base;  // memory base of each GPU and host memory

  explicit Bench(const std::string& json)
      : topology(resolve_topology(catalog(), nlohmann::json::parse(json), "bench.json")),
        graph(topology),
        fabric("pcie", topology, graph, memory) {
    for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
      const NodeConfig& n = topology.nodes[i];
      if (n.kind == "gpu") {
        base[n.id] = memory.allocate(1ull << 30, i, RegionKind::DeviceMemory, n.id).base;
      } else if (n.kind == "host_memory") {
        base[n.id] = memory.allocate(1ull << 30, i, RegionKind::HostMemory, n.id).base;
      }
    }
  }

  std::size_t node(const std::string& id) const {
    return static_cast<std::size_t>(topology.node(id) - topology.nodes.data());
  }
  void at(Picoseconds when, std::function<void()> action) {
    driver.schedule_at(when, std::move(action));
  }
  void run() { simulation.run(); }
  // The statistics of one link direction ("from->to"), or null.
  nlohmann::json link(const std::string& direction, Picoseconds elapsed) const {
    for (const auto& l : fabric.statistics(elapsed)) {
      if (l["direction"] == direction) return l;
    }
    return nullptr;
  }
};

// ACK and UpdateFC intervals at 8 GT/s and up, MPS 256, in symbol times: PCIe Base Spec r5.0
// Tables 3-9 and 2-48 (x4 214, x8 203, x16 168).
inline int dllp_interval_mps256(int lanes) {
  return lanes == 4 ? 214 : lanes == 8 ? 203 : lanes == 16 ? 168 : 0;
}

// Bytes per ns left for TLPs on one direction of a 128b/130b link: the line rate less one ACK
// and one UpdateFC DLLP (8 B each) per interval and SKP ordered sets (4 B per 1538 B).
// pcie-bench (model/pcie.py TLP_bw) reads the interval as bytes; the spec's symbol time carries
// one byte on every lane, so the interval is interval x lanes bytes.
inline double tlp_bytes_per_ns(double gtps, int lanes, bool pcie_bench = false) {
  const double raw = gtps * lanes * (128.0 / 130.0) / 8.0;
  const double interval = dllp_interval_mps256(lanes) * (pcie_bench ? 1.0 : lanes);
  return raw * (1.0 - 16.0 / interval - 4.0 / 1538.0);
}

// Picoseconds one TLP of `wire_bytes` carrying `lines` cache lines (at least one) spends in a
// root complex's memory fabric with the declared defaults: 128 GB/s of wire bytes, 0.861 line
// transactions per ns (root_complex.fabric_bandwidth_gbps, lines_per_ns), whichever is longer.
inline double root_complex_ps(double wire_bytes, double lines = 1) {
  return std::max(wire_bytes / 128.0, lines / 0.861) * 1000.0;
}

// Picoseconds `bytes` take at `bytes_per_ns`.
inline double ps_for(double bytes, double bytes_per_ns) { return bytes / bytes_per_ns * 1000.0; }

// Steady-state payload rate in GB/s of transfers that completed at `done`: the spacing of their
// completions, which leaves out the fixed latency of the first.
inline double payload_gbps(const std::vector<Picoseconds>& done, double bytes_each) {
  const double span_ps = static_cast<double>(done.back() - done.front());
  return (static_cast<double>(done.size()) - 1.0) * bytes_each / span_ps * 1000.0;
}

}  // namespace gpunvme::pcie::testing
