// Simulated counterparts of the hardware microbenchmarks
// (tests/hardware/gpu_microbench.cu, configs/measurements/gpu-microbench-*.json):
// the same loops run by simulated warps on a GPU of the given profile on a
// Gen5 x16 root complex with host memory, compared with the measured figures.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <systemc>
#include <utility>
#include <vector>

#include "sim/core/algo/io_agents.h"
#include "sim/core/algo/io_common.h"
#include "sim/core/algo/queue_state.h"
#include "sim/core/algo/strategy.h"
#include "sim/frontend/validate/validate.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/simulation.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/run/gpu_bench.h"

namespace gpunvme::validate {
namespace {

double ns(Picoseconds t) { return static_cast<double>(t) / 1000.0; }

// A simulated GPU node of profile `profile` whose parameters named in
// `overrides` take those values instead of the profile's.
nlohmann::json gpu_node(const std::string& profile, const nlohmann::json& overrides) {
  nlohmann::json gpu = {{"profile", profile}};
  for (const auto& [name, value] : overrides.items()) gpu[name] = value;
  return gpu;
}

// Mean time of one iteration of `op`, one warp on SM `sm`.
double per_op(const std::string& profile, std::uint32_t sm, std::uint32_t iterations,
              const std::function<void(platform::SimWarp&, std::uint64_t gpu_word)>& op) {
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint64_t word = bench.gpu().allocate(4096, 128);
  Picoseconds span = 0;
  bench.spawn({sm, 0}, [&](platform::SimWarp& p) {
    const Picoseconds start = p.clock();
    for (std::uint32_t i = 0; i < iterations; ++i) op(p, word);
    span = p.clock() - start;
  });
  bench.run();
  return ns(span) / iterations;
}

// `warps` one-warp blocks, one per SM in turn, `lanes` lanes each, every lane
// a dependent chain of atomicAdd on one word (the hardware's k_contend, same
// address): mean per-op latency and the chip's ops per second.
std::pair<double, double> contend(const std::string& profile, std::uint32_t warps,
                                  std::uint32_t lanes, std::uint32_t iterations) {
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint32_t sms = bench.gpu().sms();
  // The measured run's word is far from its first block's SM: one lane alone
  // takes 248 ns per atomic there, the far mode of the per-SM map (253 ns),
  // not the near one (153 ns). The simulated word is likewise far from the
  // first block's SM.
  gpu::Gpu& g = bench.gpu();
  std::uint64_t word = g.allocate(128, 128);
  while (g.atomic_latency(g.block_sm(0), word) < g.costs().atomic_far) {
    word = g.allocate(128, 128);
  }
  Picoseconds first = ~Picoseconds{0}, last = 0;
  double latency_sum = 0;
  for (std::uint32_t w = 0; w < warps; ++w) {
    bench.spawn({g.block_sm(w), (w / sms) % 4}, [&](platform::SimWarp& p) {
      const Picoseconds start = p.clock();
      for (std::uint32_t i = 0; i < iterations; ++i) {
        p.for_lanes(algo::lanes_below(lanes), [&](int) { p.atomic_add_u32(word, 1); });
      }
      const Picoseconds end = p.clock();
      first = std::min(first, start);
      last = std::max(last, end);
      latency_sum += ns(end - start) / iterations;
    });
  }
  bench.run();
  const double ops = static_cast<double>(warps) * lanes * iterations;
  return {latency_sum / warps, ops / (ns(last - first) * 1e-9)};
}

// The per-SM atomic latency map's two modes (near and far L2 partition):
// means of its 10 ns histogram bins below and above the widest empty gap.
std::optional<std::pair<double, double>> near_far_modes(const nlohmann::json& map) {
  if (!map.contains("histogram_10ns_bins") || !map.at("histogram_10ns_bins").is_object()) {
    return std::nullopt;
  }
  std::vector<std::pair<double, double>> bins;  // (bin centre ns, count)
  for (const auto& [start, count] : map.at("histogram_10ns_bins").items()) {
    bins.emplace_back(std::stod(start) + 5.0, count.get<double>());
  }
  std::sort(bins.begin(), bins.end());
  if (bins.size() < 2) return std::nullopt;
  std::size_t split = 1;
  for (std::size_t i = 1; i < bins.size(); ++i) {
    if (bins[i].first - bins[i - 1].first > bins[split].first - bins[split - 1].first) split = i;
  }
  auto mean = [&](std::size_t from, std::size_t to) {
    double sum = 0, n = 0;
    for (std::size_t i = from; i < to; ++i) {
      sum += bins[i].first * bins[i].second;
      n += bins[i].second;
    }
    return sum / n;
  };
  return std::make_pair(mean(0, split), mean(split, bins.size()));
}

const nlohmann::json* find(const nlohmann::json& doc, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &doc;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return nullptr;
    at = &at->at(k);
  }
  return at;
}

// tests/hardware/lane_loops_and_turns.cu's one-word patterns on simulated
// warps: `warps` one-warp blocks placed as the hardware places them, each
// taking `rounds` turns (warp_ticket_turn) or rounds x 32 lane turns
// (lane_ticket_turns, all_threads' turn loop of submission.h) on one ticket
// word and one turn word, no back-off. ns per turn of all warps together:
// from the last warp's start to the last warp's end, as the hardware
// program measures it.
double one_word_turns(const nlohmann::json& gpu, bool lane_turns, std::uint32_t warps,
                      std::uint32_t rounds) {
  // These loops hold the words' addresses in registers: no descriptor reads.
  nlohmann::json registers = gpu;
  registers["turn_descriptor_ns"] = 0.0;
  GpuBench bench(registers);
  gpu::Gpu& g = bench.gpu();
  const std::uint32_t sms = g.sms();
  // The hardware's Words: the ticket word, the turn word and the doorbell
  // word 128 B apart.
  const std::uint64_t base = g.allocate(512, 128);
  const std::uint64_t ticket_word = base + 128, turn_word = base + 256, doorbell = base + 384;
  Picoseconds first = 0, last = 0;
  for (std::uint32_t w = 0; w < warps; ++w) {
    bench.spawn({g.block_sm(w), (w / sms) % 4}, [&](platform::SimWarp& p) {
      first = std::max(first, p.clock());
      for (std::uint32_t r = 0; r < rounds; ++r) {
        if (!lane_turns) {
          const std::uint32_t t = p.atomic_add_u32(ticket_word, 1u);
          p.wait_until([&] { return p.load_u32(turn_word) == t; }, turn_word, 4);
          p.store_u32(doorbell, t);
          p.fence_system();
          p.store_u32(turn_word, t + 1u);
          continue;
        }
        algo::Lanes<std::uint32_t> ticket;
        p.for_lanes(algo::kAllLanes,
                    [&](int lane) { ticket[lane] = p.atomic_add_u32(ticket_word, 1u); });
        algo::LaneMask waiting = algo::kAllLanes;
        while (waiting != 0) {
          const algo::LaneMask mine =
              p.ballot(waiting, [&](int lane) { return p.load_u32(turn_word) == ticket[lane]; });
          if (mine == 0) {
            // The hardware polls again at once; the simulated warp sleeps
            // until the turn word is written and notices it on its next poll.
            p.wait_until(
                [&] {
                  bool go = false;
                  const std::uint32_t turn = p.load_u32(turn_word);
                  for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
                    go = go || (((waiting >> lane) & 1u) != 0 && ticket[lane] == turn);
                  }
                  return go;
                },
                turn_word, 4);
            continue;
          }
          p.turn_pass();
          const std::uint32_t t = ticket[algo::first_lane(p, mine)];
          p.store_u32(doorbell, t);
          p.fence_system();
          p.store_u32(turn_word, t + 1u);
          waiting &= ~mine;
        }
      }
      last = std::max(last, p.clock());
    });
  }
  bench.run();
  const double turns = static_cast<double>(warps) * rounds * (lane_turns ? algo::kWarpLanes : 1);
  return ns(last - first) / turns;
}

