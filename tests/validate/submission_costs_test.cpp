// configs/measurements/submission-costs-h100-2026-11-27.json sets each figure
// of tests/hardware/submission_costs.cu beside what the GPU model charges for
// the same platform calls (`comparison[].model_ns`), worked out by hand from
// configs/gpu/h100-sxm.json and SimWarp's charging rules. These tests run the
// same algorithm code (write_sqe, own_cqe_waiting through check(), the
// ballots and the turn loop) on a simulated warp of that profile and hold
// the simulator to the hand-worked charges: the README's table of measured
// against charged costs stays what the simulator does.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include "sim/core/algo/completion.h"
#include "sim/core/algo/io_common.h"
#include "sim/system/run/gpu_bench.h"

namespace gpunvme {
namespace {

const std::string kFile =
    std::string(GPUNVME_SOURCE_DIR) + "/configs/measurements/submission-costs-h100-2026-11-27.json";

double model_ns(const std::string& figure) {
  std::ifstream in(kFile);
  const nlohmann::json doc = nlohmann::json::parse(in);
  for (const nlohmann::json& row : doc.at("comparison")) {
    if (row.at("figure") == figure) return row.at("model_ns").get<double>();
  }
  ADD_FAILURE() << figure << " is not in " << kFile;
  return 0;
}

double ns(Picoseconds t) { return static_cast<double>(t) / 1000.0; }

const nlohmann::json kH100 = {{"profile", "h100-sxm"}};

// One warp of the H100 profile (or of `gpu`) runs `setup` once, then `op`
// `iterations` times: the simulated time per iteration.
double simulated_ns_per_op(
    std::uint32_t iterations, const std::function<void(GpuBench&)>& setup,
    const std::function<void(platform::SimWarp&, std::uint32_t iteration)>& op,
    const nlohmann::json& gpu = kH100) {
  GpuBench bench(gpu);
  setup(bench);
  Picoseconds span = 0;
  bench.spawn({0, 0}, [&](platform::SimWarp& p) {
    const Picoseconds start = p.clock();
    for (std::uint32_t i = 0; i < iterations; ++i) op(p, i);
    span = p.clock() - start;
  });
  bench.run();
  return ns(span) / iterations;
}

algo::IoRequest lane_request(int lane) {
  algo::IoRequest r;
  r.slba = static_cast<std::uint64_t>(lane) * 8u;
  r.nlb_zero_based = 7;
  r.buffer = 0x10000000ull + static_cast<std::uint64_t>(lane) * 4096u;
  r.bytes = 4096;
  return r;
}

TEST(SubmissionCosts, SqeStoresCostWhatTheTableSaysTheModelCharges) {
  for (const bool in_host : {false, true}) {
    SCOPED_TRACE(in_host ? "host ring" : "gpu ring");
    for (const std::uint32_t lanes : {1u, 8u, 32u}) {
      algo::QueuePair q;
      q.entries = 64;
      algo::Lanes<algo::IoRequest> request{};
      for (int lane = 0; lane < algo::kWarpLanes; ++lane) request[lane] = lane_request(lane);
      const double simulated = simulated_ns_per_op(
          64,
          [&](GpuBench& bench) {
            q.sq_base = in_host ? GpuBench::host_memory() : bench.gpu().allocate(64 * 64, 4096);
          },
          [&](platform::SimWarp& p, std::uint32_t i) {
            p.for_lanes(algo::lanes_below(lanes), [&](int lane) {
              const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
              algo::detail::write_sqe(p, q, ticket % q.entries, ticket & 0xFFFFu, request[lane]);
            });
          });
      const std::string figure = "sqe_store " + std::string(in_host ? "host" : "gpu") + " ring, " +
                                 std::to_string(lanes) + " lanes: store per warp";
      EXPECT_NEAR(simulated, model_ns(figure), 0.01 * model_ns(figure)) << figure;
    }
  }
}

TEST(SubmissionCosts, BallotsAndTurnsCostWhatTheTableSaysTheModelCharges) {
  std::uint64_t word = 0;
  auto setup = [&](GpuBench& bench) { word = bench.gpu().allocate(128, 128); };
  algo::Lanes<std::uint32_t> ticket{};
  for (int lane = 0; lane < algo::kWarpLanes; ++lane)
    ticket[lane] = static_cast<std::uint32_t>(lane);
  // Each ballot is followed, as on the hardware, by the pick of the lane
  // that matched (first_lane: lane i & 31, 15.5 passes on average).
  std::uint32_t picked = 0;
  const double on_registers =
      simulated_ns_per_op(256, setup, [&](platform::SimWarp& p, std::uint32_t i) {
        const algo::LaneMask mine =
            p.ballot(algo::kAllLanes, [&](int lane) { return ticket[lane] == (i & 31u); });
        picked += ticket[algo::first_lane(p, mine)];
      });
  EXPECT_NEAR(on_registers, model_ns("ballot_register"), 0.01 * model_ns("ballot_register"));
  const double loading =
      simulated_ns_per_op(256, setup, [&](platform::SimWarp& p, std::uint32_t i) {
        const algo::LaneMask mine = p.ballot(algo::kAllLanes, [&](int lane) {
          return p.load_u32(word) + (i & 31u) == ticket[lane];
        });
        picked += ticket[algo::first_lane(p, mine)];
      });
  EXPECT_NEAR(loading, model_ns("ballot_gpu_load"), 0.01 * model_ns("ballot_gpu_load"));
  const double divergent =
      simulated_ns_per_op(256, setup, [&](platform::SimWarp& p, std::uint32_t i) {
        const algo::LaneMask mine = p.ballot(algo::kAllLanes, [&](int lane) {
          if ((lane & 1) != 0) return p.load_u32(word) + (i & 31u) == ticket[lane];
          return ticket[lane] == (i & 31u);
        });
        picked += ticket[algo::first_lane(p, mine)];
      });
  EXPECT_NEAR(divergent, model_ns("ballot_divergent_gpu_load"),
              0.01 * model_ns("ballot_divergent_gpu_load"));
  // all_threads' turn loop with the turn in a GPU word: 32 turns an iteration.
  // The loop holds its words' addresses in registers, so the descriptor reads
  // of submission.h's own turn code (turn_descriptor_ns) are not in it, as in
  // validate's simulated register loops.
  nlohmann::json register_turns = kH100;
  register_turns["turn_descriptor_ns"] = 0.0;
  const double turns = simulated_ns_per_op(
                           8, setup,
                           [&](platform::SimWarp& p, std::uint32_t i) {
                             algo::LaneMask waiting = algo::kAllLanes;
                             algo::Lanes<std::uint32_t> mine_ticket{};
                             for (int lane = 0; lane < algo::kWarpLanes; ++lane) {
                               mine_ticket[lane] = i * 32u + static_cast<std::uint32_t>(lane);
                             }
                             while (waiting != 0) {
                               const algo::LaneMask mine = p.ballot(waiting, [&](int lane) {
                                 return p.load_u32(word) == mine_ticket[lane];
                               });
                               p.turn_pass();
                               p.store_u32(word, mine_ticket[algo::first_lane(p, mine)] + 1u);
                               waiting &= ~mine;
                             }
                           },
                           register_turns) /
                       32.0;
  EXPECT_NEAR(turns, model_ns("turn_loop_gpu_word (per turn)"),
              0.01 * model_ns("turn_loop_gpu_word (per turn)"));
  EXPECT_EQ(picked, 3u * 256u * 31u / 2u);  // every pick found the matching lane
}

TEST(SubmissionCosts, CqScansCostWhatTheTableSaysTheModelCharges) {
  for (const bool in_host : {false, true}) {
    for (const std::uint32_t posted : {1u, 8u, 32u}) {
      for (const bool present : {true, false}) {
        algo::QueuePair q;
        q.entries = 64;
        algo::Lanes<algo::Pending> io{};
        io[0].cid = present ? 100 + posted - 1 : 0xFFFFu;
        io[0].state = algo::kOutstanding;
        bool found = !present;
        const double simulated = simulated_ns_per_op(
            16,
            [&](GpuBench& bench) {
              gpu::Gpu& g = bench.gpu();
              q.cq_base = in_host ? GpuBench::host_memory() : g.allocate(64 * 16, 4096);
              q.cq_head = g.allocate(128, 128);
              q.cq_marks = g.allocate(64 * 4, 128);
              for (std::uint32_t i = 0; i < q.entries; ++i) {
                nvme::CompletionEntry e;
                std::memset(&e, 0, sizeof e);
                e.cid = static_cast<std::uint16_t>(100 + i);
                e.sqid = 1;
                e.status_field = i < posted ? 1u : 0u;
                bench.machine().memory().write(q.cq_base + i * 16u, &e, sizeof e);
              }
            },
            [&](platform::SimWarp& p, std::uint32_t) {
              found = p.check([&] { return algo::detail::own_cqe_waiting(p, q, io, 1u); });
            });
        const std::string figure = "cq_scan " + std::string(in_host ? "host" : "gpu") + " CQ, " +
                                   std::to_string(posted) + " posted, CID " +
                                   (present ? "in the last" : "absent");
        EXPECT_EQ(found, present) << figure;
        EXPECT_NEAR(simulated, model_ns(figure), 0.01 * model_ns(figure)) << figure;
      }
    }
  }
}

}  // namespace
}  // namespace gpunvme
