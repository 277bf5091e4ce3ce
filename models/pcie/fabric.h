// The PCIe fabric. Every throughput-limited resource is a next-available-time server: each
// direction of each link (PCIe or inter-socket), each root complex's internal fabric (root ports
// to memory, memory to root ports, root port to root port) and each host memory. A transfer (a
// DMA burst, a doorbell write, a read request and later its completions) is charged
// byte-exactly by link_accounting and moves as one event per stage:
//  * cut-through: a stage starts when the burst's head arrives and the server is free; the head
//    moves on after the first TLP, the tail after the whole burst (and never before it arrived);
//  * credits: a stage on a PCIe link also needs room in the receiver's buffer for the burst's
//    TLP class (flow_control.h). Credits flow per TLP: each TLP's room comes back one credit
//    loop after it was sent (its serialization, the flight and traversal into the receiver, the
//    UpdateFC flight back), so a burst streaming at its pace holds only the TLPs of one loop,
//    not the whole burst; where the receiver is a switch whose egress drains slower than the
//    burst arrives, it also holds the backlog that builds up there. A burst books that window
//    and holds it until its tail has left the receiver plus the UpdateFC flight. A receiver
//    with fewer credits than the window throttles the burst to credits per loop (its tail is
//    stretched; the link stays free for other traffic meanwhile). A burst without room waits
//    (one wake-up event when its room is due back). Bursts of one class on one link direction
//    keep their order; another
//    class may pass a burst that waits for credits (PCIe lets posted traffic pass, which keeps
//    it deadlock-free; a completion passing a waiting posted burst is a simplification, only
//    possible while posted credits are exhausted). Time spent waiting is reported per link
//    direction as credit stall;
//  * transaction limits: a root complex's memory fabric (in, out) turns every TLP into
//    cache-line transactions, one per `line_bytes` of data and at least one per TLP, and serves
//    `lines_per_ns` of them each way; a switch egress port forwards at most `tlps_per_ns` TLPs.
//    A stage is busy for the longer of its byte time and its transaction time;
//  * classes interleave: a burst waits only for earlier bursts of its own TLP class on a stage;
//    where another class's work is booked ahead of it, their TLPs alternate (the burst ends
//    later by up to its own length) and the stage's total work is conserved, as a transmitter
//    or root complex arbitrating per TLP between its posted, non-posted and completion queues;
//  * tags: a requester has at most `read_tags` read requests outstanding; a read waits for tags.
//    A read longer than a quarter of the tags' requests is issued in parts that free their
//    tags as each ends, as hardware frees a tag per request;
//  * the IOMMU of a translating root complex looks every request up in its IOTLB where the
//    request enters the root complex; misses delay it (one page walk after another), and one
//    requester's requests stay in order behind its walks;
//  * switch egress arbitration (`port_arbitration` of the switch): fcfs books a burst on the
//    egress link when its head arrives, which with next-available-time servers is a first come,
//    first served egress queue, at no extra event. round_robin books a burst at once only when
//    the egress is idle and nothing waits; otherwise it waits in its ingress port's queue and
//    the egress, when free, takes the next non-empty ingress port in turn: one wake-up event
//    per contended burst, none without contention. The egress skips an ingress port whose
//    oldest burst has no room in the receiver while another port's has; where none has, the
//    next port in turn is picked and waits for credits as under fcfs;
//  * CXL: a link to a cxl_memory node carries flits of cache-line messages (models/cxl), and
//    the expander serves like host memory, at its bandwidth after `access_latency_ns`;
//  * targets: host memory serves at its bandwidth after `dma_latency_ns`, a GPU's BAR after
//    `bar_access_ns`, an SSD's registers at once.
// Paths come from the Router (routing.h): ACS, IOMMU and peer-to-peer policies applied to the
// topology graph. A path the platform refuses is an error naming the pair and the reason.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "models/pcie/flow_control.h"
#include "models/pcie/iotlb.h"
#include "models/pcie/link_accounting.h"
#include "models/pcie/routing.h"
#include "models/topology/topology_graph.h"
#include "sim/kernel/component.h"
#include "sim/kernel/inplace_function.h"
#include "sim/kernel/memory_space.h"
#include "sim/kernel/params/resolved_config.h"
#include "sim/kernel/server.h"

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

