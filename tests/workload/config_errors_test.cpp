// Configuration errors of the workloads: a field of another kind, tiers too
// small for the KV cache, malformed graph files, a CPU path without host
// memory. Kept apart and run first: under AddressSanitizer, an exception
// thrown after SystemC has run warp threads in the same process is
// misreported (google/sanitizers#189), so these run before any simulation.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/csr_graph.h"
#include "sim/system/workload/microbenchmark.h"
#include "sim/system/workload/software_cache.h"
#include "sim/system/workload/workload.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

std::vector<std::string> kv_small(std::vector<std::string> more) {
  std::vector<std::string> o{
      "scenario.layers=4",        "scenario.kv_heads=2",          "scenario.head_dim=64",
      "scenario.block_tokens=16", "scenario.context_tokens=1000", "scenario.batch=2",
      "scenario.bs=8192"};
  o.insert(o.end(), more.begin(), more.end());
  return o;
}

TEST(ConfigErrors, AFieldOfAnotherKindIsAnErrorNamingIt) {
  try {
    load_config("", "", {"scenario.layers=4"}, 1);
    FAIL() << "layers accepted in a microbenchmark";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.layers");
    EXPECT_NE(e.problem().find("kv_cache"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("microbenchmark"), std::string::npos) << e.what();
  }
  try {
    test::scenario("gather-gpu", {"scenario.rw=\"randrw\""});
    FAIL() << "rw accepted in a gather";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.rw");
  }
}

TEST(ConfigErrors, CpuPathsNeedHostMemory) {
  // A topology without host memory has nowhere for the host's queues.
  nlohmann::json topo = read_json_file(default_topology_file());
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : topo["nodes"]) {
    if (n["kind"] != "host_memory") nodes.push_back(n);
  }
  topo["nodes"] = nodes;
  const std::string file =
      (std::filesystem::temp_directory_path() / "gpunvme_no_dram.json").string();
  std::ofstream(file) << topo.dump();
  EXPECT_NO_THROW(load_config(file, "", {}, 1));
  try {
    load_config(file, "", {"scenario.path=gds"}, 1);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.path");
  }
}

TEST(ConfigErrors, TiersTooSmallAreAConfigurationError) {
  EXPECT_THROW(
      test::scenario("kv-cache-gpu",
                     kv_small({"scenario.hbm_kv_gib=0.000001"})),  // not even the last blocks
      ConfigError);
  EXPECT_THROW(test::scenario("kv-cache-gpu",
                              kv_small({"scenario.nvme_kv_gib=0.0001", "scenario.hbm_kv_gib=0.001",
                                        "scenario.host_kv_gib=0"})),
               ConfigError);
}

TEST(ConfigErrors, KvModelAndPolicyConflicts) {
  // A named model sets the shape: a shape field set to a third value is an
  // error naming the model's value.
  try {
    test::scenario("kv-cache-gpu", {"scenario.model=\"llama-3.1-70b\"", "scenario.layers=40"});
    FAIL() << "layers = 40 accepted with llama-3.1-70b";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.layers");
    EXPECT_NE(e.problem().find("layers = 80"), std::string::npos) << e.what();
  }
  // sparse and in_storage stream lower-tier KV every step: no lru.
  try {
    test::scenario("kv-cache-gpu", kv_small({"scenario.policy=sparse", "scenario.eviction=lru",
                                             "scenario.hbm_kv_gib=1"}));
    FAIL() << "lru accepted with policy sparse";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.eviction");
  }
}

TEST(ConfigErrors, MalformedGraphsAndGraphFields) {
  const auto dir = std::filesystem::temp_directory_path();
  const std::string bad = (dir / "gpunvme_bad.el").string();
  std::ofstream(bad) << "0 1\nnot an edge\n";
  try {
    read_graph_file(bad, true);
    FAIL() << "malformed edge list accepted";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "line 2");
  }
  const std::string mtx = (dir / "gpunvme_bad.mtx").string();
  std::ofstream(mtx) << "%%MatrixMarket matrix array real general\n2 2\n";
  EXPECT_THROW(read_graph_file(mtx, true), ConfigError);
  EXPECT_THROW(test::scenario("graph-bfs-gpu", {"scenario.rmat_a=0.9"}), ConfigError);
  EXPECT_THROW(test::scenario("graph-bfs-gpu", {"scenario.graph=no-such-graph.mtx"}), ConfigError);
}

TEST(ConfigErrors, ReleasingACacheLineMoreThanHeld) {
  SoftwareCache cache(1);
  auto a = cache.acquire(1);
  cache.release(a->slot);
  EXPECT_THROW(cache.release(a->slot), std::logic_error);
}

