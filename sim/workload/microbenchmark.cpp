#include "sim/workload/microbenchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>
#include <systemc>

#include "sim/algo/completion.h"
#include "sim/algo/io_agents.h"
#include "sim/algo/mapping.h"
#include "sim/algo/queue_state.h"
#include "sim/algo/strategy.h"
#include "sim/config/config_error.h"
#include "sim/kernel/threads.h"
#include "sim/protocol/nvme_commands.h"
#include "sim/protocol/nvme_entries.h"

namespace gpunvme {

namespace {
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

// Where the host driver that brings an SSD up runs: the host memory nearest
// the SSD (fewest hops) and the CPU socket it belongs to. Without host memory
// the driver keeps its admin queues in GPU memory and its MMIO comes from
// the GPU.
struct HostSide {
  std::size_t cpu;
  std::size_t memory;
};
HostSide host_side(const Machine& machine, std::size_t ssd, std::size_t gpu) {
  const TopologyConfig& topology = machine.topology();
  HostSide best{gpu, host::NvmeDriver::kNoHostMemory};
  std::size_t best_hops = static_cast<std::size_t>(-1);
  for (std::size_t i = 0; i < topology.nodes.size(); ++i) {
    const NodeConfig& node = topology.nodes[i];
    if (node.kind != "host_memory") continue;
    const std::string& socket = node.params.string("socket");
    const std::size_t hops = machine.graph().route(i, ssd).size();
    if (socket.empty() || hops == 0 || hops >= best_hops) continue;
    best = HostSide{machine.node_index(socket), i};
    best_hops = hops;
  }
  return best;
}

algo::NamedStrategy named_from(const std::string& name) {
  if (name == "all_threads") return algo::NamedStrategy::AllThreads;
  if (name == "bam_ticket") return algo::NamedStrategy::BamTicket;
  if (name == "io_agents") return algo::NamedStrategy::IoAgents;
  if (name == "per_warp_queue") return algo::NamedStrategy::PerWarpQueue;
  return algo::NamedStrategy::WarpBatch;
}

std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

using algo::local_cid_bits;

// The SM a thread block runs on, by block index (Gpu::block_sm).
using BlockSm = std::function<std::uint32_t(std::uint32_t block)>;

// The queue mapping a plan asks for (sim/algo/mapping.h).
algo::QueueMap queue_map_of(const StrategyPlan& plan, std::uint32_t per_ssd, std::uint32_t ssds,
                            std::uint32_t agents) {
  algo::QueueMap m;
  m.mapping = plan.strategy.mapping;
  m.ssd_mapping = plan.ssd_mapping;
  m.exclusive = plan.strategy.submission == algo::Submission::Exclusive;
  m.agents = plan.agents ? agents : 0;
  m.queues_per_ssd = per_ssd;
  m.ssds = ssds;
  return m;
}

// Each warp's index among the warps sharing its home queue, and the most
// warps any queue has.
struct Partitions {
  std::vector<std::uint32_t> index;
  std::uint32_t users = 1;
};
Partitions cid_partitions(const StrategyPlan& plan, std::uint32_t warps,
                          std::uint32_t warps_per_block, const BlockSm& block_sm,
                          std::uint32_t per_ssd, std::uint32_t ssds) {
  Partitions out;
  out.index.resize(warps);
  std::vector<std::uint32_t> seen(std::size_t{per_ssd} * ssds, 0);
  const algo::QueueMap map = queue_map_of(plan, per_ssd, ssds, 0);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t home = algo::home_queue(map, w, block_sm(w / warps_per_block));
    out.index[w] = home == ~0u ? w : seen[home]++;
    out.users = std::max(out.users, out.index[w] + 1);
  }
  return out;
}

std::uint32_t cid_space_of(const algo::Strategy& st, std::int64_t configured, std::uint32_t entries,
                           std::uint32_t users, std::uint32_t iodepth) {
  return algo::cid_space_for(st.cid, configured, entries, users, iodepth);
}

void check_strategy(const RunConfig& config) {
  const ParamValues& s = config.scenario.params;
  const std::string& file = config.scenario.file;
  const StrategyPlan plan = strategy_plan(config);
  const algo::Strategy& st = plan.strategy;
  const NodeConfig& gpu = *config.topology.node(s.string("gpu"));
  const auto sms = static_cast<std::uint32_t>(gpu.params.integer("sms"));
  const auto max_warps_per_sm = static_cast<std::uint32_t>(gpu.params.integer("max_warps_per_sm"));
  const auto threads = static_cast<std::uint64_t>(s.integer("threads"));
  const std::uint32_t warps = ceil_div(threads, 32);
  const std::uint32_t warps_per_block = ceil_div(s.integer("threads_per_block"), 32);
  const auto per_ssd = static_cast<std::uint32_t>(s.integer("queues"));
  const auto ssds = static_cast<std::uint32_t>(s.string_list("ssds").size());
  const std::uint32_t all_queues = per_ssd * ssds;
  const auto entries = static_cast<std::uint32_t>(s.integer("queue_entries"));
  const auto iodepth = static_cast<std::uint32_t>(s.integer("iodepth"));
  const bool stripe = plan.ssd_mapping == algo::SsdMapping::Stripe;
  auto fixed = [&](const char* field, const std::string& why) {
    if (s.string(field) != "strategy") {
      throw ConfigError(file, std::string("$.") + field, "\"" + s.string(field) + "\"", why);
    }
  };
  if (all_queues > 65535) {
    throw ConfigError(
        file, "$.queues", std::to_string(per_ssd),
        fmt::format("{} queues over {} SSDs: at most 65,535 in one run", all_queues, ssds));
  }
  if (plan.agents) {
    const std::string why = "io_agents fixes it: agents own their queues; leave it \"strategy\"";
    fixed("queue_mapping", why);
    fixed("submission", why);
    fixed("completion", why);
    if (st.cid != algo::CidScheme::SqSlot) {
      throw ConfigError(file, "$.cid_scheme", "\"" + s.string("cid_scheme") + "\"",
                        "io_agents uses CID = SQ slot (an agent owns its queues)");
    }
    if (s.integer("agent_warps") > per_ssd) {
      throw ConfigError(file, "$.agent_warps", std::to_string(s.integer("agent_warps")),
                        fmt::format("each agent owns at least one queue per SSD: at most {} "
                                    "(queues)",
                                    per_ssd));
    }
  } else {
    if (st.submission == algo::Submission::AgentBatch ||
        st.mapping == algo::QueueMapping::PerAgent) {
      throw ConfigError(file, "$.strategy", "\"" + plan.name + "\"",
                        "agent submission needs strategy io_agents");
    }
    const bool exclusive = st.submission == algo::Submission::Exclusive;
    if (exclusive != (st.completion == algo::Completion::OwnerDrain)) {
      throw ConfigError(file, "$.completion", "\"" + s.string("completion") + "\"",
                        "exclusive submission and owner_drain completion go together (a warp "
                        "that owns its queue drains it)");
    }
    if (exclusive) {
      if (st.mapping != algo::QueueMapping::PerWarp) {
        throw ConfigError(file, "$.queue_mapping", "\"" + s.string("queue_mapping") + "\"",
                          "a warp that owns its queue needs the per_warp mapping");
      }
      const std::uint32_t available = stripe ? per_ssd : all_queues;
      if (warps > available) {
        throw ConfigError(file, "$.threads", std::to_string(threads),
                          fmt::format("each of the {} warps owns a queue{}, but there are {}",
                                      warps, stripe ? " on every SSD" : "", available));
      }
      if (stripe && ssds > algo::kMaxOwnedQueues) {
        throw ConfigError(
            file, "$.ssds", std::to_string(ssds),
            fmt::format("a warp owns one queue per SSD, at most {}", algo::kMaxOwnedQueues));
      }
    }
    if (st.completion == algo::Completion::PollingWarps &&
        static_cast<std::uint32_t>(s.integer("poller_warps")) > all_queues) {
      throw ConfigError(
          file, "$.poller_warps", std::to_string(s.integer("poller_warps")),
          fmt::format("each polling warp drains at least one of the {} queues", all_queues));
    }
  }
  const std::uint32_t service = plan.agents ? static_cast<std::uint32_t>(s.integer("agent_warps"))
                                : plan.pollers
                                    ? static_cast<std::uint32_t>(s.integer("poller_warps"))
                                    : 0;
  const std::uint32_t blocks = ceil_div(std::uint64_t{warps} + service, warps_per_block);
  if (ceil_div(blocks, sms) * warps_per_block > max_warps_per_sm) {
    throw ConfigError(
        file, "$.threads", std::to_string(threads),
        fmt::format("{} warps{} in blocks of {} need {} resident warps on an SM; "
                    "{} holds {} (waves of blocks are not modelled)",
                    warps, service ? fmt::format(" (+{} service warps)", service) : "",
                    warps_per_block, ceil_div(blocks, sms) * warps_per_block, gpu.id,
                    max_warps_per_sm));
  }
  const std::int64_t cid_space = s.integer("cid_space");
  if ((st.cid == algo::CidScheme::Counter || st.cid == algo::CidScheme::CounterLock) &&
      cid_space != 0 && cid_space < entries) {
    throw ConfigError(file, "$.cid_space", std::to_string(cid_space),
                      fmt::format("must be at least queue_entries ({}): every command the queue "
                                  "holds needs its own CID",
                                  entries));
  }
  if (st.cid == algo::CidScheme::WarpPartition || st.cid == algo::CidScheme::ThreadPool) {
    if (st.cid == algo::CidScheme::WarpPartition && local_cid_bits(iodepth) > 10) {
      throw ConfigError(file, "$.iodepth", std::to_string(iodepth),
                        "warp_partition keeps at most 1024 warp-local CIDs (iodepth <= 32)");
    }
    // Where the GPU's blocks go (its block_sm_order; checked when the GPU
    // is built).
    const std::vector<std::int64_t> order = gpu.params.integer_list("block_sm_order");
    const BlockSm block_sm = [&](std::uint32_t block) {
      return order.size() == sms ? static_cast<std::uint32_t>(order[block % sms]) : block % sms;
    };
    const Partitions parts = cid_partitions(plan, warps, warps_per_block, block_sm, per_ssd, ssds);
    const std::uint64_t space = cid_space_of(st, 0, entries, parts.users, iodepth);
    if (space > 65536) {
      throw ConfigError(file, "$.cid_scheme", "\"" + s.string("cid_scheme") + "\"",
                        fmt::format("{} warps share a queue and each needs {} CIDs: {} > 65,536",
                                    parts.users, space / parts.users, space));
    }
  }
}

}  // namespace