// A transfer whose path the platform refuses (ACS redirect to a root complex that does not
// forward peer traffic, an IOMMU without a mapping, peer traffic across root complexes on a
// platform that refuses it). Real hardware drops the write or completes the read with
// Unsupported Request; the simulator stops and says why.
class BlockedTransfer : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Fabric : public Component {
 public:
  // In place: a DMA engine's chunk callback (its this pointer, the job and the
  // chunk's length) would not fit std::function's two words.
  using Delivered = InplaceFunction<void(), 32>;
  using ReadDone = std::function<void(const std::uint8_t* data, std::uint32_t len)>;

  Fabric(const sc_core::sc_module_name& name, const TopologyConfig& topology,
         const TopologyGraph& graph, MemorySpace& memory);

  void attach_registers(const Region& region, RegisterTarget* target);

  // A posted memory write of `len` bytes from node `src` to `addr`. `data` is
  // copied and lands in simulated memory on delivery; null for bulk payload
  // whose contents the models do not keep. Throws BlockedTransfer when the
  // platform refuses the path.
  // `tenant` (0: none) is the tenant a shared device moves the data for: its requests are
  // counted per tenant (tenant_traffic), and with tenant_pasids() they carry the tenant's
  // PASID, so the IOMMU translates them in the tenant's domain.
  void write(std::size_t src, std::uint64_t addr, std::uint32_t len, const void* data,
             Delivered delivered, std::uint32_t tenant = 0);
  // A non-posted memory read; `done` receives the bytes as the target held
  // them when it served the request. Waits for free tags first.
  void read(std::size_t src, std::uint64_t addr, std::uint32_t len, ReadDone done,
            std::uint32_t tenant = 0);

  // What one tenant's requests cost: requests and bytes, bytes by the path taken (translated
  // by an IOMMU, redirected by a switch's ACS, or neither), IOTLB lookups, misses and walk
  // time.
  struct TenantTraffic {
    std::uint64_t requests = 0;
    std::uint64_t bytes = 0;
    std::uint64_t translated_bytes = 0;
    std::uint64_t redirected_bytes = 0;
    std::uint64_t iotlb_lookups = 0;
    std::uint64_t iotlb_misses = 0;
    Picoseconds walk_ps = 0;
  };
  // Tenant tags become PASIDs: the IOTLB keeps each tenant's entries apart (per-tenant IOMMU
  // domains). Off: a device's requests share one context whatever tenant they serve.
  void set_tenant_pasids(bool on) { tenant_pasids_ = on; }
  bool tenant_pasids() const { return tenant_pasids_; }
  // Zero counters for a tenant whose requests never reached the fabric.
  TenantTraffic tenant_traffic(std::uint32_t tenant) const;

  // Per link direction: utilization, bytes by TLP class, overhead bytes, credit stalls.
  nlohmann::json statistics(Picoseconds elapsed) const;
  // The result's "pcie" block: links, TLP totals, credit stalls, root complexes (fabric load,
  // IOTLB hits and misses), host memories, read-tag waits.
  nlohmann::json report(Picoseconds elapsed) const;
  // For each requester -> target pair that exchanged data, the path taken (like
  // `nvidia-smi topo -p2p`): route, nvidia-smi kind, direct / root complex / redirected /
  // translated / CPU fabric, bytes, IOTLB hits and misses of that pair. Device pairs come
  // first, then traffic with host memory and CPUs.
  nlohmann::json paths() const;
  std::uint64_t tlps(TlpClass cls) const;

  // A host core's cache-line traffic of `bytes` to memory node `memory` (a host_memory or
  // cxl_memory), issued now: booked on that memory's bandwidth, which DMA shares. Returns how
  // long earlier work kept the memory busy before it could start (0 when idle). The report
  // lists these bytes apart from DMA's, as "core_bytes".
  Picoseconds core_access(std::size_t memory, std::uint64_t bytes);

