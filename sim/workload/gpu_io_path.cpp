#include "sim/workload/gpu_io_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <systemc>

#include "sim/algo/completion.h"
#include "sim/algo/mapping.h"
#include "sim/algo/queue_state.h"
#include "sim/algo/strategy.h"
#include "sim/kernel/threads.h"
#include "sim/protocol/nvme_commands.h"
#include "sim/protocol/nvme_entries.h"

namespace gpunvme {

namespace {
std::uint32_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::uint32_t>((a + b - 1) / b);
}

using algo::local_cid_bits;
}  // namespace

GpuIoPath::GpuIoPath(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine,
                     std::uint64_t max_io_bytes)
    : Component(name, ParamValues{}),
      config_(config),
      machine_(machine),
      gpu_(machine.gpu(config.scenario.params.string("gpu"))),
      max_io_bytes_(max_io_bytes) {
  const ParamValues& s = config.scenario.params;
  plan_ = strategy_plan(config);
  ssd_ids_ = s.string_list("ssds");
  ssd_count_ = static_cast<std::uint32_t>(ssd_ids_.size());
  queues_per_ssd_ = static_cast<std::uint32_t>(s.integer("queues"));
  entries_ = static_cast<std::uint32_t>(s.integer("queue_entries"));
  threads_ = static_cast<std::uint32_t>(s.integer("threads"));
  iodepth_ = static_cast<std::uint32_t>(s.integer("iodepth"));
  warps_per_block_ = ceil_div(s.integer("threads_per_block"), algo::kWarpLanes);
  poll_backoff_ = ns_to_ps(s.real("poll_backoff_ns"));
  std::vector<nvme::Controller*> ssds;
  for (const std::string& id : ssd_ids_) ssds.push_back(&machine.ssd(id));
  deadlines_.arm(*this, ssds, [this](std::uint32_t ssd, std::uint16_t qid, std::uint16_t cid) {
    drivers_[ssd]->admin(nvme::make_abort(0, qid, cid), [](const nvme::CompletionEntry&) {});
  });
}

GpuIoPath::~GpuIoPath() = default;

std::pair<std::string, std::uint32_t> GpuIoPath::queue_name(std::uint32_t trace_id) const {
  return {ssd_ids_[trace_id % ssd_count_], trace_id / ssd_count_ + 1};
}

void GpuIoPath::start(std::function<void()> ready) {
  ready_ = std::move(ready);
  plan_warps();
  create_queues();
  prepare_queues();
}

void GpuIoPath::create_queues() {
  // Queue i of SSD k sits at i * ssds + k, as in the microbenchmark.
  queues_.resize(std::size_t{queues_per_ssd_} * ssd_count_);
  for (std::uint32_t k = 0; k < ssd_count_; ++k) {
    nvme::Controller& ssd = machine_.ssd(ssd_ids_[k]);
    std::vector<host::IoQueueSpec> specs;
    for (std::uint32_t i = 0; i < queues_per_ssd_; ++i) {
      algo::QueuePair q;
      q.trace_id = i * ssd_count_ + k;
      q.qid = static_cast<std::uint16_t>(i + 1);
      q.entries = entries_;
      q.sq_base = gpu_.allocate(std::uint64_t{entries_} * nvme::kSqEntrySize, 4096);
      q.cq_base = gpu_.allocate(std::uint64_t{entries_} * nvme::kCqEntrySize, 4096);
      if (max_io_bytes_ > 2 * 4096) {
        q.prp_lists = gpu_.allocate(std::uint64_t{entries_} * 4096, 4096);
      }
      q.sq_doorbell = ssd.doorbell_address(true, q.qid);
      q.cq_doorbell = ssd.doorbell_address(false, q.qid);
      host::IoQueueSpec spec;
      spec.qid = q.qid;
      spec.entries = entries_;
      spec.placement = host::QueuePlacement::gpu;
      spec.sq_base = q.sq_base;
      spec.cq_base = q.cq_base;
      specs.push_back(spec);
      queues_[q.trace_id] = q;
    }
    const HostSide side = nearest_host_side(machine_, machine_.node_index(ssd_ids_[k]));
    const std::size_t cpu = side.cpu == HostSide::npos ? gpu_.node() : side.cpu;
    const std::size_t memory =
        side.memory == HostSide::npos ? host::NvmeDriver::kNoHostMemory : side.memory;
    drivers_.push_back(std::make_unique<host::NvmeDriver>(
        fmt::format("{}_driver", ssd_ids_[k]).c_str(), ssd, machine_.fabric(), machine_.memory(),
        cpu, memory, &gpu_));
    host::NvmeDriver& driver = *drivers_.back();
    host::BringUpOptions bring_up;
    bring_up.io_queues = static_cast<std::uint16_t>(queues_per_ssd_);
    driver.bring_up(bring_up, nullptr);
    driver.create_io_queues(
        std::move(specs), [this, controller = &ssd](std::vector<host::IoQueue> created) {
          for (const host::IoQueue& q : created) {
            if (q.status != nvme::Status::Success) {
              throw std::runtime_error(fmt::format("{}: Create I/O queue {} failed: {}",
                                                   controller->id(), q.qid,
                                                   nvme::status_name(q.status)));
            }
          }
          if (++drivers_ready_ == drivers_.size()) {
            spawn_warps();
            if (ready_) ready_();
          }
        });
  }
}