// The run-length fields (tests/workload/run_length_test.cpp runs them). Kept here, before any
// test that runs warps: an exception thrown in-process after warp coroutines have run is
// misreported by AddressSanitizer (SystemC's coroutine stacks carry no ASan annotations).
TEST(ConfigErrors, RunLengthFieldsNameTheFieldAndWhatIsAllowed) {
  auto error_of = [](const std::vector<std::string>& sets,
                     const std::string& scenario =
                         "randread-4k") -> std::pair<std::string, std::string> {
    try {
      test::scenario(scenario, sets);
    } catch (const ConfigError& e) {
      return {e.path(), e.what()};
    }
    return {"no error", ""};
  };
  const auto [time_path, time_what] = error_of({"scenario.time_based=true"});
  EXPECT_EQ(time_path, "$.time_based");
  EXPECT_NE(time_what.find("runtime_us > 0"), std::string::npos) << time_what;
  // The value came from the override: the message names it, not the scenario file.
  EXPECT_EQ(time_what.rfind("--set scenario.time_based=true: ", 0), 0u) << time_what;
  const auto [size_path, size_what] = error_of({"scenario.io_size=10000"});
  EXPECT_EQ(size_path, "$.io_size");
  EXPECT_NE(size_what.find("10000"), std::string::npos) << size_what;
  EXPECT_NE(size_what.find("multiple of bs (4096 B)"), std::string::npos) << size_what;
  EXPECT_EQ(error_of({"scenario.runtime_us=-1"}).first, "$.runtime_us");
  // The fields belong to the microbenchmark.
  EXPECT_EQ(error_of({"scenario.runtime_us=10"}, "gather-gpu").first, "$.runtime_us");
  EXPECT_EQ(error_of({"scenario.time_based=true"}, "kv-cache-gpu").first, "$.time_based");
}

// Strategy names come from one table (sim/core/algo/strategy_names.h). A config
// that reaches the workload without the declaration's check (built in code)
// with a misspelt name is refused by name, where it used to run as
// warp_batch; io_agents refuses the policies it fixes, with the check's
// message and the field's path.
TEST(ConfigErrors, UnknownStrategyNamesNeverFallBackToADefault) {
  const RunConfig valid = test::scenario("randread-4k");
  auto with = [&](const std::string& field, const std::string& value) {
    RunConfig config = valid;
    nlohmann::json values = config.scenario.params.json();
    values[field] = value;
    config.scenario.params = ParamValues(values);
    return config;
  };
  auto error_of = [](const RunConfig& config) -> std::pair<std::string, std::string> {
    try {
      strategy_plan(config);
    } catch (const ConfigError& e) {
      return {e.path(), e.problem()};
    }
    return {"no error", ""};
  };
  EXPECT_EQ(strategy_plan(valid).name, "warp_batch");
  const auto [path, problem] = error_of(with("strategy", "warp_batchh"));
  EXPECT_EQ(path, "$.strategy");
  EXPECT_EQ(problem,
            "expected one of: warp_batch, all_threads, bam_ticket, io_agents, per_warp_queue");
  EXPECT_EQ(error_of(with("strategy", "")).first, "$.strategy");
  EXPECT_EQ(error_of(with("queue_mapping", "per_block")).first, "$.queue_mapping");
  EXPECT_EQ(error_of(with("cid_scheme", "random")).first, "$.cid_scheme");
  EXPECT_EQ(error_of(with("submission", "batch")).first, "$.submission");
  EXPECT_EQ(error_of(with("completion", "interrupt")).first, "$.completion");
  EXPECT_EQ(error_of(with("ssd_mapping", "mirror")).first, "$.ssd_mapping");
  // check (check_workload) refuses it too, before anything runs.
  EXPECT_THROW(check_workload(with("strategy", "warp_batchh")), ConfigError);

  auto check_error =
      [](const std::vector<std::string>& sets) -> std::pair<std::string, std::string> {
    try {
      test::scenario("randread-4k", sets);
    } catch (const ConfigError& e) {
      return {e.path(), e.problem()};
    }
    return {"no error", ""};
  };
  EXPECT_EQ(
      check_error({"scenario.strategy=\"io_agents\"", "scenario.completion=\"cq_scan\""}),
      (std::pair<std::string, std::string>{
          "$.completion", "io_agents fixes it: agents own their queues; leave it \"strategy\""}));
  EXPECT_EQ(check_error({"scenario.strategy=\"io_agents\"", "scenario.cid_scheme=\"counter\""}),
            (std::pair<std::string, std::string>{
                "$.cid_scheme", "io_agents uses CID = SQ slot (an agent owns its queues)"}));
  EXPECT_EQ(check_error({"scenario.strategy=\"warp_batchh\""}).first, "$.strategy");
}

