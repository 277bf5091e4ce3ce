// The PCIe fabric: every link direction is a next-available-time server, and
// every transfer (a DMA burst, a doorbell write, a read and its completions)
// moves as one event per hop, charged byte-exactly by link_accounting. Routes
// come from the topology graph; switches and root complexes add their
// traversal latency; targets add their access latency.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/pcie/link_accounting.h"
#include "sim/config/run_config.h"
#include "sim/kernel/component.h"
#include "sim/kernel/memory_space.h"
#include "sim/topology/topology_graph.h"

namespace gpunvme::pcie {

// A device that decodes writes to its register BAR (an NVMe controller's
// doorbells). Reads of registers are not on any modelled hot path.
class RegisterTarget {
 public:
  virtual ~RegisterTarget() = default;
  virtual void on_register_write(std::uint64_t offset, const std::uint8_t* data,
                                 std::uint32_t len) = 0;
};

// Transaction classes, as counted in the statistics.
enum class TlpClass { PostedWrite = 0, ReadRequest = 1, Completion = 2 };

class Fabric : public Component {
 public:
  using Delivered = std::function<void()>;
  using ReadDone = std::function<void(const std::uint8_t* data, std::uint32_t len)>;

  Fabric(const sc_core::sc_module_name& name, const TopologyConfig& topology,
         const TopologyGraph& graph, MemorySpace& memory);

  void attach_registers(const Region& region, RegisterTarget* target);

  // A posted memory write of `len` bytes from node `src` to `addr`. `data` is
  // copied and lands in simulated memory on delivery; null for bulk payload
  // whose contents the models do not keep.
  void write(std::size_t src, std::uint64_t addr, std::uint32_t len, const void* data,
             Delivered delivered);
  // A non-posted memory read; `done` receives the bytes as the target held
  // them when it served the request.
  void read(std::size_t src, std::uint64_t addr, std::uint32_t len, ReadDone done);

  // Per link direction: utilization, bytes by TLP class, overhead bytes.
  nlohmann::json statistics(Picoseconds elapsed) const;
  std::uint64_t tlps(TlpClass cls) const;

  const TlpRules& rules() const { return rules_; }

 private:
  struct Hop {
    std::size_t server;      // index into servers_, or npos for a hop with no link
    Picoseconds latency_ps;  // link flight plus the traversal of the node it enters
  };
  struct Route {
    std::vector<Hop> hops;
    Picoseconds target_latency_ps = 0;
  };
  struct Server {
    std::string name;
    double bytes_per_ns = 0;  // inter-socket links
    Gen gen = Gen::kGen4;
    Width width = Width::kX16;
    bool is_pcie = true;
    Picoseconds busy_until = 0;
    Picoseconds busy_ps = 0;
    std::uint64_t tlps[3] = {0, 0, 0};
    std::uint64_t wire_bytes[3] = {0, 0, 0};
    std::uint64_t payload_bytes[3] = {0, 0, 0};
  };
  struct Transfer {
    const Route* route;
    std::size_t hop = 0;
    TlpClass cls;
    WireCost cost;
    Picoseconds tail_ps = 0;  // when the last byte has arrived where the transfer now is
    std::function<void()> arrived;
  };

  const Route& route(std::size_t src, std::size_t dst);
  std::size_t owner_of(std::uint64_t addr, std::uint32_t len) const;
  void advance(std::unique_ptr<Transfer> transfer);
  void send(std::size_t src, std::size_t dst, TlpClass cls, const WireCost& cost,
            std::function<void()> arrived);
  Picoseconds serialization(const Server& server, std::uint64_t wire_bytes) const;

  const TopologyConfig& topology_;
  const TopologyGraph& graph_;
  MemorySpace& memory_;
  TlpRules rules_;
  std::vector<Server> servers_;  // two per link: [2l] from->to, [2l+1] to->from
  std::map<std::pair<std::size_t, std::size_t>, Route> routes_;
  std::map<std::uint64_t, RegisterTarget*> register_targets_;  // by region base
};

}  // namespace gpunvme::pcie