platform::WarpPlacement GpuIoPath::place(std::uint32_t w) const {
  const std::uint32_t sms = gpu_.sms();
  const std::uint32_t block = w / warps_per_block_;
  const std::uint32_t in_sm = (block / sms) * warps_per_block_ + w % warps_per_block_;
  return {gpu_.block_sm(block), in_sm % gpu_.schedulers_per_sm()};
}

void GpuIoPath::plan_warps() {
  const ParamValues& s = config_.scenario.params;
  const std::uint32_t warps = ceil_div(threads_, algo::kWarpLanes);
  service_warps_ = plan_.agents    ? static_cast<std::uint32_t>(s.integer("agent_warps"))
                   : plan_.pollers ? static_cast<std::uint32_t>(s.integer("poller_warps"))
                                   : 0;
  // The block layer names the SSD of every I/O, as striping does: the
  // mapping picks only the queue on it (home queues are per-SSD indices).
  queue_map_.mapping = plan_.strategy.mapping;
  queue_map_.ssd_mapping = algo::SsdMapping::Stripe;
  queue_map_.exclusive = plan_.strategy.submission == algo::Submission::Exclusive;
  queue_map_.agents = plan_.agents ? service_warps_ : 0;
  queue_map_.queues_per_ssd = queues_per_ssd_;
  queue_map_.ssds = ssd_count_;
  // CID partitions: each warp's index among the warps sharing its home queue.
  std::vector<std::uint32_t> seen(queues_per_ssd_, 0);
  std::uint32_t users = 1;
  std::vector<std::uint32_t> partition(warps);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t sm = (w / warps_per_block_) % gpu_.sms();
    const std::uint32_t home = algo::home_queue(queue_map_, w, sm);
    partition[w] = home == ~0u ? w : seen[home]++;
    users = std::max(users, partition[w] + 1);
  }
  const std::uint64_t mailboxes = gpu_.allocate(std::uint64_t{warps} * 128, 128);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t first = w * algo::kWarpLanes;
    warps_.push_back({first, std::min<std::uint32_t>(algo::kWarpLanes, threads_ - first), place(w),
                      partition[w], mailboxes + std::uint64_t{w} * 128});
  }
  algo::WarpContext& c = base_context_;
  c.strategy = plan_.strategy;
  c.cq_doorbell_batch = static_cast<std::uint32_t>(s.integer("cq_doorbell_batch"));
  c.max_batch = static_cast<std::uint32_t>(std::min<std::int64_t>(32, s.integer("batch_size")));
  c.cid_local_bits = local_cid_bits(iodepth_);
  c.iodepth = iodepth_;
  cid_space_ =
      algo::cid_space_for(plan_.strategy.cid, s.integer("cid_space"), entries_, users, iodepth_);
  shutdown_word_ = gpu_.allocate(128, 128);
  const std::uint32_t all_queues = queues_per_ssd_ * ssd_count_;
  service_.lay_out(plan_.pollers, plan_.agents, service_warps_, all_queues, queue_map_,
                   static_cast<std::uint32_t>(s.integer("agent_ring_entries")), gpu_);
  if (plan_.agents) {
    replies_ = gpu_.allocate(std::uint64_t{warps} * algo::kWarpLanes * iodepth_ * 8, 128);
  }
}