// tests/hardware/lane_loops_and_turns.cu's queue_turns patterns on simulated
// warps: `warps` warps in blocks of 8 (256 threads, as gpunvme-hw places
// compute warps; two warps a scheduler), each block one queue of its own
// (ticket, turn and doorbell words and a 256-entry SQ in GPU memory), every
// warp `rounds` rounds of 32 lane turns. kBare: tickets, then the lane turns
// (lane_ticket_turns' loop); kSqe: each lane's SQE written (write_sqe) and a
// system fence between them; kDescriptor: submission.h's turn code, the
// queue named by a QueuePair (the doorbell a GPU word, as the GPU-resident
// target's: rung through ring_sq as a polled shadow doorbell, a store to GPU
// memory as on the hardware), charged turn_pass_ns + turn_descriptor_ns a
// turn. The register patterns hold their addresses in registers, so they are
// simulated with turn_descriptor_ns 0. ns per turn per queue: per full block,
// its last warp's start to its last warp's end over its turns, the median
// over the full blocks, as the hardware program measures it.
enum class QueueTurns { kBare, kSqe, kDescriptor };

double queue_turns(const nlohmann::json& gpu, QueueTurns pattern, std::uint32_t warps,
                   std::uint32_t rounds) {
  nlohmann::json profile = gpu;
  if (pattern != QueueTurns::kDescriptor) profile["turn_descriptor_ns"] = 0.0;
  GpuBench bench(profile);
  gpu::Gpu& g = bench.gpu();
  constexpr std::uint32_t kBlockWarps = 8, kEntries = 256;
  const std::uint32_t per_block = std::min(kBlockWarps, warps);
  const std::uint32_t blocks = (warps + per_block - 1) / per_block;
  std::vector<algo::QueuePair> queues(blocks);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    algo::QueuePair& q = queues[b];
    const std::uint64_t words = g.allocate(512, 128);
    q.trace_id = b;
    q.sq_base = g.allocate(std::uint64_t{kEntries} * nvme::kSqEntrySize, 4096);
    q.entries = kEntries;
    q.ticket = words;
    q.turn = words + 128;
    // The target's doorbell is a word of GPU memory: a polled shadow
    // doorbell is ring_sq's store to GPU memory.
    q.sq_shadow = words + 256;
    q.shadow_polled = 1;
  }
  std::vector<Picoseconds> last_start(blocks, 0), last_end(blocks, 0);
  for (std::uint32_t w = 0; w < warps; ++w) {
    const std::uint32_t b = w / per_block;
    bench.spawn(
        {g.block_sm(b), (w % per_block) % g.schedulers_per_sm()}, [&, b](platform::SimWarp& p) {
          const algo::QueuePair& q = queues[b];
          last_start[b] = std::max(last_start[b], p.clock());
          algo::IoRequest request;
          request.bytes = 4096;
          request.buffer = 1ull << 40;
          algo::Lanes<algo::Pending> io{};
          for (std::uint32_t r = 0; r < rounds; ++r) {
            algo::Lanes<std::uint32_t> ticket{};
            p.for_lanes(algo::kAllLanes,
                        [&](int lane) { ticket[lane] = p.atomic_add_u32(q.ticket, 1u); });
            if (pattern != QueueTurns::kBare) {
              p.for_lanes(algo::kAllLanes, [&](int lane) {
                request.slba = ticket[lane];
                algo::detail::write_sqe(p, q, ticket[lane] % q.entries, ticket[lane] % 65536u,
                                        request);
              });
              p.fence_system();
            }
            algo::LaneMask waiting = algo::kAllLanes;
            while (waiting != 0) {
              const algo::LaneMask mine =
                  p.ballot(waiting, [&](int lane) { return p.load_u32(q.turn) == ticket[lane]; });
              if (mine == 0) {
                // The hardware polls again at once; the simulated
                // warp sleeps until the turn word is written.
                p.wait_until(
                    [&] {
                      const std::uint32_t turn = p.load_u32(q.turn);
                      bool go = false;
                      for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
                        go = go || (((waiting >> lane) & 1u) != 0 && ticket[lane] == turn);
                      }
                      return go;
                    },
                    q.turn, 4);
                continue;
              }
              p.turn_pass();
              const int lane = algo::first_lane(p, mine);
              const std::uint32_t t = ticket[lane];
              if (pattern == QueueTurns::kDescriptor) {
                algo::detail::record(p, q, t % 65536u, algo::Stage::SqTailSynced);
                algo::detail::ring_sq(p, q, t % q.entries, (t + 1u) % q.entries);
              } else {
                p.store_u32(q.sq_shadow, t);
              }
              p.fence_system();
              p.store_u32(q.turn, t + 1u);
              if (pattern == QueueTurns::kDescriptor) {
                algo::detail::record(p, q, t % 65536u, algo::Stage::DoorbellRung);
                io[lane].state = algo::kOutstanding;
              }
              waiting &= ~mine;
            }
          }
          last_end[b] = std::max(last_end[b], p.clock());
        });
  }
  bench.run();
  std::vector<double> per_queue;
  for (std::uint32_t b = 0; b < blocks; ++b) {
    if ((b + 1) * per_block > warps) continue;  // a partly filled block
    per_queue.push_back(ns(last_end[b] - last_start[b]) /
                        (static_cast<double>(per_block) * rounds * algo::kWarpLanes));
  }
  std::sort(per_queue.begin(), per_queue.end());
  return per_queue[per_queue.size() / 2];
}

// One row of a microbenchmark report: a figure measured and simulated, its
// error and whether it is within the tolerance (no error when nothing was
// measured).
nlohmann::json comparison_row(const std::string& name, const std::string& unit, double measured,
                              double simulated, double tolerance, const std::string& how,
                              const std::string& role) {
  const double err = measured > 0 ? (simulated - measured) / measured : NAN;
  return {{"name", name},
          {"unit", unit},
          {"measured", measured},
          {"simulated", simulated},
          {"error_pct", std::isfinite(err) ? nlohmann::json(100.0 * err) : nlohmann::json(nullptr)},
          {"within_tolerance", std::isfinite(err) && std::fabs(err) <= tolerance},
          {"simulated_as", how},
          {"role", role}};
}

// The rounds a simulated queue-turn run takes: about 1,024 turns per queue
// (the hardware's 8,192 give the same steady rate; fewer keep 528 warps fast).
std::uint32_t queue_turn_rounds(std::uint32_t warps) {
  return std::max(2u, 32u / std::min(8u, warps));
}