  const TlpRules& rules() const { return rules_; }
  const Router& router() const { return router_; }
  DllpIntervals dllp_intervals() const { return dllp_intervals_; }
  // Bytes per ns left for TLPs on one direction of `link` (index into the topology's links).
  double link_tlp_bytes_per_ns(std::size_t link) const;
  // Credit stall accumulated on a link direction named "from->to" (0 when unknown).
  Picoseconds credit_stall_ps(const std::string& direction) const;
  // The PCIe link of endpoint `node` goes down now and is retrained by `until`: neither
  // direction starts a burst before then (bursts already on the wire are delivered, as the
  // data link layer replays what it had not seen acknowledged). Returns how long the link
  // is held down from now (0 when the node has no link).
  Picoseconds hold_link(std::size_t node, Picoseconds until);
  // Bursts that had to wait for a retrain on the link of endpoint `node`.
  std::uint64_t retrain_waits(std::size_t node) const;

  // What a burst costs on each stage of its route (wire bytes, busy time, cache-line
  // transactions) depends only on the stage's server and the burst's WireCost, so the fabric
  // works it out once per route and cost and reuses it for every later burst alike (a stream of
  // 4 KB reads, one doorbell after another). On in every run; tests switch it off, so that every
  // stage's cost is computed afresh each time it is needed, and compare the two byte for byte.
  void set_stage_cost_memo(bool on) { stage_cost_memo_ = on; }
  // Fast mode (README, Fast mode): a burst's arrival at its target is worked out when the burst
  // is booked on the last stage of its route, instead of in an event of its own when its head
  // gets there. What arrival does there is known by then: the target's latency runs from the
  // later of the head's and the tail's arrival, and the last receiver's credits come back with
  // the tail plus the UpdateFC flight. So every delivery is at the same picosecond; the delivery
  // is asked for earlier, so among work due at one picosecond it may run earlier, and the
  // credits' return is announced earlier (for the same time). Host and CXL memory book their
  // bandwidth when the head arrives, and keep the event. Off (exact mode) by default.
  void set_fast_delivery(bool on) { fast_delivery_ = on; }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  static constexpr Picoseconds kNever = static_cast<Picoseconds>(-1);
  // A read holds at most this share of the requester's tags (see Fabric::read).
  static constexpr std::uint32_t kTagShares = 4;