StrategyPlan strategy_plan(const RunConfig& config) {
  const ParamValues& s = config.scenario.params;
  StrategyPlan plan;
  plan.name = s.string("strategy");
  const algo::NamedStrategy named = named_from(plan.name);
  plan.strategy = algo::named_strategy(named);
  algo::Strategy& st = plan.strategy;
  const std::string& mapping = s.string("queue_mapping");
  if (mapping == "per_sm") st.mapping = algo::QueueMapping::PerSm;
  if (mapping == "per_warp") st.mapping = algo::QueueMapping::PerWarp;
  if (mapping == "round_robin") st.mapping = algo::QueueMapping::RoundRobin;
  const std::string& cid = s.string("cid_scheme");
  if (cid == "sq_slot") st.cid = algo::CidScheme::SqSlot;
  if (cid == "counter") st.cid = algo::CidScheme::Counter;
  if (cid == "counter_lock") st.cid = algo::CidScheme::CounterLock;
  if (cid == "warp_partition") st.cid = algo::CidScheme::WarpPartition;
  if (cid == "thread_pool") st.cid = algo::CidScheme::ThreadPool;
  const std::string& submission = s.string("submission");
  if (submission == "per_command") st.submission = algo::Submission::PerCommand;
  if (submission == "ticket_ready") st.submission = algo::Submission::TicketReady;
  if (submission == "warp_batch") st.submission = algo::Submission::WarpBatch;
  if (submission == "exclusive") st.submission = algo::Submission::Exclusive;
  const std::string& completion = s.string("completion");
  if (completion == "cq_scan") st.completion = algo::Completion::CqScan;
  if (completion == "cid_flags") st.completion = algo::Completion::CidFlags;
  if (completion == "polling_warps") st.completion = algo::Completion::PollingWarps;
  if (completion == "owner_drain") st.completion = algo::Completion::OwnerDrain;
  plan.ssd_mapping =
      s.string("ssd_mapping") == "stripe" ? algo::SsdMapping::Stripe : algo::SsdMapping::Interleave;
  plan.agents = named == algo::NamedStrategy::IoAgents;
  plan.pollers = !plan.agents && st.completion == algo::Completion::PollingWarps;
  return plan;
}