// The simulated counterparts of tests/hardware/lane_loops_and_turns.cu
// (schema gpunvme.lane_loops_and_turns/1): the turn patterns at every
// measured warp count with no back-off, and the lane-loop passes against the
// profile's lane_loop_iteration_ns. Also derives turn_pass_ns, the
// calibration of the profile's own-code cost of a lane's turn: the 1-warp
// lane turn measured minus its simulated counterpart with turn_pass_ns 0.
nlohmann::json correlate_lane_loops_and_turns(const nlohmann::json& mb, const std::string& file,
                                              const std::string& profile, double tolerance,
                                              const nlohmann::json& gpu_overrides) {
  const nlohmann::json* medians = find(mb, {"derived", "one_word_ns_per_op_median"});
  if (medians == nullptr || !medians->is_object()) {
    throw ConfigError(file, "$.derived.one_word_ns_per_op_median", "(missing)",
                      "an object of pattern -> {warps: ns per op} (lane_loops_and_turns.cu)");
  }
  const nlohmann::json gpu = gpu_node(profile, gpu_overrides);
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& name, double measured, double simulated, const std::string& how,
                 const std::string& role) {
    rows.push_back(comparison_row(name, "ns", measured, simulated, tolerance, how, role));
  };
  nlohmann::json calibration = nlohmann::json::object();
  const char* const patterns[] = {"warp_ticket_turn", "lane_ticket_turns"};
  for (const char* pattern : patterns) {
    const bool lane_turns = std::string(pattern) == "lane_ticket_turns";
    const std::string key = std::string(pattern) + " backoff 0";
    if (!medians->contains(key) || !medians->at(key).is_object()) continue;
    for (const auto& [warps_text, value] : medians->at(key).items()) {
      if (!value.is_number()) {
        throw ConfigError(file, "$.derived.one_word_ns_per_op_median." + key + "." + warps_text,
                          value.dump(), "a number (ns per turn)");
      }
      const std::uint32_t warps = static_cast<std::uint32_t>(std::stoul(warps_text));
      // The hardware's rounds: about 8 k warp turns or 16 k lane turns a launch.
      const std::uint32_t rounds =
          lane_turns ? std::max(2u, 512u / warps) : std::max(8u, 8192u / warps);
      const double simulated = one_word_turns(gpu, lane_turns, warps, rounds);
      const bool calibrates = lane_turns && warps == 1;
      if (calibrates) {
        nlohmann::json free_turns = gpu;
        free_turns["turn_pass_ns"] = 0.0;
        const double without = one_word_turns(free_turns, true, 1, rounds);
        calibration["turn_pass_ns"] = {
            {"value", value.get<double>() - without},
            {"doc",
             "lane_ticket_turns at 1 warp, no back-off: measured minus the simulated turn with "
             "turn_pass_ns 0 (the turn's ballot, stores and fence alone)"},
            {"measured_ns", value.get<double>()},
            {"simulated_without_ns", without}};
      }
      add(fmt::format("{}_{}w", pattern, warps), value.get<double>(), simulated,
          fmt::format("{} one-warp blocks, {} rounds on one ticket and one turn word, no "
                      "back-off: ns per turn of all warps together",
                      warps, rounds),
          calibrates ? "calibration (turn_pass_ns)" : "prediction");
    }
  }
  // all_threads' lane turns on queues shared by an SM's warps: the
  // descriptor pattern at 1 warp calibrates turn_descriptor_ns (measured
  // minus the simulated turn with it 0); the rest are predictions with it.
  if (const nlohmann::json* queue = find(mb, {"derived", "queue_turns_ns_per_turn_median"})) {
    const std::pair<const char*, QueueTurns> patterns_q[] = {
        {"queue_lane_turns", QueueTurns::kBare},
        {"queue_lane_turns_sqe", QueueTurns::kSqe},
        {"queue_lane_turns_descriptor", QueueTurns::kDescriptor}};
    const std::string calibrating_key = "queue_lane_turns_descriptor backoff 0";
    nlohmann::json calibrated = gpu;
    if (queue->contains(calibrating_key) && queue->at(calibrating_key).contains("1")) {
      const nlohmann::json& value = queue->at(calibrating_key).at("1");
      if (!value.is_number()) {
        throw ConfigError(file,
                          "$.derived.queue_turns_ns_per_turn_median." + calibrating_key + ".1",
                          value.dump(), "a number (ns per turn)");
      }
      nlohmann::json free_turns = gpu;
      free_turns["turn_descriptor_ns"] = 0.0;
      const double without =
          queue_turns(free_turns, QueueTurns::kDescriptor, 1, queue_turn_rounds(1));
      const double derived = value.get<double>() - without;
      if (derived < 0) {
        throw ConfigError(file,
                          "$.derived.queue_turns_ns_per_turn_median." + calibrating_key + ".1",
                          value.dump(),
                          fmt::format("at least the simulated turn without turn_descriptor_ns "
                                      "({:.1f} ns): the cost it calibrates cannot be negative",
                                      without));
      }
      calibration["turn_descriptor_ns"] = {
          {"value", derived},
          {"doc",
           "queue_lane_turns_descriptor at 1 warp, no back-off (submission.h's turn code, its "
           "QueuePair in GPU memory): measured minus the simulated turn with turn_descriptor_ns "
           "0 and the profile's turn_pass_ns"},
          {"measured_ns", value.get<double>()},
          {"simulated_without_ns", without}};
      calibrated["turn_descriptor_ns"] = derived;
    }
    for (const auto& [pattern, kind] : patterns_q) {
      const std::string key = std::string(pattern) + " backoff 0";
      if (!queue->contains(key) || !queue->at(key).is_object()) continue;
      for (const auto& [warps_text, value] : queue->at(key).items()) {
        if (!value.is_number()) {
          throw ConfigError(file,
                            "$.derived.queue_turns_ns_per_turn_median." + key + "." + warps_text,
                            value.dump(), "a number (ns per turn)");
        }
        const auto warps = static_cast<std::uint32_t>(std::stoul(warps_text));
        const bool calibrates = kind == QueueTurns::kDescriptor && warps == 1;
        const double simulated = queue_turns(calibrated, kind, warps, queue_turn_rounds(warps));
        add(fmt::format("{}_{}w", pattern, warps), value.get<double>(), simulated,
            fmt::format("{} warps, {} a queue (one per SM), {} rounds of 32 lane turns, no "
                        "back-off: ns per turn per queue{}",
                        warps, std::min(8u, warps), queue_turn_rounds(warps),
                        kind == QueueTurns::kDescriptor
                            ? " (turn_descriptor_ns as calibrated here)"
                            : " (addresses in registers: turn_descriptor_ns 0)"),
            calibrates ? "calibration (turn_descriptor_ns)" : "prediction");
      }
    }
  }
  if (const nlohmann::json* passes = find(mb, {"derived", "lane_loop_pass_ns"})) {
    GpuBench probe(gpu);
    const double pass = ns(probe.gpu().costs().lane_loop_iteration);
    for (const auto& [name, value] : passes->items()) {
      if (!value.is_number()) continue;
      add(name + "_pass", value.get<double>(), pass,
          "lane_loop_iteration_ns: one pass of every warp-uniform loop over lanes, whatever "
          "its body (an effective figure from strategy op profiles)",
          "comparison");
    }
  }
  return {{"rows", rows}, {"calibration", calibration}};
}

// Queue pair `index` (qid index + 1) of `entries` entries with its SQ, CQ
// and doorbell words in GPU memory: the doorbells are controller-polled
// shadow doorbells, so ring_sq and ring_cq are stores to GPU memory, as the
// hardware programs' doorbell words are.
algo::QueuePair queue_in_gpu_memory(gpu::Gpu& g, std::uint32_t index, std::uint32_t entries) {
  algo::QueuePair q;
  q.trace_id = index;
  q.qid = static_cast<std::uint16_t>(index + 1);
  q.entries = entries;
  q.sq_base = g.allocate(std::uint64_t{entries} * nvme::kSqEntrySize, 4096);
  q.cq_base = g.allocate(std::uint64_t{entries} * nvme::kCqEntrySize, 4096);
  const std::uint64_t doorbells = g.allocate(256, 128);
  q.sq_shadow = doorbells;
  q.cq_shadow = doorbells + 128;
  q.shadow_polled = 1;
  return q;
}

// Warps on a bench that count into counters of their own (the bench's
// spawn pools every warp's), their stage records dropped: a microbenchmark's
// figures are those of one role's warps.
class CountedWarps {
 public:
  explicit CountedWarps(GpuBench& bench) : bench_(bench) {}
  void spawn(platform::WarpPlacement at, platform::WarpCounters& counters,
             std::function<void(platform::SimWarp&)> body) {
    Calendar::current().spawn([this, &counters, at, body = std::move(body)] {
      platform::SimWarp p(bench_.gpu(), bench_.machine().fabric(), bench_.machine().memory(), sink_,
                          counters, at, 0);
      body(p);
    });
  }