  enum class ServerKind { PcieLink, InterSocket, RootComplexIn, RootComplexOut, RootComplexPeer };
  struct Server {
    std::string name;
    ServerKind kind = ServerKind::PcieLink;
    Gen gen = Gen::kGen4;
    Width width = Width::kX16;
    double bytes_per_ns = 0;  // every kind but PcieLink
    // PcieLink: tlp_bytes_per_ns at the fabric's MPS and DLLP intervals, computed once rather
    // than for every burst booked.
    double tlp_bytes_per_ns = 0;
    // Transaction-processing limits besides the byte rate; 0 = none. A root complex's memory
    // fabric (in, out) turns each TLP into cache-line transactions and serves `lines_per_ns` of
    // them; a switch's egress port forwards at most `tlps_per_ns` TLPs. A burst takes the
    // longest of its byte time and these.
    double lines_per_ns = 0;
    std::uint32_t line_bytes = 64;
    double tlps_per_ns = 0;
    std::uint64_t lines = 0;               // cache-line transactions served (root complex)
    Picoseconds transaction_bound_ps = 0;  // busy time beyond the byte time, from the limits
    NextFreeServer work;                   // all classes' work: free time, busy time
    // Per TLP class: when its last booked burst has left. A burst waits for its own class's
    // bursts only; another class's work interleaves with it TLP by TLP (Fabric::book).
    Picoseconds class_busy_until[3] = {0, 0, 0};
    std::uint64_t tlps[3] = {0, 0, 0};
    std::uint64_t wire_bytes[3] = {0, 0, 0};
    std::uint64_t payload_bytes[3] = {0, 0, 0};
    Picoseconds credit_stall_ps[3] = {0, 0, 0};
    std::uint64_t credit_stalls[3] = {0, 0, 0};
    // Bursts whose tail the receiver's credits held back (a window larger than the buffer), and
    // the time added beyond their wire and arrival times.
    Picoseconds credit_paced_ps[3] = {0, 0, 0};
    std::uint64_t credit_paced[3] = {0, 0, 0};
    // A link to a cxl_memory node carries CXL.mem flits of this size (models/cxl): its wire
    // bytes are whole flits of cache-line messages, not TLPs; 0 on PCIe links.
    std::uint32_t cxl_flit_bytes = 0;
    Picoseconds down_until = 0;       // link retraining (hold_link)
    std::uint64_t retrain_waits = 0;  // bursts that waited for it
  };
  struct Transfer;
  // The receive buffer of one link direction for one TLP class.
  struct Pool {
    CreditPool credits;
    std::deque<Transfer*> waiters;  // bursts of this class waiting, in order
    bool admitting = false;
    Picoseconds wake_at = kNever;  // when the first waiter's credits are known to come back
  };
  struct Iommu {
    std::size_t node;
    Iotlb iotlb;
    Picoseconds miss_ps;
    Picoseconds walk_ps = 0;
    std::map<std::size_t, Picoseconds> ready_at;  // per requester: its last translation done
    // Lookups and misses per (requester, target): the paths report lists one entry per pair,
    // and a requester that talks to several targets (an SSD writing into GPU memory and
    // reading host memory) must not show its whole count on each of them.
    std::map<std::pair<std::size_t, std::size_t>, std::pair<std::uint64_t, std::uint64_t>>
        per_pair;  // lookups, misses
  };
  struct MemoryServer {
    std::size_t node;
    double bytes_per_ns;
    Picoseconds latency_ps;
    NextFreeServer server{};
    std::uint64_t bytes = 0;
    std::uint64_t core_bytes = 0;  // host cores' accesses (core_access)
  };
  struct Stage {
    std::size_t server;
    Picoseconds latency_after = 0;  // flight and traversal before the head reaches the next stage
    std::size_t pool = kNone;       // first of the receiver's three pools (one per class)
    Picoseconds credit_return = 0;  // UpdateFC flight back to this stage's transmitter
    std::size_t iommu = kNone;      // translate requests before this stage
    std::size_t arbiter = kNone;    // round-robin egress arbitration of a switch, if any
    std::size_t ingress = 0;        // the node the burst entered the switch from
  };
  // What one burst costs on one stage's server (Fabric::stage_cost).
  struct StageCost {
    std::uint64_t wire_bytes = 0;  // wire_bytes()
    Picoseconds burst = 0;         // serialization(): the server's busy time
    std::uint64_t lines = 0;       // cache-line transactions at a root complex's memory fabric
    Picoseconds transaction_bound = 0;
  };
  // The stage costs of one WireCost on one route.
  struct CostMemo {
    WireCost cost;
    std::vector<StageCost> stages;
  };
  // At most this many costs per route are kept; a route sees a few (a queue entry, a doorbell,
  // a data block, a read request and its completions), and a burst of yet another cost computes
  // its stage costs as it goes.
  static constexpr std::size_t kCostMemos = 8;
  struct Route {
    ResolvedPath path;
    std::vector<Stage> stages;
    // Reserved for kCostMemos entries and never cleared, so that a burst in flight can point at
    // its entry. Empty on a route with a CXL link, whose wire bytes also depend on the burst's
    // address (the cache lines it touches).
    std::vector<CostMemo> cost_memos;
    bool memoizable = true;
    Picoseconds lead_latency = 0;  // traversal before the first stage (none in a PCIe tree)
    std::size_t memory = kNone;    // index into memories_ when the target is host memory
    Picoseconds target_latency_ps = 0;
  };
  // Called when a transfer has reached its target; `data_ready` is the earliest time a reply
  // may finish leaving it (host memory streams a read's data out at its bandwidth).
  // In place: a write's or read's continuation (its bytes and the caller's
  // callback) would not fit std::function's two words.
  using Arrived = InplaceFunction<void(Picoseconds data_ready), 128>;
  struct Transfer {
    Route* route = nullptr;
    std::size_t stage = 0;
    TlpClass cls = TlpClass::PostedWrite;
    WireCost cost;
    Credits credits;  // what the whole burst needs in its class
    // The credit window of the current stage (Fabric::window): what the burst holds in the
    // receiver, and the shortest time its tail may take when the receiver's buffer is smaller
    // than the window and credits set the pace (0 when they do not).
    std::size_t window_stage = kNone;
    Credits window;
    Picoseconds credit_paced_ps = 0;
    // Its cost on each stage of the route, worked out once (Fabric::stage_cost); null: computed
    // at each use.
    const StageCost* stage_costs = nullptr;
    std::size_t requester = 0;  // whose IOMMU context translates it
    std::uint64_t addr = 0;     // what a request asks for: translated, and served by memory
    std::uint64_t len = 0;
    Picoseconds head_ps = 0;  // when the head reached the current stage
    Picoseconds tail_ps = 0;  // when the last byte has arrived where the transfer now is
    bool translated = false;
    std::uint32_t tenant = 0;        // Fabric::write's and read's `tenant`, on requests
    std::size_t arbitrated = kNone;  // the stage whose egress arbitration the burst has passed
    std::size_t held_pool = kNone;   // pool of the stage just crossed, until its credits return
    Credits held;
    Picoseconds held_return = 0;
    Arrived arrived;
  };
  // Round-robin arbitration of one switch egress (a link direction whose transmitter is a
  // switch with port_arbitration = round_robin).
  struct Arbiter {
    std::size_t server;
    std::map<std::size_t, std::deque<Transfer*>> queues;  // by ingress node
    std::size_t last = kNone;                             // ingress node served last
    std::uint64_t queued = 0;
    Picoseconds wake_at = kNever;
  };
  struct Tags {
    std::uint32_t available = 0;
    std::deque<std::pair<std::uint32_t, std::function<void()>>> waiting;  // needed, issue
    std::uint64_t waits = 0;
    Picoseconds wait_ps = 0;
  };
  // Per requester -> target pair, for the paths report.
  struct PairTraffic {
    std::uint64_t writes = 0, write_bytes = 0;
    std::uint64_t reads = 0, read_bytes = 0;
  };