void check_microbenchmark(const RunConfig& config) {
  const ParamValues& s = config.scenario.params;
  const std::string& file = config.scenario.file;
  const auto ssds = s.string_list("ssds");
  for (std::size_t k = 0; k < ssds.size(); ++k) {
    const NodeConfig& ssd = *config.topology.node(ssds[k]);
    const auto queues = s.integer("queues");
    const auto granted = ssd.params.integer("max_io_queues");
    if (queues > granted) {
      throw ConfigError(
          file, "$.queues", std::to_string(queues),
          fmt::format("{} grants at most {} I/O queues (max_io_queues)", ssd.id, granted));
    }
    const auto entries = s.integer("queue_entries");
    const auto mqes = ssd.params.integer("mqes");
    if (entries > mqes) {
      throw ConfigError(
          file, "$.queue_entries", std::to_string(entries),
          fmt::format("{} accepts queues of at most {} entries (mqes)", ssd.id, mqes));
    }
    if (s.string("sq_placement") == "cmb") {
      const auto cmb_mib = ssd.params.integer("cmb_mib");
      if (cmb_mib == 0) {
        throw ConfigError(file, "$.sq_placement", "\"cmb\"",
                          fmt::format("{} (profile {}) has no controller memory buffer "
                                      "(cmb_mib = 0); allowed: gpu, host, or cmb on an SSD "
                                      "with cmb_mib > 0",
                                      ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
      }
      const std::uint64_t sq_bytes = static_cast<std::uint64_t>(queues) * entries * 64;
      if (sq_bytes > (static_cast<std::uint64_t>(cmb_mib) << 20)) {
        throw ConfigError(file, "$.sq_placement", "\"cmb\"",
                          fmt::format("{} SQs of {} entries need {} B, more than {}'s {} MiB CMB",
                                      queues, entries, sq_bytes, ssd.id, cmb_mib));
      }
    }
    if (s.boolean("shadow_doorbells") && !ssd.params.boolean("shadow_doorbells")) {
      throw ConfigError(file, "$.shadow_doorbells", "true",
                        fmt::format("{} (profile {}) does not support Doorbell Buffer Config "
                                    "(its shadow_doorbells is false); allowed: false",
                                    ssd.id, ssd.profile.empty() ? "custom" : ssd.profile));
    }
    const auto bs = s.integer("bs");
    const auto lba = ssd.params.integer("lba_bytes");
    if (bs % lba != 0) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("must be a multiple of {}'s {} B LBAs", ssd.id, lba));
    }
    const auto mdts = ssd.params.integer("mdts");
    if (mdts != 0 && bs > (4096ll << mdts)) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        fmt::format("exceeds {}'s maximum transfer of {} B (mdts {})", ssd.id,
                                    4096ll << mdts, mdts));
    }
    if (bs > 4096ll * 513) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        "exceeds what one PRP list page describes (513 pages of 4 KiB)");
    }
    if (bs / lba > 65536) {
      throw ConfigError(file, "$.bs", std::to_string(bs),
                        "more than 65,536 LBAs in one command (NLB is 16 bits)");
    }
  }
  check_strategy(config);
}