 private:
  class NullSink : public platform::StageSink {
   public:
    void stage(std::uint16_t, std::uint32_t, algo::Stage, Picoseconds) override {}
  };
  GpuBench& bench_;
  NullSink sink_;
};

// tests/hardware/shared_queue_reaping.cu's reaping part on simulated warps:
// all_threads' own submit() and wait() (PerCommand, CqScan, Counter CIDs) on
// 8 queue pairs in GPU memory, each shared by `blocks` blocks of
// `block_warps` warps (a block's warps on one SM, every block on an SM of its
// own) and served by a feeder warp on an SM of its own that plays the target
// without data: it takes up to 32 new SQEs (bounded by CQ room), holds them
// for the batch line (fixed + per command), posts their CQEs after a GPU
// fence and waits its gap. An observer warp beside each feeder stamps every
// SQ tail step. The doorbells are words of GPU memory, rung through ring_sq
// and ring_cq as polled shadow doorbells (stores to GPU memory, as the
// hardware program's doorbell words are). Each warp takes `rounds` rounds
// of 32 reads and waits for each round's completions as a CQ-scan waiter,
// as the strategy's warps do.
struct ReapingFigures {
  double ns_per_turn = 0;  // per queue, first to last tail step over the steps; median
  double iops = 0;
  double calls_per_io[platform::kProfiledOps] = {};  // the compute warps' op profile
};

ReapingFigures shared_queue_reaping(const nlohmann::json& gpu, std::uint32_t blocks,
                                    std::uint32_t block_warps, std::uint32_t entries,
                                    std::uint32_t fixed_ns, std::uint32_t per_command_ns,
                                    std::uint32_t gap_ns, std::uint32_t rounds) {
  constexpr std::uint32_t kQueues = 8;
  GpuBench bench(gpu);
  gpu::Gpu& g = bench.gpu();
  const std::uint32_t warps_per_queue = blocks * block_warps;
  const std::uint32_t warps = kQueues * warps_per_queue;
  const std::uint32_t cid_space = algo::cid_space_for(
      algo::named_strategy(algo::NamedStrategy::AllThreads).cid, 0, entries, warps_per_queue, 1);
  std::vector<algo::QueuePair> table(kQueues);
  auto allocate = [&](std::uint64_t bytes, std::uint64_t align) {
    return g.allocate(bytes, align);
  };
  for (std::uint32_t i = 0; i < kQueues; ++i) {
    algo::QueuePair& q = table[i];
    q = queue_in_gpu_memory(g, i, entries);
    algo::place_queue_state(q, cid_space, false, allocate);
  }
  const std::uint64_t stop = g.allocate(128, 128);
  const std::uint64_t buffers = g.allocate(std::uint64_t{warps} * 32u * 512u, 4096);

  platform::WarpCounters compute_counters, other_counters;
  CountedWarps warps_of(bench);

  // The feeders' kernel is launched first: its 8 blocks take the first SMs.
  std::vector<std::vector<Picoseconds>> steps(kQueues);
  for (std::uint32_t qi = 0; qi < kQueues; ++qi) {
    const algo::QueuePair& q = table[qi];
    const std::uint32_t sm = g.block_sm(qi);
    warps_of.spawn({sm, 0}, other_counters, [&, qi](platform::SimWarp& p) {
      const algo::QueuePair& mine = table[qi];
      std::uint32_t sq_head = 0, cq_tail = 0;  // monotonic counts
      auto ready = [&](std::uint32_t& count) {
        const std::uint32_t tail = p.load_u32(mine.sq_shadow);
        const std::uint32_t head = p.load_u32(mine.cq_shadow);
        const std::uint32_t waiting = (tail + entries - sq_head % entries) % entries;
        const std::uint32_t room = entries - 1u - (cq_tail % entries + entries - head) % entries;
        count = std::min({waiting, room, 32u});
        return count;
      };
      for (;;) {
        std::uint32_t count = 0;
        p.wait_until([&] { return ready(count) != 0 || p.load_u32(stop) != 0; }, mine.sq_shadow, 4,
                     mine.cq_shadow, 4, stop, 4);
        if (ready(count) == 0) return;  // stopped
        p.fence_gpu();
        algo::Lanes<std::uint16_t> cid{};
        p.for_lanes(algo::lanes_below(count), [&](int lane) {
          const auto e = p.load<nvme::SubmissionEntry>(
              mine.sq_base + std::uint64_t{(sq_head + static_cast<std::uint32_t>(lane)) % entries} *
                                 nvme::kSqEntrySize);
          cid[lane] = e.cid();
        });
        p.nanosleep(fixed_ns + per_command_ns * count);
        sq_head += count;
        p.for_lanes(algo::lanes_below(count), [&](int lane) {
          const std::uint32_t position = cq_tail + static_cast<std::uint32_t>(lane);
          nvme::CompletionEntry c{};
          c.sqhd = static_cast<std::uint16_t>(sq_head % entries);
          c.sqid = mine.qid;
          c.cid = cid[lane];
          c.status_field =
              static_cast<std::uint16_t>(algo::detail::expected_phase(position, entries));
          p.store_bytes(mine.cq_base + std::uint64_t{position % entries} * nvme::kCqEntrySize, &c,
                        sizeof c);
        });
        p.fence_gpu();
        cq_tail += count;
        if (gap_ns != 0) p.nanosleep(gap_ns);
      }
    });
    warps_of.spawn({sm, 1}, other_counters, [&, qi](platform::SimWarp& p) {
      const algo::QueuePair& mine = table[qi];
      std::uint32_t last = 0;
      for (;;) {
        p.wait_until([&] { return p.load_u32(mine.sq_shadow) != last || p.load_u32(stop) != 0; },
                     mine.sq_shadow, 4, stop, 4);
        const std::uint32_t v = p.load_u32(mine.sq_shadow);
        if (v == last) return;
        const std::uint32_t n = (v + entries - last) % entries;
        for (std::uint32_t i = 0; i < n; ++i) steps[qi].push_back(p.clock());
        last = v;
      }
    });
    (void)q;
  }
  std::uint32_t finished = 0;
  Picoseconds first = ~Picoseconds{0}, last = 0;
  for (std::uint32_t b = 0; b < kQueues * blocks; ++b) {
    const std::uint32_t sm = g.block_sm(kQueues + b);
    const std::uint32_t queue = b % kQueues;
    for (std::uint32_t k = 0; k < block_warps; ++k) {
      const std::uint32_t w = b * block_warps + k;
      warps_of.spawn(
          {sm, k % g.schedulers_per_sm()}, compute_counters, [&, w, queue](platform::SimWarp& p) {
            algo::WarpContext c;
            c.queues = table.data();
            c.queue_count = kQueues;
            c.strategy = algo::named_strategy(algo::NamedStrategy::AllThreads);
            c.cq_doorbell_batch = 1;
            c.max_batch = 32;
            c.cid_local_bits = algo::local_cid_bits(1);
            c.iodepth = 1;
            algo::Lanes<algo::Pending> round{};
            c.rounds = &round;
            c.round_count = 1;
            first = std::min(first, p.clock());
            for (std::uint32_t r = 0; r < rounds; ++r) {
              algo::Lanes<algo::IoRequest> request{};
              for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
                algo::IoRequest& req = request[lane];
                req.opcode = nvme::NvmOpcode::Read;
                req.slba = (std::uint64_t{w} << 5) | static_cast<std::uint64_t>(lane);
                req.nlb_zero_based = 0;
                req.buffer =
                    buffers + (std::uint64_t{w} * 32u + static_cast<std::uint64_t>(lane)) * 512u;
                req.bytes = 512;
                req.queue = queue;
                req.pool_index = 0;
              }
              round.fill(algo::Pending{});
              algo::submit(p, c, algo::kAllLanes, request, round);
              p.set_cq_scan_waits(true);
              algo::wait(p, c, round, algo::kAllLanes);
              p.set_cq_scan_waits(false);
            }
            last = std::max(last, p.clock());
            if (++finished == warps) p.store_u32(stop, 1);
          });
    }
  }
  bench.run();
  ReapingFigures out;
  std::vector<double> per_queue;
  for (const std::vector<Picoseconds>& s : steps) {
    if (s.size() < 2) continue;
    per_queue.push_back(ns(s.back() - s.front()) / static_cast<double>(s.size() - 1));
  }
  std::sort(per_queue.begin(), per_queue.end());
  if (!per_queue.empty()) out.ns_per_turn = per_queue[per_queue.size() / 2];
  const double ios = static_cast<double>(warps) * rounds * algo::kWarpLanes;
  out.iops = last > first ? ios / (ns(last - first) * 1e-9) : 0;
  for (int k = 0; k < platform::kProfiledOps; ++k) {
    out.calls_per_io[k] = static_cast<double>(compute_counters.op_calls[k]) / ios;
  }
  return out;
}