  Route& route(std::size_t src, std::size_t dst, Traffic traffic);
  PairTraffic& pair_traffic(std::size_t src, std::size_t dst);
  void build_stages(Route& r, Traffic traffic);
  std::size_t owner_of(std::uint64_t addr, std::uint32_t len) const;
  void send(std::size_t src, std::size_t dst, TlpClass cls, const WireCost& cost,
            const Credits& credits, std::size_t requester, std::uint64_t addr, std::uint64_t len,
            Picoseconds data_ready, Arrived arrived, std::uint32_t tenant = 0);
  Transfer* new_transfer();
  void free_transfer(Transfer* t);
  void advance(Transfer* t);
  void arbitrate(std::size_t arbiter);
  void wake_arbiter(std::size_t arbiter, Picoseconds when);
  // Computes t->window and t->credit_paced_ps for the stage the burst's head is at (once).
  void window(Transfer* t);
  // Whether the receiver of the burst's current stage has its window free now, no burst of its
  // class waiting before it.
  bool has_room(Transfer* t);
  void book(Transfer* t, Picoseconds credits_free);
  void release(std::size_t pool, const Credits& credits, Picoseconds when);
  void admit(std::size_t pool);
  void arrive(Transfer* t);
  // Whether host or CXL memory serves the burst at its target at the memory's bandwidth (a
  // posted write or a read request into it; a read's completions go to their requester).
  static bool memory_serves(const Transfer& t) {
    return t.route->memory != kNone && t.cls != TlpClass::Completion;
  }
  Picoseconds release_at_tail(Transfer* t, Picoseconds head);
  // arrive() where no memory server serves the burst, with its head at the target at `head`
  // (now, or later where fast delivery books it at the last stage).
  void arrive_at(Transfer* t, Picoseconds head);
  // Fast delivery: arrive_at the head's arrival at the target, from the last stage's booking.
  void arrive_ahead(Transfer* t);
  // A read short enough to hold its tags until it ends (Fabric::read cuts longer ones).
  void read_part(std::size_t src, std::size_t dst, std::uint64_t addr, std::uint32_t len,
                 ReadDone done, std::uint32_t tenant);
  void issue_read(std::size_t src, std::size_t dst, std::uint64_t addr, std::uint32_t len,
                  std::uint32_t tags, const ReadAccounting& accounting, ReadDone done,
                  std::uint32_t tenant);
  void return_tags(std::size_t src, std::uint32_t tags);
  // Busy time of `server` for a burst of `cost.tlps` TLPs, `wire_bytes` on the wire and
  // `cost.payload_bytes` of data: the byte time, or longer where a transaction limit binds.
  // `lines` receives the burst's cache-line transactions at a root complex's memory fabric.
  Picoseconds serialization(const Server& server, std::uint64_t wire_bytes, const WireCost& cost,
                            std::uint64_t& lines, Picoseconds& transaction_bound) const;
  // The bytes burst `t` puts on `server`: TLPs with their link overheads on a PCIe link, whole
  // flits on a CXL link, the TLPs' bytes elsewhere.
  std::uint64_t wire_bytes(const Server& server, const Transfer& t) const;
  // Burst `t`'s cost on stage `stage` of its route: its wire bytes there and their
  // serialization(), from the route's memo where it has one.
  StageCost stage_cost(const Transfer& t, std::size_t stage) const;
  StageCost compute_stage_cost(const Server& server, const Transfer& t) const;
  // The memo entry of `cost` on route `r`, made on first use; null where the route keeps none.
  const StageCost* memoized_stage_costs(Route& r, const Transfer& t);
  Credits pool_capacity(std::size_t receiver, TlpClass cls) const;

