// Several tenants in one run: Jain's index and the token bucket against hand-worked
// cases, a rate-limited tenant's admitted I/Os, weighted round robin's shares under
// saturation against the weights, and a tenant alone giving the numbers of the same
// workload run on its own.
#include "sim/system/run/tenants.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/system/run/run.h"
#include "sim/system/workload/token_bucket.h"

namespace gpunvme {
namespace {

std::string topology_file(const std::string& name) {
  return std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + name + ".json";
}

RunConfig tenants_config(const nlohmann::json& doc, const std::string& topology = "default",
                         std::uint64_t seed = 1) {
  RawConfig raw = load_raw_config(topology_file(topology), default_scenario_file());
  raw.scenario = doc;
  raw.scenario_file = "tenants.json";
  raw.seed = seed;
  return resolve_config(raw);
}

nlohmann::json gpu_reads(const std::string& gpu, int threads, int ios, int queues) {
  return {{"kind", "microbenchmark"}, {"rw", "randread"},     {"bs", 4096}, {"iodepth", 1},
          {"threads", threads},       {"ios", ios},           {"gpu", gpu}, {"ssds", {"ssd0"}},
          {"queues", queues},         {"queue_entries", 1024}};
}

TEST(Tenants, JainIndexOfHandWorkedCases) {
  EXPECT_DOUBLE_EQ(jain_index({5.0, 5.0, 5.0, 5.0}), 1.0);
  EXPECT_DOUBLE_EQ(jain_index({1.0, 0.0, 0.0, 0.0}), 0.25);
  // (1 + 2 + 3)^2 / (3 (1 + 4 + 9)) = 36 / 42.
  EXPECT_DOUBLE_EQ(jain_index({1.0, 2.0, 3.0}), 36.0 / 42.0);
  EXPECT_DOUBLE_EQ(jain_index({}), 1.0);
}

TEST(Tenants, TokenBucketAdmitsItsDepthThenOnePerInterval) {
  // 1000 tokens/s (one per ms), depth 5, starting full: 100 requests waiting
  // from t = 0 are admitted 5 at 0, then one each ms: by 10 ms, 5 + 10 = 15.
  TokenBucket bucket(1000.0, 5.0);
  const Picoseconds ms = 1'000'000'000;
  Picoseconds t = 0;
  int admitted_by_10ms = 0;
  for (int i = 0; i < 100; ++i) {
    t = bucket.ready_at(t, 1.0);
    bucket.take(t, 1.0);
    if (t <= 10 * ms) ++admitted_by_10ms;
  }
  EXPECT_EQ(admitted_by_10ms, 15);
  // A bucket refills to its depth, no further: after 1 s idle, again 5 at once.
  const Picoseconds later = t + 1000 * ms;
  int at_once = 0;
  while (bucket.ready_at(later, 1.0) == later) {
    bucket.take(later, 1.0);
    ++at_once;
  }
  EXPECT_EQ(at_once, 5);
}

TEST(Tenants, RateLimitedTenantIsPacedByItsBucket) {
  // 2000 I/Os at 200 K IOPS with a bucket of 100: 100 at the start, the other
  // 1900 one every 5 us, so the last is admitted 9.5 ms after the first and
  // the tenant's throughput is at most 2000 / 9.5 ms = 210.5 K IOPS.
  nlohmann::json doc = {{"name", "paced"},
                        {"tenants",
                         {{{"name", "gpu"},
                           {"rate_iops", 200000},
                           {"burst_ios", 100},
                           {"scenario", gpu_reads("gpu0", 256, 2000, 4)}}}}};
  const nlohmann::json r = run(tenants_config(doc));
  const nlohmann::json& t = r["tenants"][0];
  EXPECT_EQ(t["summary"]["ios"].get<std::uint64_t>(), 2000u);
  EXPECT_GE(t["summary"]["io_time_ns"].get<double>(), 9.5e6);
  EXPECT_LE(t["summary"]["iops"].get<double>(), 2000 / 9.5e-3);
  EXPECT_GT(t["summary"]["iops"].get<double>(), 0.95 * 2000 / 9.5e-3);
  EXPECT_EQ(t["throttle"]["wait_ns"]["count"].get<std::uint64_t>(), 2000u);
  EXPECT_GT(t["throttle"]["delayed_ios"].get<std::uint64_t>(), 1800u);
}

// Two identical GPU tenants saturating one SSD, high against low priority:
// the ratio of the I/Os each completed.
double high_over_low(const std::string& arbitration) {
  nlohmann::json hi = gpu_reads("gpu0", 512, 1000000, 8);
  nlohmann::json lo = gpu_reads("gpu1", 512, 1000000, 8);
  for (nlohmann::json* s : {&hi, &lo}) {
    (*s)["runtime_us"] = 3000;
    (*s)["time_based"] = true;
  }
  const bool wrr = arbitration == "weighted_round_robin";
  nlohmann::json doc = {
      {"name", "wrr"},
      {"arbitration", arbitration},
      {"high_weight", 3},
      {"low_weight", 1},
      {"tenants",
       {{{"name", "hi"}, {"priority", wrr ? "high" : "medium"}, {"scenario", hi}},
        {{"name", "lo"}, {"priority", wrr ? "low" : "medium"}, {"scenario", lo}}}}};
  const nlohmann::json r = run(tenants_config(doc, "two-gpus-shared-ssds"));
  return r["tenants"][0]["summary"]["ios"].get<double>() /
         r["tenants"][1]["summary"]["ios"].get<double>();
}

TEST(Tenants, WeightedRoundRobinSharesFollowTheWeightsUnderSaturation) {
  // Round robin serves the two alike; weighted round robin at 3 : 1 gives the
  // high class more, and never more than its weight allows (both closed-loop
  // tenants keep their SQs backlogged only part of the time, so the ratio
  // falls short of 3).
  const double rr = high_over_low("round_robin");
  EXPECT_GT(rr, 0.9);
  EXPECT_LT(rr, 1.1);
  const double wrr = high_over_low("weighted_round_robin");
  EXPECT_GT(wrr, 1.8);
  EXPECT_LE(wrr, 3.05);
}

nlohmann::json without_run_fields(nlohmann::json summary) {
  for (const char* key : {"events", "events_by_kind", "wall_time_s"}) summary.erase(key);
  return summary;
}

TEST(Tenants, ATenantAloneGivesTheNumbersOfItsWorkloadRunAlone) {
  for (const char* name : {"randread-4k", "randread-4k-gds"}) {
    SCOPED_TRACE(name);
    const std::string file = std::string(GPUNVME_SOURCE_DIR) + "/scenarios/" + name + ".json";
    nlohmann::json scenario = read_json_file(file);
    scenario["ios"] = 4000;
    scenario.erase("name");
    scenario.erase("doc");
    RawConfig single = load_raw_config(default_topology_file(), file);
    single.scenario = scenario;
    const nlohmann::json alone = run(resolve_config(single));
    nlohmann::json doc = {{"name", "one"},
                          {"tenants", {{{"name", "only"}, {"scenario", scenario}}}}};
    const nlohmann::json shared = run(tenants_config(doc));
    const nlohmann::json& t = shared["tenants"][0];
    EXPECT_EQ(without_run_fields(t["summary"]), without_run_fields(alone["summary"]));
    EXPECT_EQ(t["fio"], alone["fio"]);
    nlohmann::json stages = alone["stages"];
    stages.erase("ssd_fetch_wait");
    stages.erase("ssd_service");
    EXPECT_EQ(t["stages"], stages);
    EXPECT_EQ(shared["ssds"], alone["ssds"]);
  }
}

TEST(Tenants, FairnessIsJainsIndexOverThroughputPerWeight) {
  nlohmann::json doc =
      read_json_file(std::string(GPUNVME_SOURCE_DIR) + "/scenarios/tenants-gpu-and-host.json");
  doc["tenants"][0]["scenario"]["ios"] = 1000;
  doc["tenants"][1]["scenario"]["ios"] = 2000;
  doc["tenants"][1]["weight"] = 2.0;
  const nlohmann::json r = run(tenants_config(doc));
  const double x0 = r["tenants"][0]["summary"]["iops"].get<double>();
  const double x1 = r["tenants"][1]["summary"]["iops"].get<double>() / 2.0;
  EXPECT_NEAR(r["fairness"]["jain_index"].get<double>(),
              (x0 + x1) * (x0 + x1) / (2 * (x0 * x0 + x1 * x1)), 1e-8);
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), 3000u);
  EXPECT_EQ(r["tenants"][0]["summary"]["path"], "gds");
  EXPECT_EQ(r["tenants"][1]["summary"]["path"], "gpu_initiated");
  const double p0 = r["tenants"][0]["summary"]["latency_ns"]["p99"].get<double>();
  const double p1 = r["tenants"][1]["summary"]["latency_ns"]["p99"].get<double>();
  EXPECT_DOUBLE_EQ(r["fairness"]["max_p99_ns"].get<double>(), std::max(p0, p1));
  EXPECT_DOUBLE_EQ(r["fairness"]["min_p99_ns"].get<double>(), std::min(p0, p1));
}

}  // namespace
}  // namespace gpunvme