// The simulated counterparts of tests/hardware/shared_queue_reaping.cu's
// reaping part (schema gpunvme.shared_queue_reaping.runs/1): per measured
// case the ns per turn per queue (a prediction: cross_sm_turn_breaks is
// calibrated from the cases' turn order, not their times) and the calls per
// I/O of the kinds the reaping loops make (peeks, atomics, GPU fences,
// ballots, waits).
nlohmann::json correlate_shared_queue_reaping(const nlohmann::json& mb, const std::string& file,
                                              const std::string& profile, double tolerance,
                                              const nlohmann::json& gpu_overrides) {
  const nlohmann::json* cases = find(mb, {"derived"});
  if (cases == nullptr || !cases->is_object()) {
    throw ConfigError(file, "$.derived", "(missing)",
                      "an object of case -> figures (shared_queue_reaping.cu)");
  }
  const nlohmann::json gpu = gpu_node(profile, gpu_overrides);
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const std::string& name, const std::string& unit, double measured,
                 double simulated, const std::string& how, const std::string& role) {
    rows.push_back(comparison_row(name, unit, measured, simulated, tolerance, how, role));
  };
  for (const auto& [name, c] : cases->items()) {
    const std::string at = "$.derived." + name;
    auto count = [&](const char* key, std::uint32_t lo, std::uint32_t hi) {
      if (!c.contains(key) || !c.at(key).is_number_integer() ||
          c.at(key).get<std::int64_t>() < lo || c.at(key).get<std::int64_t>() > hi) {
        throw ConfigError(file, at + "." + key, c.contains(key) ? c.at(key).dump() : "(missing)",
                          fmt::format("an integer from {} to {}", lo, hi));
      }
      return c.at(key).get<std::uint32_t>();
    };
    const std::uint32_t blocks = count("blocks_per_queue", 1, 32);
    const std::uint32_t warps = count("warps_per_queue", 1, 32);
    const std::uint32_t entries = count("entries", 2, 4096);
    if (warps % blocks != 0) {
      throw ConfigError(file, at + ".warps_per_queue", std::to_string(warps),
                        fmt::format("a multiple of blocks_per_queue ({})", blocks));
    }
    const nlohmann::json* line = find(c, {"batch_line_ns"});
    if (line == nullptr || !line->is_array() || line->size() != 3) {
      throw ConfigError(file, at + ".batch_line_ns", line ? line->dump() : "(missing)",
                        "[fixed, per command, gap] in ns");
    }
    for (const nlohmann::json& v : *line) {
      if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1e6) {
        throw ConfigError(file, at + ".batch_line_ns", line->dump(),
                          "three numbers from 0 to 1e6 (ns)");
      }
    }
    const ReapingFigures sim =
        shared_queue_reaping(gpu, blocks, warps / blocks, entries, line->at(0).get<std::uint32_t>(),
                             line->at(1).get<std::uint32_t>(), line->at(2).get<std::uint32_t>(), 8);
    const std::string how = fmt::format(
        "8 queues of {} entries, each shared by {} block(s) of {} warps (one SM each), 8 rounds of "
        "32 reads a warp, a feeder warp with batch line {} + {} ns a command and gap {} ns",
        entries, blocks, warps / blocks, line->at(0).get<std::uint32_t>(),
        line->at(1).get<std::uint32_t>(), line->at(2).get<std::uint32_t>());
    if (const nlohmann::json* v = find(c, {"ns_per_turn_median"}); v && v->is_number()) {
      add(name + "_ns_per_turn", "ns", v->get<double>(), sim.ns_per_turn,
          how + ": ns per turn per queue, median over the queues", "prediction");
    }
    const std::pair<const char*, platform::ProfiledOp> kinds[] = {
        {"peek", platform::ProfiledOp::kPeek},
        {"atomic", platform::ProfiledOp::kAtomic},
        {"fence_gpu", platform::ProfiledOp::kFenceGpu},
        {"ballot", platform::ProfiledOp::kBallot},
        {"wait", platform::ProfiledOp::kWait}};
    for (const auto& [kind, op] : kinds) {
      const nlohmann::json* v = find(c, {"calls_per_io_median", kind});
      if (v == nullptr || !v->is_number()) continue;
      add(name + "_" + kind + "_per_io", "calls", v->get<double>(),
          sim.calls_per_io[static_cast<int>(op)], how + ": the compute warps' calls per I/O",
          "comparison");
    }
  }
  return {{"rows", rows}};
}

// tests/hardware/agent_pass.cu's k_agent_loop on simulated warps: one
// agent warp (algo::agent_loop, io_agents.h, as the hardware kernel calls
// it) owning 4 queues of 256 entries, batch size 32, batch timeout 0, CQ
// doorbell batch 1, serving a ring of `passes` x 32 requests all ready
// before it starts (spread over the queues in turn, as agent_intake.cuh's
// descriptors), against an echo warp on another SM that reads each SQ tail
// word, checks each new SQE's CID and posts its CQE, then sets the shutdown
// word once every request has completed. The hardware rings its doorbells
// as stores to GPU words; here they are controller-polled shadow doorbells,
// whose ring is the same store to GPU memory (profiled as a store, not an
// MMIO store). Figures per 32 requests: the agent's span (agent_loop's
// start to its return, as the program's %globaltimer) and its op profile.
struct AgentPassFigures {
  double ns_per_32 = 0;
  double op_ns_per_32[platform::kProfiledOps] = {};
  double calls_per_32[platform::kProfiledOps] = {};
  double lane_loop_passes_per_32 = 0;  // passes of the agent's own loops over lanes
  std::uint32_t replies_ok = 0;
};