void GpuIoPath::prepare_queues() {
  observer_ =
      std::make_unique<platform::CqArrivalObserver>(machine_.memory(), deadlines_.sink(recorder_));
  for (algo::QueuePair& q : queues_) {
    algo::place_queue_state(
        q, cid_space_, plan_.agents,
        [&](std::uint64_t bytes, std::uint64_t align) { return gpu_.allocate(bytes, align); });
    observer_->observe(q);
  }
  base_context_.queues = queues_.data();
  base_context_.queue_count = static_cast<std::uint32_t>(queues_.size());
}

void GpuIoPath::spawn_warps() {
  live_warps_ = static_cast<std::uint32_t>(warps_.size());
  spawn_threads(id() + "_warp", warps_.size(),
                [this](std::size_t w) { warp_main(static_cast<std::uint32_t>(w)); });
  spawn_threads(id() + "_agent", plan_.agents ? service_warps_ : 0,
                [this](std::size_t a) { agent_main(static_cast<std::uint32_t>(a)); });
  spawn_threads(id() + "_poller", plan_.pollers ? service_warps_ : 0,
                [this](std::size_t i) { poller_main(static_cast<std::uint32_t>(i)); });
}

std::uint32_t GpuIoPath::map_queue(std::uint32_t w, std::uint32_t thread, std::uint64_t seq,
                                   std::uint32_t ssd) const {
  return algo::map_queue(queue_map_, {w, warps_[w].placement.sm, thread, seq}, ssd);
}

void GpuIoPath::submit(const BlockIo& io, IoDone done) {
  if (closed_) throw std::logic_error(id() + ": submit after close");
  ++submitted_;
  pending_.push_back({io, std::move(done)});
  wake_one();
}

void GpuIoPath::wake_one() {
  if (idle_.empty()) return;
  const std::uint32_t w = idle_.back();
  idle_.pop_back();
  MemorySpace& memory = machine_.memory();
  memory.store<std::uint32_t>(warps_[w].mailbox,
                              memory.load<std::uint32_t>(warps_[w].mailbox) + 1u);
}

void GpuIoPath::close() {
  closed_ = true;
  while (!idle_.empty()) wake_one();
}