Microbenchmark::Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config,
                               Machine& machine)
    : Component(name, config.scenario.params),
      config_(config),
      machine_(machine),
      gpu_(machine.gpu(config.scenario.params.string("gpu"))) {
  const ParamValues& s = config.scenario.params;
  total_ios_ = static_cast<std::uint64_t>(s.integer("ios"));
  time_based_ = s.boolean("time_based");
  runtime_ = ns_to_ps(s.real("runtime_us") * 1000.0);
  bytes_per_io_ = static_cast<std::uint64_t>(s.integer("bs"));
  iodepth_ = static_cast<std::uint32_t>(s.integer("iodepth"));
  threads_ = static_cast<std::uint32_t>(s.integer("threads"));
  const auto entries = static_cast<std::uint32_t>(s.integer("queue_entries"));
  const auto per_ssd = static_cast<std::uint32_t>(s.integer("queues"));
  const auto ssd_ids = s.string_list("ssds");

  // Queues in GPU memory, as BaM places them (queue_memory = host moves both
  // rings to pinned host memory behind the SSD's socket, as the hardware
  // backend's software controller keeps them; sq_placement may move the SQs
  // alone to host memory or the SSD's CMB); queue i of SSD k is at position
  // i * nssd + k so that consecutive warps alternate SSDs.
  const bool rings_in_host = s.string("queue_memory") == "host";
  const std::string sq_placement = s.string("sq_placement") != "gpu"
                                       ? s.string("sq_placement")
                                       : (rings_in_host ? "host" : "gpu");
  const bool shadow = s.boolean("shadow_doorbells");
  queues_.resize(per_ssd * ssd_ids.size());
  queue_span_lbas_.resize(queues_.size());
  std::vector<nvme::Controller*> controllers;
  for (const std::string& id : ssd_ids) controllers.push_back(&machine.ssd(id));
  deadlines_.arm(
      *this, controllers, [this](std::uint32_t ssd, std::uint16_t qid, std::uint16_t cid) {
        drivers_[ssd]->admin(nvme::make_abort(0, qid, cid), [](const nvme::CompletionEntry&) {});
      });
  for (std::size_t k = 0; k < ssd_ids.size(); ++k) {
    nvme::Controller& ssd = machine.ssd(ssd_ids[k]);
    const double span_gib = s.real("span_gib");
    const std::uint64_t span_lbas =
        span_gib > 0 ? static_cast<std::uint64_t>(span_gib * (1ull << 30)) / ssd.lba_bytes()
                     : ssd.capacity_lbas();  // validation keeps span_gib within every SSD
    // The host driver brings the SSD up and creates the queues through its
    // admin queue; the warps start once every SSD's queues exist.
    const HostSide side = host_side(machine, machine.node_index(ssd_ids[k]), gpu_.node());
    if ((sq_placement == "host" || rings_in_host) &&
        side.memory == host::NvmeDriver::kNoHostMemory) {
      throw ConfigError(config.scenario.file, rings_in_host ? "$.queue_memory" : "$.sq_placement",
                        "\"host\"",
                        fmt::format("no host_memory node of the topology reaches {}; allowed: "
                                    "gpu, host (with host memory), cmb (with a CMB)",
                                    ssd_ids[k]));
    }
    drivers_.push_back(std::make_unique<host::NvmeDriver>(
        fmt::format("{}_driver", ssd_ids[k]).c_str(), ssd, machine.fabric(), machine.memory(),
        side.cpu, side.memory, &gpu_));
    host::NvmeDriver& driver = *drivers_.back();
    std::vector<host::IoQueueSpec> specs;
    for (std::uint32_t i = 0; i < per_ssd; ++i) {
      algo::QueuePair q;
      q.trace_id = static_cast<std::uint32_t>(i * ssd_ids.size() + k);
      q.qid = static_cast<std::uint16_t>(i + 1);
      q.entries = entries;
      const std::uint64_t sq_bytes = std::uint64_t{entries} * nvme::kSqEntrySize;
      const std::uint64_t cq_bytes = std::uint64_t{entries} * nvme::kCqEntrySize;
      q.sq_base = sq_placement == "gpu"
                      ? gpu_.allocate(sq_bytes, 4096)
                      : driver.allocate(host::queue_placement_from_string(sq_placement), sq_bytes);
      q.cq_base = rings_in_host ? driver.allocate(host::QueuePlacement::host, cq_bytes)
                                : gpu_.allocate(cq_bytes, 4096);
      // Counters, gates, flags and CID state: prepare_queues, once the CID
      // space is known.
      if (bytes_per_io_ > 2 * 4096)
        q.prp_lists = gpu_.allocate(std::uint64_t{entries} * 4096, 4096);
      q.sq_doorbell = ssd.doorbell_address(true, q.qid);
      q.cq_doorbell = ssd.doorbell_address(false, q.qid);
      host::IoQueueSpec spec;
      spec.qid = q.qid;
      spec.entries = entries;
      spec.placement = rings_in_host ? host::QueuePlacement::host : host::QueuePlacement::gpu;
      spec.sq_base = q.sq_base;
      spec.cq_base = q.cq_base;
      specs.push_back(spec);
      queues_[q.trace_id] = q;
      queue_span_lbas_[q.trace_id] = span_lbas;
    }
    host::BringUpOptions bring_up;
    bring_up.io_queues = static_cast<std::uint16_t>(per_ssd);
    // Shadow doorbells and EventIdx in GPU memory: the GPU threads write and
    // read them at GPU-memory cost, the controller polls them over PCIe.
    bring_up.shadow_doorbells = shadow;
    bring_up.shadow_placement = host::QueuePlacement::gpu;
    driver.bring_up(bring_up, nullptr);
    driver.create_io_queues(std::move(specs), [this, controller = &ssd, &driver, k,
                                               nssd = static_cast<std::uint32_t>(ssd_ids.size()),
                                               shadow](std::vector<host::IoQueue> created) {
      for (const host::IoQueue& q : created) {
        if (q.status != nvme::Status::Success) {
          throw std::runtime_error(fmt::format("{}: Create I/O queue {} failed: {}",
                                               controller->id(), q.qid,
                                               nvme::status_name(q.status)));
        }
        if (shadow) {
          // Known once Doorbell Buffer Config has run (bring-up).
          algo::QueuePair& pair = queues_[(q.qid - 1u) * nssd + k];
          pair.sq_shadow = driver.shadow_doorbell(nvme::DoorbellKind::SqTail, q.qid);
          pair.cq_shadow = driver.shadow_doorbell(nvme::DoorbellKind::CqHead, q.qid);
          pair.sq_event_idx = driver.event_idx(nvme::DoorbellKind::SqTail, q.qid);
          pair.cq_event_idx = driver.event_idx(nvme::DoorbellKind::CqHead, q.qid);
        }
      }
      if (++drivers_ready_ == drivers_.size()) start_warps();
    });
  }

  buffer_stride_ = round_up(bytes_per_io_, 4096);
  buffers_ = gpu_.allocate(std::uint64_t{threads_} * iodepth_ * buffer_stride_, 4096);

  plan_warps();
  prepare_queues();
}