TEST(ConfigErrors, KvContextDistributionFieldsAreChecked) {
  auto problem = [](std::vector<std::string> overrides) -> std::string {
    try {
      test::scenario("kv-cache-gpu", overrides);
    } catch (const ConfigError& e) {
      return e.path() + ": " + e.problem();
    }
    return "accepted";
  };
  EXPECT_EQ(problem({"scenario.context_sigma=1"}),
            "$.context_sigma: applies to context_distribution = lognormal only (it is fixed)");
  EXPECT_EQ(problem({"scenario.context_distribution=uniform", "scenario.context_min_tokens=500",
                     "scenario.context_max_tokens=400"}),
            "$.context_max_tokens: below context_min_tokens = 500");
  EXPECT_EQ(problem({"scenario.context_distribution=histogram"}),
            "$.context_histogram_tokens: a histogram needs at least one context length");
  EXPECT_EQ(problem({"scenario.context_distribution=histogram",
                     "scenario.context_histogram_tokens=[16,32]",
                     "scenario.context_histogram_weights=[1]"}),
            "$.context_histogram_weights: one weight per context_histogram_tokens entry: 2 "
            "expected");
  EXPECT_EQ(
      problem({"scenario.context_distribution=histogram", "scenario.context_histogram_tokens=[16]",
               "scenario.context_histogram_weights=[0]"}),
      "$.context_histogram_weights: the weights must not all be 0");
}

TEST(ConfigErrors, KvTraceFilesAreChecked) {
  auto problem = [](const std::string& field, const std::string& text,
                    std::vector<std::string> more) -> std::string {
    const std::string path = ::testing::TempDir() + "/gpunvme-bad-trace.csv";
    std::ofstream(path) << text;
    more.push_back("scenario." + field + "=\"" + path + "\"");
    try {
      test::scenario("kv-cache-gpu", kv_small(more));
    } catch (const ConfigError& e) {
      if (e.path().empty()) return e.problem();
      return (e.file() == path ? "" : e.file() + ": ") + e.path() + " = " + e.value() + ": " +
             e.problem();
    }
    return "accepted";
  };
  const std::vector<std::string> sparse{"scenario.policy=sparse"};
  const std::string header = "step,layer,fraction,miss_rate\n";
  EXPECT_EQ(problem("sparse_trace", "step,layer,fraction\n0,0,1\n", sparse),
            "line 1 = step,layer,fraction: expected the header step,layer,fraction,miss_rate");
  EXPECT_EQ(problem("sparse_trace", header + "0,0,1,0\n0,1,1.5,0\n", sparse),
            "line 3, fraction = 1.5: expected the fraction of tokens fetched, above 0 and at "
            "most 1");
  EXPECT_EQ(problem("sparse_trace", header + "0,4,1,0\n", sparse),
            "line 2, layer = 4: expected a layer of the model, 0 to 3");
  EXPECT_EQ(problem("sparse_trace", header + "0,0,1,x\n", sparse),
            "line 2, miss_rate = x: expected the fraction of the selected tokens missed, 0 to 1");
  EXPECT_EQ(problem("sparse_trace", header + "0,0,1,0\n0,1,1,0\n0,2,1,0\n", sparse),
            "step 0, layer 3 = missing: every layer (0 to 3) of every step 0 to 0 needs a line");
  EXPECT_EQ(problem("sparse_trace", header + "0,0,1,0,7\n", sparse),
            "line 2 = 0,0,1,0,7: expected 4 fields: step,layer,fraction,miss_rate");
  const std::string full = header + "0,0,1,0\n0,1,1,0\n0,2,1,0\n0,3,1,0\n";
  EXPECT_NE(
      problem("sparse_trace", full, {"scenario.policy=sparse", "scenario.sparse_fraction=0.3"})
          .find("$.sparse_fraction = 0.3: sparse_trace gives it per step and layer"),
      std::string::npos);
  EXPECT_NE(problem("sparse_trace", full, {}).find("applies to policy = sparse only"),
            std::string::npos);
  const std::vector<std::string> reuse{"scenario.policy=reuse"};
  const std::string sessions = "session,arrival_s,turns,think_s,context_tokens,turn_tokens\n";
  EXPECT_EQ(problem("session_trace", sessions + "a,0,0,10,100,10\n", reuse),
            "line 2, turns = 0: expected turns, 1 to 1000000");
  EXPECT_EQ(problem("session_trace", sessions + "a,0,1,10,100,10\na,5,1,10,100,10\n", reuse),
            "line 3, session = a: expected a name not used before");
  EXPECT_EQ(problem("session_trace", sessions + "a,-1,1,10,100,10\n", reuse),
            "line 2, arrival_s = -1: expected seconds, 0 to 1e9");
  EXPECT_EQ(problem("session_trace", sessions, reuse), "no data lines after the header");
}

}  // namespace
}  // namespace gpunvme