void GpuIoPath::warp_main(std::uint32_t w) {
  const WarpPlan& plan = warps_[w];
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, plan.placement, poll_backoff_);
  algo::WarpContext context = base_context_;
  context.cid_partition = plan.cid_partition;
  std::vector<algo::Lanes<algo::Pending>> rounds(iodepth_, algo::Lanes<algo::Pending>{});
  context.rounds = rounds.data();
  context.round_count = iodepth_;
  std::vector<algo::LaneMask> masks(iodepth_, 0);
  std::vector<std::vector<Pending>> taken(iodepth_);
  std::vector<std::vector<std::uint16_t>> statuses(iodepth_);
  algo::Lanes<std::uint16_t> status{};
  std::vector<algo::Lanes<std::uint64_t>> replies(plan_.agents ? iodepth_ : 0);
  for (std::uint32_t d = 0; d < replies.size(); ++d) {
    for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
      replies[d][lane] = replies_ + ((std::uint64_t{plan.first_thread} + lane) * iodepth_ + d) * 8;
    }
  }
  std::uint64_t seq = 0;
  for (;;) {
    if (pending_.empty()) {
      if (closed_) break;
      // Sleep on the mailbox until submit() or close() writes it. Reading
      // the mailbox costs a load, during which a request (or close) may
      // come; the warp is not yet listed as idle, so submit() did not wake
      // it: it must look again before it sleeps, or that request would wait
      // for a wake-up that never comes (with one warp, forever).
      const std::uint32_t seen = p.check([&] { return p.load_u32(plan.mailbox); });
      if (!pending_.empty() || closed_) continue;
      idle_.push_back(w);
      p.wait_until([&] { return p.load_u32(plan.mailbox) != seen; }, plan.mailbox, 4);
      continue;
    }
    std::uint32_t used = 0;
    for (std::uint32_t d = 0; d < iodepth_ && !pending_.empty(); ++d) {
      algo::LaneMask mask = 0;
      algo::Lanes<algo::IoRequest> request{};
      taken[d].clear();
      for (std::uint32_t lane = 0; lane < plan.lanes && !pending_.empty(); ++lane) {
        Pending next = std::move(pending_.front());
        pending_.pop_front();
        const BlockIo& io = next.io;
        const std::uint32_t lba = machine_.ssd(ssd_ids_[io.ssd]).lba_bytes();
        algo::IoRequest& r = request[lane];
        r.queue = map_queue(w, plan.first_thread + lane, seq++, io.ssd);
        r.opcode = io.write ? nvme::NvmOpcode::Write : nvme::NvmOpcode::Read;
        r.slba = io.slba;
        r.nlb_zero_based = static_cast<std::uint16_t>(io.lbas - 1);
        r.bytes = io.lbas * lba;
        r.pool_index = d;
        r.buffer = io.buffer;
        mask |= algo::LaneMask{1} << lane;
        taken[d].push_back(std::move(next));
      }
      masks[d] = mask;
      ++used;
      if (plan_.agents) {
        algo::agent_post(p, service_.rings(), service_.agent_of_queue(), mask, request, replies[d]);
      } else {
        rounds[d].fill(algo::Pending{});
        algo::submit(p, context, mask, request, rounds[d]);
      }
    }
    for (std::uint32_t d = 0; d < used; ++d) {
      if (plan_.agents) {
        algo::agent_wait(p, masks[d], replies[d], status);
      } else {
        algo::wait(p, context, rounds[d], masks[d]);
        algo::visit_lanes(masks[d], [&](int lane) { status[lane] = rounds[d][lane].status; });
      }
      statuses[d].clear();
      for (std::size_t lane = 0; lane < taken[d].size(); ++lane) {
        statuses[d].push_back(status[static_cast<int>(lane)]);
      }
    }
    // Call back once the whole batch is in: the warp's threads go on
    // together.
    for (std::uint32_t d = 0; d < used; ++d) {
      for (std::size_t lane = 0; lane < taken[d].size(); ++lane) {
        Pending& done = taken[d][lane];
        const std::uint16_t st = statuses[d][lane];
        // A failed I/O moved no data the requester can use.
        if (st != 0) {
          ++errors_;
          if (aborted_by_timeout(st)) ++timeouts_;
          if (aborted_by_reset(st)) ++reset_aborted_;
        } else {
          bytes_ += std::uint64_t{done.io.lbas} * machine_.ssd(ssd_ids_[done.io.ssd]).lba_bytes();
        }
        IoDone callback = std::move(done.done);
        if (callback) callback(st);
      }
      taken[d].clear();
    }
    for (std::uint32_t d = 0; d < used; ++d) rounds[d].fill(algo::Pending{});
  }
  if (--live_warps_ == 0 && service_warps_ != 0) {
    machine_.memory().store<std::uint32_t>(shutdown_word_, 1u);
  }
}

void GpuIoPath::agent_main(std::uint32_t a) {
  const ParamValues& s = config_.scenario.params;
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + a),
                      poll_backoff_);
  algo::AgentContext context = service_.agent_context(a, base_context_, s, shutdown_word_);
  algo::agent_loop(p, context);
}

void GpuIoPath::poller_main(std::uint32_t i) {
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), deadlines_.sink(recorder_),
                      counters_, place(static_cast<std::uint32_t>(warps_.size()) + i),
                      poll_backoff_);
  const std::vector<std::uint32_t>& watched = service_.poller_queues(i);
  algo::polling_warp(p, base_context_, watched.data(), static_cast<std::uint32_t>(watched.size()),
                     shutdown_word_);
}

}  // namespace gpunvme