void Microbenchmark::start_warps() {
  started_at_ = now();
  // fio counts runtime from when the job starts issuing, after setup: here
  // once every SSD's queues exist.
  if (runtime_ > 0) deadline_ = now() + runtime_;
  spawn_threads("warp", warps_.size(), [this](std::size_t w) { warp_main(w); });
  spawn_threads("agent", plan_.agents ? service_warps_ : 0,
                [this](std::size_t a) { agent_main(static_cast<std::uint32_t>(a)); });
  spawn_threads("poller", plan_.pollers ? service_warps_ : 0,
                [this](std::size_t i) { poller_main(static_cast<std::uint32_t>(i)); });
}

platform::WarpPlacement Microbenchmark::place(std::uint32_t w) const {
  // Blocks go to SMs in the block scheduler's order (Gpu::block_sm); within
  // an SM, warps spread over the warp schedulers in order (blocks that share
  // an SM continue the numbering).
  const std::uint32_t sms = gpu_.sms();
  const std::uint32_t block = w / warps_per_block_;
  const std::uint32_t in_sm = (block / sms) * warps_per_block_ + w % warps_per_block_;
  return {gpu_.block_sm(block), in_sm % gpu_.schedulers_per_sm()};
}

void Microbenchmark::plan_warps() {
  const ParamValues& s = config_.scenario.params;
  plan_ = strategy_plan(config_);
  ssd_count_ = static_cast<std::uint32_t>(s.string_list("ssds").size());
  queues_per_ssd_ = static_cast<std::uint32_t>(s.integer("queues"));
  warps_per_block_ = ceil_div(s.integer("threads_per_block"), algo::kWarpLanes);
  poll_backoff_ = ns_to_ps(s.real("poll_backoff_ns"));
  const std::uint32_t warps = ceil_div(threads_, algo::kWarpLanes);
  const Partitions parts = cid_partitions(
      plan_, warps, warps_per_block_, [this](std::uint32_t block) { return gpu_.block_sm(block); },
      queues_per_ssd_, ssd_count_);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t first = w * algo::kWarpLanes;
    warps_.push_back({first, std::min<std::uint32_t>(algo::kWarpLanes, threads_ - first), place(w),
                      parts.index[w]});
  }
  algo::WarpContext& c = base_context_;
  c.strategy = plan_.strategy;
  c.cq_doorbell_batch = static_cast<std::uint32_t>(s.integer("cq_doorbell_batch"));
  c.max_batch = static_cast<std::uint32_t>(std::min<std::int64_t>(32, s.integer("batch_size")));
  c.cid_local_bits = local_cid_bits(iodepth_);
  c.iodepth = iodepth_;
  const std::uint32_t entries = static_cast<std::uint32_t>(s.integer("queue_entries"));
  cid_space_ = cid_space_of(plan_.strategy, s.integer("cid_space"), entries, parts.users, iodepth_);

  // Service warps and the words that tell them the compute warps are done.
  service_warps_ = plan_.agents    ? static_cast<std::uint32_t>(s.integer("agent_warps"))
                   : plan_.pollers ? static_cast<std::uint32_t>(s.integer("poller_warps"))
                                   : 0;
  const std::uint64_t words = gpu_.allocate(256, 128);
  finished_word_ = words;
  shutdown_word_ = words + 128;
  const std::uint32_t all_queues = queues_per_ssd_ * ssd_count_;
  queue_map_ = queue_map_of(plan_, queues_per_ssd_, ssd_count_, service_warps_);
  service_.lay_out(plan_.pollers, plan_.agents, service_warps_, all_queues, queue_map_,
                   static_cast<std::uint32_t>(s.integer("agent_ring_entries")), gpu_);
  if (plan_.agents) {
    replies_ = gpu_.allocate(std::uint64_t{threads_} * iodepth_ * 8, 128);
  }
}