// `agent_code`: the agent warp runs as io_agents' agent warps do
// (SimWarp::run_agent_code: agent_lane_loop_iteration_ns a pass, as an agent
// kernel's code generation makes it); otherwise at lane_loop_iteration_ns,
// as the loop in a small kernel of its own (k_agent_loop).
AgentPassFigures agent_pass_loop(const nlohmann::json& gpu, std::uint32_t passes, bool agent_code) {
  constexpr std::uint32_t kQueues = 4, kEntries = 256;
  const std::uint32_t requests = passes * algo::kWarpLanes;
  GpuBench bench(gpu);
  gpu::Gpu& g = bench.gpu();
  MemorySpace& memory = bench.machine().memory();
  std::vector<algo::QueuePair> table(kQueues);
  for (std::uint32_t i = 0; i < kQueues; ++i) {
    table[i] = queue_in_gpu_memory(g, i, kEntries);
    table[i].agent_table = g.allocate(std::uint64_t{kEntries} * 8, 128);
  }
  const std::uint64_t replies = g.allocate(std::uint64_t{requests} * 8, 128);
  algo::AgentRing ring;
  ring.entries = requests;
  ring.base = g.allocate(std::uint64_t{requests} * sizeof(algo::AgentRequest), 4096);
  ring.ready = g.allocate(std::uint64_t{requests} * 4, 128);
  ring.gate = g.allocate(std::uint64_t{requests} * 4, 128);
  ring.tail = g.allocate(128, 128);
  const std::uint64_t shutdown = g.allocate(128, 128);
  for (std::uint32_t t = 0; t < requests; ++t) {
    algo::AgentRequest d{};
    d.slba = std::uint64_t{t} * 8u;
    d.buffer = 0x10000000ull + std::uint64_t{t % 32u} * 4096u;
    d.bytes = 4096;
    d.queue = t % kQueues;
    d.nlb_zero_based = 7;
    d.opcode = static_cast<std::uint8_t>(nvme::NvmOpcode::Read);
    d.reply = replies + std::uint64_t{t} * 8;
    memory.write(ring.base + std::uint64_t{t} * sizeof d, &d, sizeof d);
    const std::uint32_t ready = 1;
    memory.write(ring.ready + std::uint64_t{t} * 4, &ready, 4);
  }
  const std::uint32_t local_index[kQueues] = {0, 1, 2, 3};

  platform::WarpCounters agent_counters, echo_counters;
  CountedWarps warps_of(bench);
  // The agent kernel is launched first: its block takes the first SM.
  Picoseconds agent_span = 0;
  warps_of.spawn({g.block_sm(0), 0}, agent_counters, [&](platform::SimWarp& p) {
    if (agent_code) p.run_agent_code();
    algo::AgentContext c;
    c.w.queues = table.data();
    c.w.queue_count = kQueues;
    c.w.cq_doorbell_batch = 1;
    c.w.max_batch = 32;
    c.w.iodepth = 1;
    c.ring = ring;
    algo::AgentQueue owned[kQueues];
    for (std::uint32_t k = 0; k < kQueues; ++k) owned[k].queue = k;
    c.owned = owned;
    c.owned_count = kQueues;
    c.local_index = local_index;
    c.batch_size = 32;
    c.batch_timeout = 0;
    c.shutdown = shutdown;
    const Picoseconds start = p.clock();
    algo::agent_loop(p, c);
    agent_span = p.clock() - start;
  });
  warps_of.spawn({g.block_sm(1), 0}, echo_counters, [&](platform::SimWarp& p) {
    std::uint32_t seen[kQueues] = {};
    std::uint32_t done = 0;
    auto fresh = [&](std::uint32_t i) {
      const std::uint32_t tail = p.load_u32(table[i].sq_shadow);
      return (tail + kEntries - seen[i] % kEntries) % kEntries;
    };
    while (done < requests) {
      // The hardware's echo polls without pause; the simulated warp sleeps
      // until a tail word is written and notices it on its next poll.
      p.wait_until(
          [&] {
            bool any = false;
            for (std::uint32_t i = 0; i < kQueues; ++i) any = any || fresh(i) != 0;
            return any;
          },
          table[0].sq_shadow, 4, table[1].sq_shadow, 4, table[2].sq_shadow, 4, table[3].sq_shadow,
          4);
      for (std::uint32_t i = 0; i < kQueues; ++i) {
        const algo::QueuePair& q = table[i];
        const std::uint32_t n = fresh(i);
        if (n == 0) continue;
        p.fence_gpu();
        for (std::uint32_t base = 0; base < n; base += algo::kWarpLanes) {
          const std::uint32_t count = std::min<std::uint32_t>(n - base, algo::kWarpLanes);
          p.for_lanes(algo::lanes_below(count), [&](int lane) {
            const std::uint32_t position = seen[i] + base + static_cast<std::uint32_t>(lane);
            const std::uint32_t slot = position % kEntries;
            const std::uint32_t cdw0 = p.load_u32(q.sq_base + std::uint64_t{slot} * 64);
            const std::uint32_t cid = cdw0 >> 16;
            const std::uint32_t phase = algo::detail::expected_phase(position, kEntries);
            const std::uint32_t words[2] = {
                ((position + 1) % kEntries) | (std::uint32_t{q.qid} << 16), cid | (phase << 16)};
            p.store_bytes(q.cq_base + std::uint64_t{slot} * 16 + 8, words, sizeof words);
          });
        }
        seen[i] += n;
        done += n;
      }
    }
    p.fence_gpu();
    p.store_u32(shutdown, 1);
  });
  bench.run();
  AgentPassFigures out;
  out.ns_per_32 = ns(agent_span) / passes;
  out.lane_loop_passes_per_32 = static_cast<double>(agent_counters.lane_loop_iterations) / passes;
  for (int k = 0; k < platform::kProfiledOps; ++k) {
    out.op_ns_per_32[k] = ns(agent_counters.op_ps[k]) / passes;
    out.calls_per_32[k] = static_cast<double>(agent_counters.op_calls[k]) / passes;
  }
  for (std::uint32_t t = 0; t < requests; ++t) {
    std::uint64_t r = 0;
    memory.read(replies + std::uint64_t{t} * 8, &r, 8);
    if ((r & 0xFFFFFFFFu) == 1u) ++out.replies_ok;
  }
  return out;
}

