// io_agents' agent warps run their own code at agent_lane_loop_iteration_ns a
// pass: the agent loop as an agent kernel compiles it (gpunvme-hw's per-role
// agent_kernel), calibrated on tests/hardware/agent_pass.cu's run of that
// kernel with no compute warps and no strategy (agent-pass-h200-2026-11-29-
// perrole.json) against the simulated counterpart of the same setup.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/core/algo/lanes.h"
#include "sim/frontend/validate/validate.h"
#include "sim/system/config/run_config.h"
#include "sim/system/run/gpu_bench.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

const std::string kAgentPass = std::string(GPUNVME_SOURCE_DIR) +
                               "/configs/measurements/agent-pass-h200-2026-11-29-perrole.json";

const nlohmann::json& row(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& r : report.at("figures")) {
    if (r.at("name") == name) return r;
  }
  ADD_FAILURE() << "no row " << name;
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

// By hand: a saturated pass takes 32 requests, all ready, over 4 queues. Its
// own loops over lanes are the intake's count of earlier requests per queue
// (an outer loop over the 32 lanes and, for lane k, an inner loop over the k
// lanes below it: 32 + 0 + 1 + ... + 31 = 528 passes) and the slot
// assignment over the 32 taken lanes (32): 560 passes per 32 requests, no
// other own code (every pick finds lane 0). agent_kernel's own code, 46,309.89
// ns per 32 requests (median of the five runs' 46,309.25..46,310.12), over 560
// is 82.6962 ns, which the H200 profile holds to the 0.01 ns it rounds to.
TEST(AgentOwnCode, TheProfileHoldsTheAgentKernelsOwnCodeOverItsSimulatedPasses) {
  const nlohmann::json measured = read_json_file(kAgentPass);
  const nlohmann::json report =
      validate::correlate_microbenchmarks(measured, kAgentPass, "h200-sxm", 0.10);
  const nlohmann::json& cal = report.at("calibration").at("agent_lane_loop_iteration_ns");
  EXPECT_DOUBLE_EQ(cal.at("simulated_passes_per_32").get<double>(), 560.0);
  EXPECT_DOUBLE_EQ(cal.at("simulated_other_own_code_ns_per_32").get<double>(), 0.0);
  EXPECT_NEAR(cal.at("measured_own_code_ns_per_32").get<double>(), 46309.89, 0.005);
  EXPECT_NEAR(cal.at("value").get<double>(), 46309.89 / 560.0, 1e-6);
  EXPECT_NEAR(cal.at("profile_value").get<double>(), 82.70, 1e-9);
  EXPECT_NEAR(cal.at("value").get<double>(), 82.70, 0.005);

  // The agent_kernel row the calibration reads agrees by construction; the
  // same loop in a kernel of its own runs at the per-strategy pass and
  // costs 560 x 60.38 = 33,812.8 ns of own code, where the hardware's small
  // kernel took 24,311 ns: the agent kernel's code generation is what the
  // parameter carries.
  const nlohmann::json& own = row(report, "agent_kernel_other_ns_per_32_requests");
  EXPECT_EQ(own.at("role"), "calibration");
  EXPECT_NEAR(own.at("simulated").get<double>(), 560 * 82.70, 0.01);
  const nlohmann::json& small = row(report, "k_agent_loop_other_ns_per_32_requests");
  EXPECT_NEAR(small.at("simulated").get<double>(), 560 * 60.38, 0.01);
  EXPECT_NEAR(small.at("measured").get<double>(), 24311.08, 0.005);
  // The pass's calls are the hardware's: 6 ballots (the ready and room
  // ballots and a drain of each of the 4 queues) per 32 requests.
  EXPECT_NEAR(
      row(report, "agent_kernel_ballot_calls_per_32_requests").at("simulated").get<double>(), 6.0,
      0.05);
}

// A warp that runs the agent's code loops over its 32 lanes at the agent
// pass, one that does not at the per-strategy pass: 32 x 82.70 = 2,646.4 ns
// and 32 x 60.38 = 1,932.16 ns on the H200 profile.
TEST(AgentOwnCode, AnAgentWarpsLoopOverItsLanesCostsTheAgentPass) {
  for (const bool agent : {true, false}) {
    GpuBench bench(nlohmann::json{{"profile", "h200-sxm"}});
    Picoseconds took = 0;
    bench.spawn({0, 0}, [&](platform::SimWarp& p) {
      if (agent) p.run_agent_code();
      const Picoseconds start = p.clock();
      algo::for_each_lane(p, algo::kAllLanes, [](int) {});
      took = p.clock() - start;
    });
    bench.run();
    EXPECT_EQ(took, 32 * ns_to_ps(agent ? 82.70 : 60.38)) << agent;
  }
}

// In a run, io_agents' agent warps pay agent_lane_loop_iteration_ns and the
// compute warps lane_loop_iteration_ns: with the compute warps' pass at 0 and
// the agents' at 250 ns, every charged picosecond of own code is an agent's,
// a whole number of 250 ns passes, fewer than all the passes counted.
TEST(AgentOwnCode, OnlyTheAgentWarpsPayTheAgentPassInARun) {
  const nlohmann::json gpu =
      run(load_config(default_topology_file(), default_scenario_file(),
                      {"scenario.strategy=io_agents", "scenario.threads=256", "scenario.ios=2000",
                       "topology.nodes.gpu0.lane_loop_iteration_ns=0",
                       "topology.nodes.gpu0.agent_lane_loop_iteration_ns=250"},
                      1))
          .at("gpus")
          .at("gpu0");
  const double charged_ns = gpu.at("lane_loop_ns").get<double>();
  const double passes = gpu.at("lane_loop_iterations").get<double>();
  EXPECT_GT(charged_ns, 0.0);
  EXPECT_DOUBLE_EQ(charged_ns / 250.0, std::floor(charged_ns / 250.0));
  EXPECT_LT(charged_ns, passes * 250.0);
}

}  // namespace
}  // namespace gpunvme