void Microbenchmark::prepare_queues() {
  const std::uint32_t entries =
      static_cast<std::uint32_t>(config_.scenario.params.integer("queue_entries"));
  observer_ =
      std::make_unique<platform::CqArrivalObserver>(machine_.memory(), deadlines_.sink(recorder_));
  for (algo::QueuePair& q : queues_) {
    q.entries = entries;
    algo::place_queue_state(
        q, cid_space_, plan_.agents,
        [&](std::uint64_t bytes, std::uint64_t align) { return gpu_.allocate(bytes, align); });
    observer_->observe(q);
  }
  base_context_.queues = queues_.data();
  base_context_.queue_count = static_cast<std::uint32_t>(queues_.size());
}

std::uint32_t Microbenchmark::map_queue(std::uint32_t w, std::uint32_t thread, std::uint64_t io_seq,
                                        std::uint64_t block) const {
  const algo::QueueUser user{w, warps_[w].placement.sm, thread, io_seq};
  return algo::map_queue(queue_map_, user,
                         plan_.ssd_mapping == algo::SsdMapping::Stripe
                             ? algo::stripe_ssd(queue_map_, block)
                             : algo::kAnySsd);
}

void Microbenchmark::warp_finished(platform::SimWarp& p) {
  if (service_warps_ == 0) return;
  if (p.atomic_add_u32(finished_word_, 1u) + 1u == warps_.size()) p.store_u32(shutdown_word_, 1u);
}