// The simulated counterparts of agent_pass.cu's agent kernels (schema
// gpunvme.agent_pass/1): k_agent_loop (the loop in a small kernel, at the
// profile's lane_loop_iteration_ns) and agent_kernel (gpunvme-hw's per-role
// agent kernel, as io_agents' agent warps run: agent_lane_loop_iteration_ns),
// each the agent's time per 32 requests and its op profile's split (own
// code, ballots, for_lanes, system fences) and calls. agent_kernel's own code
// calibrates agent_lane_loop_iteration_ns: the measured own code per 32
// requests less what the simulated agent's own code holds besides its loop
// passes (first_lane's scans), over its passes per 32 requests, iterated
// until the passes it is derived from are those it simulates.
nlohmann::json correlate_agent_pass(const nlohmann::json& mb, const std::string& file,
                                    const std::string& profile, double tolerance,
                                    const nlohmann::json& gpu_overrides) {
  constexpr std::uint32_t kPasses = 1024;  // agent_pass.cu's kLoopPasses
  const nlohmann::json gpu = gpu_node(profile, gpu_overrides);
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json calibration = nlohmann::json::object();
  auto number = [&](const nlohmann::json& block, const std::string& at,
                    std::initializer_list<const char*> path) -> std::optional<double> {
    const nlohmann::json* v = find(block, path);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number() || v->get<double>() < 0) {
      std::string where = at;
      for (const char* k : path) where += std::string(".") + k;
      throw ConfigError(file, where, v->dump(), "a number of nanoseconds or calls, 0 or more");
    }
    return v->get<double>();
  };
  auto simulate = [&](const nlohmann::json& g, bool agent_code) {
    const AgentPassFigures sim = agent_pass_loop(g, kPasses, agent_code);
    if (sim.replies_ok != kPasses * algo::kWarpLanes) {
      throw std::logic_error(fmt::format("simulated agent pass: {} of {} replies hold status 0",
                                         sim.replies_ok, kPasses * algo::kWarpLanes));
    }
    return sim;
  };
  const std::string setup =
      "one agent warp (algo::agent_loop) owning 4 queues of 256 entries, batch 32, timeout 0, "
      "serving 1,024 x 32 requests ready before it starts, against an echo warp on another SM; "
      "per 32 requests";
  bool any = false;
  for (const char* kernel : {"k_agent_loop", "agent_kernel"}) {
    const nlohmann::json* block = find(mb, {kernel});
    if (block == nullptr) continue;
    const std::string at = std::string("$.") + kernel;
    if (!block->is_object()) {
      throw ConfigError(file, at, block->dump(), "an object of the kernel's figures");
    }
    any = true;
    const bool agent_code = std::string(kernel) == "agent_kernel";
    nlohmann::json g = gpu;
    const std::optional<double> measured_own =
        number(*block, at, {"profile_split_ns_per_32_requests", "other", "median"});
    if (agent_code && measured_own) {
      GpuBench probe(gpu);
      double value = ns(probe.gpu().costs().agent_lane_loop_iteration);
      double fixed = 0, passes = 0;
      for (int round = 0; round < 6; ++round) {
        g["agent_lane_loop_iteration_ns"] = value;
        const AgentPassFigures sim = simulate(g, true);
        passes = sim.lane_loop_passes_per_32;
        fixed =
            sim.op_ns_per_32[static_cast<int>(platform::ProfiledOp::kLaneLoop)] - passes * value;
        const double next = (*measured_own - fixed) / passes;
        const bool settled = std::fabs(next - value) < 0.005;
        value = next;
        if (settled) break;
      }
      if (value < 0) {
        throw ConfigError(file, at + ".profile_split_ns_per_32_requests.other.median",
                          fmt::format("{}", *measured_own),
                          fmt::format("at least the simulated agent's own code besides its loop "
                                      "passes ({:.1f} ns per 32 requests)",
                                      fixed));
      }
      calibration["agent_lane_loop_iteration_ns"] = {
          {"value", value},
          {"doc",
           "agent_kernel's own code per 32 requests (op profile 'other', median over the "
           "runs) less the simulated agent's own code besides its loop passes (first_lane's "
           "scans), over the simulated passes per 32 requests"},
          {"measured_own_code_ns_per_32", *measured_own},
          {"simulated_other_own_code_ns_per_32", fixed},
          {"simulated_passes_per_32", passes},
          {"profile_value", ns(probe.gpu().costs().agent_lane_loop_iteration)}};
      // The rows compare the profile as it is.
      g = gpu;
    }
    const AgentPassFigures sim = simulate(g, agent_code);
    const std::string how =
        setup + (agent_code ? ", the agent at agent_lane_loop_iteration_ns"
                            : ", the agent at lane_loop_iteration_ns (a kernel of its own)");
    if (const auto m = number(*block, at, {"ns_per_32_requests_unprofiled", "median"})) {
      rows.push_back(comparison_row(std::string(kernel) + "_ns_per_32_requests", "ns", *m,
                                    sim.ns_per_32, tolerance, how + ", unprofiled on the hardware",
                                    agent_code ? "prediction" : "comparison"));
    }
    const std::pair<const char*, platform::ProfiledOp> kinds[] = {
        {"other", platform::ProfiledOp::kLaneLoop},
        {"ballot", platform::ProfiledOp::kBallot},
        {"for_lanes", platform::ProfiledOp::kForLanes},
        {"fence_system", platform::ProfiledOp::kFenceSystem}};
    for (const auto& [kind, op] : kinds) {
      const int k = static_cast<int>(op);
      const bool own = op == platform::ProfiledOp::kLaneLoop;
      if (const auto m = number(*block, at, {"profile_split_ns_per_32_requests", kind, "median"})) {
        rows.push_back(comparison_row(fmt::format("{}_{}_ns_per_32_requests", kernel, kind), "ns",
                                      *m, sim.op_ns_per_32[k], tolerance,
                                      how + ": the op profile's " + kind +
                                          (own ? " (the warp's own code; lane_loop here)" : ""),
                                      agent_code && own ? "calibration" : "comparison"));
      }
      if (const auto m = number(*block, at, {"profile_calls_per_32_requests_run1", kind})) {
        rows.push_back(comparison_row(fmt::format("{}_{}_calls_per_32_requests", kernel, kind),
                                      "calls", *m, sim.calls_per_32[k], tolerance,
                                      how + ": the op profile's calls", "comparison"));
      }
    }
  }
  if (!any) {
    throw ConfigError(file, "$.k_agent_loop", "(missing)",
                      "the figures of k_agent_loop or agent_kernel (agent_pass.cu)");
  }
  return {{"rows", rows}, {"calibration", calibration}};
}

}  // namespace

double own_slot_detection_ns(const std::string& profile) {
  constexpr std::uint32_t kEntries = 32;
  GpuBench bench(nlohmann::json{{"profile", profile}});
  const std::uint64_t cq = bench.gpu().allocate(kEntries * nvme::kCqEntrySize, 4096);
  const Picoseconds lands_at = ns_to_ps(10'000.0);
  Picoseconds seen = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    p.wait_until(
        [&] {
          bool all = true;
          for (std::uint32_t lane = 0; lane < kEntries; ++lane) {
            const auto e = p.load<nvme::CompletionEntry>(cq + lane * nvme::kCqEntrySize);
            all = all && e.phase();
          }
          return all;
        },
        cq, kEntries * nvme::kCqEntrySize);
    seen = p.clock();
  });
  // The controller's posts, as one write of the batch's entries (phase 1).
  Calendar::current().spawn([&] {
    GpuBench::idle_for(lands_at);
    std::vector<nvme::CompletionEntry> batch(kEntries);
    for (std::uint32_t k = 0; k < kEntries; ++k) {
      batch[k].cid = static_cast<std::uint16_t>(k);
      batch[k].status_field = nvme::make_status_field(nvme::Status::Success, true);
    }
    bench.machine().memory().write(cq, batch.data(), kEntries * nvme::kCqEntrySize);
  });
  bench.run();
  if (seen < lands_at) throw std::logic_error("own-slot wait returned before its CQEs landed");
  return ns(seen - lands_at);
}

