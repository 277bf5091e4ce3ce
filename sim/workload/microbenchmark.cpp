#include "sim/workload/microbenchmark.h"

#include <random>

#include <fmt/format.h>
#include <systemc>

#include "sim/algo/warp_batch.h"
#include "sim/config/config_error.h"
#include "sim/protocol/nvme_entries.h"

namespace gpunvme {

namespace {
std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

// Warp coroutine stacks: the algorithms keep a few lane arrays on the stack;
// sanitizers need much more room for their redzones.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kWarpStackBytes = 512 * 1024;
#else
constexpr int kWarpStackBytes = 64 * 1024;
#endif
}  // namespace

void check_microbenchmark(const RunConfig& config) {
  const ParamValues& s = config.scenario.params;
  const std::string& file = config.scenario.file;
  const auto ssds = s.string_list("ssds");
  for (std::size_t k = 0; k < ssds.size(); ++k) {
    const NodeConfig& ssd = *config.topology.node(ssds[k]);
    const auto queues = s.integer("queues");
    const auto granted = ssd.params.integer("max_io_queues");
    if (queues > granted) {
      throw ConfigError(file, "$.queues", std::to_string(queues),
                        fmt::format("{} grants at most {} I/O queues (max_io_queues)", ssd.id,
                                    granted));
    }
    const auto entries = s.integer("queue_entries");
    const auto mqes = ssd.params.integer("mqes");
    if (entries > mqes) {
      throw ConfigError(file, "$.queue_entries", std::to_string(entries),
                        fmt::format("{} accepts queues of at most {} entries (mqes)", ssd.id, mqes));
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
}

Microbenchmark::Microbenchmark(const sc_core::sc_module_name& name, const RunConfig& config,
                               Machine& machine)
    : Component(name, config.scenario.params),
      config_(config),
      machine_(machine),
      gpu_(machine.gpu(config.scenario.params.string("gpu"))) {
  const ParamValues& s = config.scenario.params;
  total_ios_ = static_cast<std::uint64_t>(s.integer("ios"));
  bytes_per_io_ = static_cast<std::uint64_t>(s.integer("bs"));
  iodepth_ = static_cast<std::uint32_t>(s.integer("iodepth"));
  threads_ = static_cast<std::uint32_t>(s.integer("threads"));
  const auto entries = static_cast<std::uint32_t>(s.integer("queue_entries"));
  const auto per_ssd = static_cast<std::uint32_t>(s.integer("queues"));
  const auto ssd_ids = s.string_list("ssds");

  // Queues in GPU memory, as BaM places them; queue i of SSD k is at
  // position i * nssd + k so that consecutive warps alternate SSDs.
  queues_.resize(per_ssd * ssd_ids.size());
  queue_span_lbas_.resize(queues_.size());
  for (std::size_t k = 0; k < ssd_ids.size(); ++k) {
    nvme::Controller& ssd = machine.ssd(ssd_ids[k]);
    const double span_gib = s.real("span_gib");
    const std::uint64_t span_lbas =
        span_gib > 0 ? std::min<std::uint64_t>(
                           ssd.capacity_lbas(),
                           static_cast<std::uint64_t>(span_gib * (1ull << 30)) / ssd.lba_bytes())
                     : ssd.capacity_lbas();
    for (std::uint32_t i = 0; i < per_ssd; ++i) {
      algo::QueuePair q;
      q.trace_id = static_cast<std::uint32_t>(i * ssd_ids.size() + k);
      q.qid = static_cast<std::uint16_t>(i + 1);
      q.entries = entries;
      q.sq_base = gpu_.allocate(std::uint64_t{entries} * nvme::kSqEntrySize, 4096);
      q.cq_base = gpu_.allocate(std::uint64_t{entries} * nvme::kCqEntrySize, 4096);
      const std::uint64_t counters = gpu_.allocate(algo::QueuePair::counter_bytes(), 128);
      q.ticket = counters;
      q.turn = counters + 4;
      q.credits = counters + 8;
      q.cq_head = counters + 12;
      q.cq_lock = counters + 16;
      q.done = gpu_.allocate(std::uint64_t{entries} * 4, 128);
      if (bytes_per_io_ > 2 * 4096) q.prp_lists = gpu_.allocate(std::uint64_t{entries} * 4096, 4096);
      q.sq_doorbell = ssd.doorbell_address(true, q.qid);
      q.cq_doorbell = ssd.doorbell_address(false, q.qid);
      ssd.create_io_queue_pair(q.qid, q.sq_base, q.cq_base, entries);
      queues_[q.trace_id] = q;
      queue_span_lbas_[q.trace_id] = span_lbas;
    }
  }

  buffer_stride_ = round_up(bytes_per_io_, 4096);
  buffers_ = gpu_.allocate(std::uint64_t{threads_} * iodepth_ * buffer_stride_, 4096);

  const std::uint32_t warps = (threads_ + algo::kWarpLanes - 1) / algo::kWarpLanes;
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t first = w * algo::kWarpLanes;
    warps_.push_back({w % queues_.size(), first,
                      std::min<std::uint32_t>(algo::kWarpLanes, threads_ - first)});
  }
  sc_core::sc_spawn_options options;
  options.set_stack_size(kWarpStackBytes);
  for (std::size_t w = 0; w < warps_.size(); ++w) {
    sc_core::sc_spawn([this, w] { warp_main(w); }, fmt::format("warp{}", w).c_str(), &options);
  }
}

void Microbenchmark::warp_main(std::size_t w) {
  const WarpPlan& plan = warps_[w];
  const algo::QueuePair& q = queues_[plan.queue];
  const ParamValues& s = config_.scenario.params;
  const std::string& rw = s.string("rw");
  const bool random = rw == "randread" || rw == "randwrite";
  const bool write = rw == "randwrite" || rw == "write";
  const bool sequential_streams = s.string("distribution") == "sequential" || !random;
  nvme::Controller& ssd = machine_.ssd(s.string_list("ssds")[plan.queue % s.string_list("ssds").size()]);
  const std::uint64_t lbas_per_io = bytes_per_io_ / ssd.lba_bytes();
  const std::uint64_t slots = std::max<std::uint64_t>(1, queue_span_lbas_[plan.queue] / lbas_per_io);
  // Each warp draws its addresses from its own generator, so results do not
  // depend on the order in which warps run.
  std::mt19937_64 rng(config_.seed * 0x9E3779B97F4A7C15ull + w);
  std::uniform_int_distribution<std::uint64_t> pick(0, slots - 1);

  algo::Lanes<std::uint64_t> remaining{};
  algo::Lanes<std::uint64_t> next_block{};
  for (std::uint32_t lane = 0; lane < plan.lanes; ++lane) {
    const std::uint64_t thread = plan.first_thread + lane;
    remaining[lane] = total_ios_ / threads_ + (thread < total_ios_ % threads_ ? 1 : 0);
    // Sequential streams start evenly spaced over the span.
    next_block[lane] = thread * (slots / std::max<std::uint32_t>(1, threads_)) % slots;
  }
  platform::SimWarp p(gpu_, machine_.fabric(), machine_.memory(), recorder_, counters_);
  std::vector<algo::Batch> batches(iodepth_);
  algo::Lanes<std::uint16_t> status{};
  for (;;) {
    std::uint32_t rounds = 0;
    for (std::uint32_t d = 0; d < iodepth_; ++d) {
      algo::LaneMask mask = 0;
      algo::Lanes<algo::IoRequest> request{};
      for (std::uint32_t lane = 0; lane < plan.lanes; ++lane) {
        if (remaining[lane] == 0) continue;
        --remaining[lane];
        mask |= algo::LaneMask{1} << lane;
        std::uint64_t block;
        if (sequential_streams) {
          block = next_block[lane];
          next_block[lane] = (next_block[lane] + 1) % slots;
        } else {
          block = pick(rng);
        }
        algo::IoRequest& r = request[lane];
        r.opcode = write ? nvme::NvmOpcode::Write : nvme::NvmOpcode::Read;
        r.slba = block * lbas_per_io;
        r.nlb_zero_based = static_cast<std::uint16_t>(lbas_per_io - 1);
        r.bytes = static_cast<std::uint32_t>(bytes_per_io_);
        r.buffer = buffers_ + ((std::uint64_t{plan.first_thread} + lane) * iodepth_ + d) *
                                  buffer_stride_;
      }
      if (mask == 0) break;
      batches[rounds++] = algo::warp_batch_submit(p, q, mask, request);
    }
    if (rounds == 0) return;
    for (std::uint32_t d = 0; d < rounds; ++d) {
      algo::warp_batch_wait(p, q, batches[d], status);
      algo::for_each_lane(batches[d].mask, [&](int lane) {
        if (status[lane] != 0) ++errors_;
      });
    }
  }
}

}  // namespace gpunvme