void Microbenchmark::warp_main(std::size_t index) {
  const auto w = static_cast<std::uint32_t>(index);
  const WarpPlan& plan = warps_[w];
  const ParamValues& s = config_.scenario.params;
  const std::string& rw = s.string("rw");
  const bool random = rw == "randread" || rw == "randwrite";
  const bool write = rw == "randwrite" || rw == "write";
  const bool sequential_streams = s.string("distribution") == "sequential" || !random;
  const bool stripe = plan_.ssd_mapping == algo::SsdMapping::Stripe;
  const auto ssd_ids = s.string_list("ssds");
  // Blocks of bs bytes each SSD offers over the span; with striping, block b
  // of the striped space is block b / ssds of SSD b % ssds.
  std::vector<std::uint64_t> lbas_per_io(ssd_count_);
  std::uint64_t striped_slots = ~std::uint64_t{0};
  for (std::uint32_t k = 0; k < ssd_count_; ++k) {
    lbas_per_io[k] = bytes_per_io_ / machine_.ssd(ssd_ids[k]).lba_bytes();
    striped_slots =
        std::min(striped_slots, std::max<std::uint64_t>(1, queue_span_lbas_[k] / lbas_per_io[k]));
  }
  striped_slots *= ssd_count_;
  // Each warp draws its addresses from its own generator, so results do not
  // depend on the order in which warps run.
  std::mt19937_64 rng(config_.seed * 0x9E3779B97F4A7C15ull + w);

  algo::Lanes<std::uint64_t> remaining{};
  algo::Lanes<std::uint64_t> issued{};
  algo::Lanes<std::uint64_t> next_block{};
  for (std::uint32_t lane = 0; lane < plan.lanes; ++lane) {
    const std::uint64_t thread = plan.first_thread + lane;
    remaining[lane] = time_based_
                          ? ~std::uint64_t{0}
                          : total_ios_ / threads_ + (thread < total_ios_ % threads_ ? 1 : 0);
    next_block[lane] = thread;  // spaced out below, once the span is known
  }
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, plan.placement, poll_backoff_);
  algo::WarpContext context = base_context_;
  context.cid_partition = plan.cid_partition;
  std::vector<algo::Lanes<algo::Pending>> rounds(iodepth_, algo::Lanes<algo::Pending>{});
  context.rounds = rounds.data();
  context.round_count = iodepth_;
  std::vector<algo::LaneMask> masks(iodepth_, 0);
  algo::Lanes<std::uint16_t> status{};
  std::vector<algo::Lanes<std::uint64_t>> replies(plan_.agents ? iodepth_ : 0);
  for (std::uint32_t d = 0; d < replies.size(); ++d) {
    for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
      replies[d][lane] = replies_ + ((std::uint64_t{plan.first_thread} + lane) * iodepth_ + d) * 8;
    }
  }
  for (;;) {
    // fio's runtime: past the deadline a thread issues nothing more; what it
    // has in flight completes.
    if (deadline_ != 0 && p.clock() >= deadline_) remaining.fill(0);
    std::uint32_t used = 0;
    for (std::uint32_t d = 0; d < iodepth_; ++d) {
      algo::LaneMask mask = 0;
      algo::Lanes<algo::IoRequest> request{};
      for (std::uint32_t lane = 0; lane < plan.lanes; ++lane) {
        if (remaining[lane] == 0) continue;
        --remaining[lane];
        ++issued_;
        mask |= algo::LaneMask{1} << lane;
        const std::uint32_t thread = plan.first_thread + lane;
        algo::IoRequest& r = request[lane];
        std::uint64_t block = 0;
        std::uint32_t ssd = 0;
        auto choose = [&](std::uint64_t slots) {
          if (!sequential_streams)
            return std::uniform_int_distribution<std::uint64_t>(0, slots - 1)(rng);
          // Sequential streams start evenly spaced over the span.
          const std::uint64_t b =
              (next_block[lane] * std::max<std::uint64_t>(1, slots / threads_) + issued[lane]) %
              slots;
          return b;
        };
        if (stripe) {
          block = choose(striped_slots);
          r.queue = map_queue(w, thread, issued[lane], block);
          ssd = static_cast<std::uint32_t>(block % ssd_count_);
          r.slba = block / ssd_count_ * lbas_per_io[ssd];
        } else {
          r.queue = map_queue(w, thread, issued[lane], 0);
          ssd = r.queue % ssd_count_;
          block = choose(std::max<std::uint64_t>(1, queue_span_lbas_[r.queue] / lbas_per_io[ssd]));
          r.slba = block * lbas_per_io[ssd];
        }
        ++issued[lane];
        r.opcode = write ? nvme::NvmOpcode::Write : nvme::NvmOpcode::Read;
        r.nlb_zero_based = static_cast<std::uint16_t>(lbas_per_io[ssd] - 1);
        r.bytes = static_cast<std::uint32_t>(bytes_per_io_);
        r.pool_index = d;
        r.buffer = buffers_ + (std::uint64_t{thread} * iodepth_ + d) * buffer_stride_;
      }
      if (mask == 0) break;
      masks[d] = mask;
      ++used;
      if (plan_.agents) {
        algo::agent_post(p, service_.rings(), service_.agent_of_queue(), mask, request, replies[d]);
      } else {
        rounds[d].fill(algo::Pending{});
        algo::submit(p, context, mask, request, rounds[d]);
      }
    }
    if (used == 0) break;
    for (std::uint32_t d = 0; d < used; ++d) {
      if (plan_.agents) {
        algo::agent_wait(p, masks[d], replies[d], status);
      } else {
        algo::wait(p, context, rounds[d], masks[d]);
        algo::visit_lanes(masks[d], [&](int lane) { status[lane] = rounds[d][lane].status; });
      }
      algo::visit_lanes(masks[d], [&](int lane) {
        if (status[lane] != 0) ++errors_;
        if (aborted_by_timeout(status[lane])) ++timeouts_;
        if (aborted_by_reset(status[lane])) ++reset_aborted_;
      });
    }
    for (std::uint32_t d = 0; d < used; ++d) rounds[d].fill(algo::Pending{});
  }
  warp_finished(p);
}

void Microbenchmark::agent_main(std::uint32_t a) {
  const ParamValues& s = config_.scenario.params;
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + a),
                      poll_backoff_);
  algo::AgentContext context = service_.agent_context(a, base_context_, s, shutdown_word_);
  algo::agent_loop(p, context);
}

void Microbenchmark::poller_main(std::uint32_t i) {
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + i),
                      poll_backoff_);
  const std::vector<std::uint32_t>& watched = service_.poller_queues(i);
  algo::polling_warp(p, base_context_, watched.data(), static_cast<std::uint32_t>(watched.size()),
                     shutdown_word_);
}

}  // namespace gpunvme