nlohmann::json correlate_microbenchmarks(const nlohmann::json& mb, const std::string& file,
                                         const std::string& profile, double tolerance,
                                         const nlohmann::json& gpu_overrides) {
  const std::string schema = mb.value("schema", "");
  nlohmann::json rows = nlohmann::json::array();
  nlohmann::json calibration = nlohmann::json::object();
  if (schema == "gpunvme.lane_loops_and_turns/1") {
    nlohmann::json turns =
        correlate_lane_loops_and_turns(mb, file, profile, tolerance, gpu_overrides);
    rows = std::move(turns.at("rows"));
    calibration = std::move(turns.at("calibration"));
  } else if (schema == "gpunvme.shared_queue_reaping.runs/1") {
    rows = std::move(
        correlate_shared_queue_reaping(mb, file, profile, tolerance, gpu_overrides).at("rows"));
  } else if (schema == "gpunvme.agent_pass/1") {
    nlohmann::json agents = correlate_agent_pass(mb, file, profile, tolerance, gpu_overrides);
    rows = std::move(agents.at("rows"));
    calibration = std::move(agents.at("calibration"));
  } else if (schema != "gpunvme.gpu_microbench/1") {
    throw ConfigError(file, "$.schema", schema,
                      "expected \"gpunvme.gpu_microbench/1\" (a gpu_microbench results file), "
                      "\"gpunvme.lane_loops_and_turns/1\" (lane_loops_and_turns.cu) or "
                      "\"gpunvme.shared_queue_reaping.runs/1\" (shared_queue_reaping.cu) or "
                      "\"gpunvme.agent_pass/1\" (agent_pass.cu)");
  } else if (!gpu_overrides.empty()) {
    // gpu_microbench's loops run the profile as committed: overrides would
    // be ignored, and the rows look like a what-if they are not.
    throw std::invalid_argument(
        "correlate_microbenchmarks: GPU overrides apply to lane_loops_and_turns, "
        "shared_queue_reaping and agent_pass results, not to gpu_microbench ones");
  }
  auto add = [&](const std::string& name, const nlohmann::json* measured, double simulated,
                 const std::string& how) {
    if (measured == nullptr || !measured->is_object() || !measured->contains("value")) return;
    const double h = measured->at("value").get<double>();
    const double err = h > 0 ? (simulated - h) / h : NAN;
    rows.push_back(
        {{"name", name},
         {"unit", measured->value("unit", "")},
         {"measured", h},
         {"simulated", simulated},
         {"error_pct", std::isfinite(err) ? nlohmann::json(100.0 * err) : nlohmann::json(nullptr)},
         {"within_tolerance", std::isfinite(err) && std::fabs(err) <= tolerance},
         {"simulated_as", how}});
  };
  if (schema == "gpunvme.gpu_microbench/1") {
    const nlohmann::json& f = mb.at("figures");
    constexpr std::uint32_t kIters = 200;

    // Uncontended atomic: a lone thread's dependent chain on one L2-resident
    // word. The model has a near and a far L2 partition. The hardware's chain
    // (162 ns, two integer ops per step included) ran near its word; the
    // per-SM map gives both modes (4224 SM-line pairs, half in each).
    const auto atomic_chain = [&](bool near) {
      // An SM near (or far from) per_op's word, the first allocation of a
      // fresh bench.
      GpuBench probe(nlohmann::json{{"profile", profile}});
      gpu::Gpu& g = probe.gpu();
      const std::uint64_t word = g.allocate(4096, 128);
      std::uint32_t sm = 0;
      while (sm + 1 < g.sms() && (g.atomic_latency(sm, word) == g.costs().atomic_near) != near) {
        ++sm;
      }
      return per_op(profile, sm, kIters, [](platform::SimWarp& p, std::uint64_t w) {
        p.for_lanes(algo::lanes_below(1), [&](int) { p.atomic_add_u32(w, 1); });
      });
    };
    const double near_chain = atomic_chain(true);
    const double far_chain = atomic_chain(false);
    add("atomic_add_uncontended_latency", find(f, {"atomic_add_uncontended_latency"}), near_chain,
        "one lane, dependent atomicAdd chain on one GPU word near its SM");
    if (const nlohmann::json* map = find(f, {"atomic_add_latency_by_sm_and_address"})) {
      const std::optional<std::pair<double, double>> modes = near_far_modes(*map);
      if (modes) {
        const nlohmann::json near = {{"value", modes->first}, {"unit", "ns"}};
        const nlohmann::json far = {{"value", modes->second}, {"unit", "ns"}};
        add("atomic_latency_near_mode", &near, near_chain,
            "dependent atomicAdd chain, word in the SM's near L2 partition (hardware: mean of the "
            "per-SM map's lower mode)");
        add("atomic_latency_far_mode", &far, far_chain,
            "the same, word in the far partition (hardware: the map's upper mode)");
      }
    }

    // Same-address contention against the number of contending warps.
    if (const nlohmann::json* rowsj = find(f, {"atomic_contention", "rows"})) {
      for (std::uint32_t lanes : {1u, 32u}) {
        for (std::uint32_t warps : {1u, 8u, 32u, 132u, 528u}) {
          const nlohmann::json* m = nullptr;
          for (const nlohmann::json& r : *rowsj) {
            if (r.value("addresses", "") == "same" && r.value("lanes_per_warp", 0u) == lanes &&
                r.value("warps", 0u) == warps) {
              m = &r;
            }
          }
          if (m == nullptr) continue;
          const auto [latency, throughput] = contend(profile, warps, lanes, lanes == 1 ? 200 : 20);
          const nlohmann::json lat = {{"value", m->value("mean_op_latency_ns", 0.0)},
                                      {"unit", "ns"}};
          add(fmt::format("same_address_atomic_latency_{}w_{}l", warps, lanes), &lat, latency,
              fmt::format("{} one-warp blocks x {} lanes, dependent atomicAdd on one word: mean op "
                          "latency",
                          warps, lanes));
          if (warps == 528 && lanes == 32) {
            add("l2_same_address_atomic_interval", find(f, {"l2_same_address_atomic_interval"}),
                1e9 / throughput, "528 warps x 32 lanes on one word: ns per operation, chip-wide");
          }
        }
      }
    }

    // Fences by scope, idle and after a host store (loop of store + fence minus
    // the store alone, as the hardware program computes it).
    add("fence_block_idle", find(f, {"fences", "fence_block_idle"}),
        per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_block(); }),
        "fence_block in a loop");
    add("fence_gpu_idle", find(f, {"fences", "fence_gpu_idle"}),
        per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_gpu(); }),
        "fence_gpu in a loop");
    add("fence_system_idle", find(f, {"fences", "fence_system_idle"}),
        per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) { p.fence_system(); }),
        "fence_system in a loop");
    const double host_store = per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) {
      p.store_u32(GpuBench::host_memory(), 1);
    });
    const double host_store_fence =
        per_op(profile, 0, kIters, [](platform::SimWarp& p, std::uint64_t) {
          p.store_u32(GpuBench::host_memory(), 1);
          p.fence_system();
        });
    add("fence_system_after_host_store", find(f, {"fences", "fence_system_after_host_store"}),
        host_store_fence - host_store, "(host store + fence_system) - host store, in a loop");
    add("fence_gpu_after_global_store", find(f, {"fences", "fence_gpu_after_global_store"}),
        per_op(profile, 0, kIters,
               [](platform::SimWarp& p, std::uint64_t w) {
                 p.store_u32(w, 1);
                 p.fence_gpu();
               }) -
            per_op(profile, 0, kIters,
                   [](platform::SimWarp& p, std::uint64_t w) { p.store_u32(w, 1); }),
        "(GPU store + fence_gpu) - GPU store, in a loop");

    // Loads: L2 hit and zero-copy (a dependent load of pinned host memory).
    add("l2_hit_load_latency", find(f, {"load_latency", "l2_hit_load_latency"}),
        per_op(profile, 0, kIters,
               [](platform::SimWarp& p, std::uint64_t w) { (void)p.load_u32(w); }),
        "dependent load of a GPU word (L2 hit)");
    add("host_read_latency_64KiB", find(f, {"zero_copy", "host_read_latency_64KiB"}),
        per_op(
            profile, 0, kIters,
            [](platform::SimWarp& p, std::uint64_t) { (void)p.load_u32(GpuBench::host_memory()); }),
        "dependent load of pinned host memory over PCIe");
    // GPU -> CPU -> GPU: the GPU's fenced store to a host flag and its read of
    // the reply; the host thread's own reaction time is not modelled (0).
    add("gpu_cpu_gpu_round_trip_fenced", find(f, {"round_trip", "gpu_cpu_gpu_round_trip_fenced"}),
        per_op(profile, 0, 50,
               [](platform::SimWarp& p, std::uint64_t) {
                 p.store_u32(GpuBench::host_memory(), 1);
                 p.fence_system();
                 (void)p.load_u32(GpuBench::host_memory() + 128);
               }),
        "host store + fence_system + one zero-copy read of the reply (host reaction time 0)");
  }

  double mae = 0, worst = 0;
  std::size_t n = 0;
  bool all_within = true;
  for (const nlohmann::json& r : rows) {
    if (r.at("error_pct").is_null()) continue;
    const double e = std::fabs(r.at("error_pct").get<double>());
    mae += e;
    worst = std::max(worst, e);
    ++n;
    all_within = all_within && r.at("within_tolerance").get<bool>();
  }
  nlohmann::json report = {{"measured_file", file},
                           {"date_measured", mb.value("date", "")},
                           {"gpu_profile", profile},
                           {"calibrated", true},
                           {"within_tolerance", all_within},
                           {"mean_abs_error_pct", n ? mae / static_cast<double>(n) : 0.0},
                           {"max_abs_error_pct", worst},
                           {"figures", rows}};
  if (!calibration.empty()) report["calibration"] = calibration;
  return report;
}

}  // namespace gpunvme::validate