  const TopologyConfig& topology_;
  const TopologyGraph& graph_;
  MemorySpace& memory_;
  Router router_;
  TlpRules rules_;
  DllpIntervals dllp_intervals_ = DllpIntervals::kSymbolTimes;
  std::uint32_t read_tags_;
  std::vector<Server> servers_;  // [2l] from->to and [2l+1] to->from of link l, then root complexes
  std::map<std::size_t, std::size_t>
      rc_servers_;  // root complex node -> its first server (in, out, peer)
  std::map<std::size_t, std::size_t> pools_of_;  // link direction server -> first of its 3 pools
  std::vector<Pool> pools_;
  std::vector<Arbiter> arbiters_;
  std::map<std::size_t, std::size_t> arbiter_of_;  // link direction server -> arbiters_ index
  std::vector<Iommu> iommus_;
  std::map<std::size_t, std::size_t> iommu_of_;  // translating root complex node -> iommus_ index
  std::vector<MemoryServer> memories_;
  std::map<std::size_t, std::size_t> memory_of_;  // host memory node -> memories_ index
  std::map<std::tuple<std::size_t, std::size_t, int>, Route> routes_;
  // routes_ by (src * nodes + dst) * 2 + traffic, filled as routes are first taken: every burst
  // looks its route up, and the map's tuple compares showed in profiles.
  std::vector<Route*> route_index_;
  std::map<std::size_t, Tags> tags_;
  std::map<std::pair<std::size_t, std::size_t>, PairTraffic> pairs_;
  std::vector<PairTraffic*> pair_index_;  // pairs_ by src * nodes + dst, as route_index_
  std::map<std::uint64_t, RegisterTarget*> register_targets_;  // by region base
  // Every transfer record ever made; one is in flight from send until its `arrived` has run, then
  // waits in free_transfers_ for reuse. A burst is one record per hop-by-hop journey, several
  // per simulated I/O, and a make_shared each was among the simulator's hottest allocations.
  // Records live as long as the fabric, so the raw pointers in pending callbacks stay valid.
  std::vector<std::unique_ptr<Transfer>> transfers_;
  std::vector<Transfer*> free_transfers_;
  bool tenant_pasids_ = false;
  std::map<std::uint32_t, TenantTraffic> tenant_traffic_;
  bool stage_cost_memo_ = true;
  bool fast_delivery_ = false;
};

}  // namespace gpunvme::pcie
