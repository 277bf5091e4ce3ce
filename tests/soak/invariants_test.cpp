// Each result invariant holds on a real result and fires on a result broken
// in exactly its way, so that no check can pass by never looking.
#include "sim/system/run/invariants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sim/system/run/run.h"

namespace gpunvme::invariants {
namespace {

std::string source(const std::string& relative) {
  return std::string(GPUNVME_SOURCE_DIR) + "/" + relative;
}

// A small real run: 200 mixed reads and writes on the GDS path.
const nlohmann::json& real_result() {
  static const nlohmann::json result = run(load_config(
      source("configs/topologies/default.json"), source("scenarios/randread-4k-gds.json"),
      {"scenario.ios=200", "scenario.threads=64", "scenario.rw=\"randrw\""}, 3));
  return result;
}

bool fires(const std::vector<Violation>& violations, const std::string& invariant) {
  for (const Violation& v : violations) {
    if (v.invariant == invariant) return true;
  }
  return false;
}

// Names of the invariants that fired, for failure messages.
std::string names(const std::vector<Violation>& violations) { return describe(violations); }

nlohmann::json& first_ssd(nlohmann::json& result) { return result["ssds"].begin().value(); }

nlohmann::json& first_ssd_engine(nlohmann::json& result) {
  for (nlohmann::json& engine : result["pcie"]["dma_engines"]) {
    if (engine["kind"] == "ssd_data_dma") return engine;
  }
  throw std::logic_error("no ssd_data_dma engine in the result");
}

TEST(Invariants, RealResultKeepsEveryInvariant) {
  const auto violations = check(real_result());
  EXPECT_TRUE(violations.empty()) << names(violations);
  EXPECT_GT(real_result()["summary"]["writes"].get<std::uint64_t>(), 0u);
}

TEST(Invariants, IoAccountingWithSubmittedCount) {
  nlohmann::json r = real_result();
  const auto ios = r["summary"]["ios"].get<std::uint64_t>();
  const auto errors = r["summary"]["errors"].get<std::uint64_t>();
  EXPECT_EQ(r["summary"]["submitted"].get<std::uint64_t>(), ios + errors);
  EXPECT_FALSE(fires(check(r), "io_accounting")) << names(check(r));
  r["summary"]["submitted"] = ios + errors + 1;  // one I/O neither completed nor failed
  EXPECT_TRUE(fires(check(r), "io_accounting"));
  r["summary"].erase("submitted");  // a result without the count cannot pass
  EXPECT_TRUE(fires(check(r), "io_accounting"));
}

TEST(Invariants, IoAccountingAgainstConfiguredCount) {
  // One I/O fewer submitted, completed and counted than the 200 asked for.
  nlohmann::json r = real_result();
  r["summary"]["ios"] = r["summary"]["ios"].get<std::uint64_t>() - 1;
  r["summary"]["submitted"] = r["summary"]["submitted"].get<std::uint64_t>() - 1;
  EXPECT_TRUE(fires(check(r), "io_accounting"));
  // A time-based run has no configured count to hold it to.
  r["config"]["scenario"]["time_based"] = true;
  EXPECT_FALSE(fires(check(r), "io_accounting"));
}

TEST(Invariants, CidConflicts) {
  nlohmann::json r = real_result();
  first_ssd(r)["cid_conflicts"] = 2;
  EXPECT_TRUE(fires(check(r), "cid_conflicts"));
  first_ssd(r).erase("cid_conflicts");  // a result without the count cannot pass
  EXPECT_TRUE(fires(check(r), "cid_conflicts"));
}

TEST(Invariants, BytesDeliveredOnce) {
  nlohmann::json r = real_result();
  nlohmann::json& engine = first_ssd_engine(r);
  engine["bytes"] = engine["bytes"].get<std::uint64_t>() + 4096;  // one block moved twice
  EXPECT_TRUE(fires(check(r), "bytes_delivered_once"));
  r = real_result();
  first_ssd_engine(r)["bytes"] = first_ssd_engine(r)["bytes"].get<std::uint64_t>() - 4096;
  EXPECT_TRUE(fires(check(r), "bytes_delivered_once"));  // one block never delivered
  // With failed I/Os, less may move, never more than the I/Os' bytes and the writes.
  r["summary"]["errors"] = 1;
  r["summary"]["submitted"] = r["summary"]["ios"].get<std::uint64_t>() + 1;
  EXPECT_FALSE(fires(check(r), "bytes_delivered_once")) << names(check(r));
  std::uint64_t written = 0;
  for (const auto& ssd : r["ssds"]) written += ssd["bytes_written"].get<std::uint64_t>();
  first_ssd_engine(r)["bytes"] = r["summary"]["bytes"].get<std::uint64_t>() + written + 1;
  EXPECT_TRUE(fires(check(r), "bytes_delivered_once"));
}

TEST(Invariants, LittlesLaw) {
  nlohmann::json r = real_result();
  const double in_flight = r["summary"]["mean_in_flight"].get<double>();
  ASSERT_GT(in_flight, 0.0);
  // One I/O in 200 timed but not counted moves the product by 0.5 %.
  r["summary"]["mean_in_flight"] = in_flight * 1.005;
  EXPECT_TRUE(fires(check(r), "littles_law"));
  r = real_result();
  r["summary"]["latency_ns"]["mean"] = r["summary"]["latency_ns"]["mean"].get<double>() * 0.995;
  EXPECT_TRUE(fires(check(r), "littles_law"));
  r = real_result();
  r["summary"].erase("mean_in_flight");
  EXPECT_TRUE(fires(check(r), "littles_law"));
}

TEST(Invariants, UtilizationRange) {
  nlohmann::json r = real_result();
  bool set = false;
  for (nlohmann::json& link : r["pcie"]["links"]) {
    if (link.contains("utilization")) {
      link["utilization"] = 1.25;
      set = true;
      break;
    }
  }
  ASSERT_TRUE(set);
  EXPECT_TRUE(fires(check(r), "utilization_range"));
  // Fractions nested below a utilization key are held to it too.
  r = real_result();
  r["cpu"]["utilization"]["per_core"] = {0.5, 1.0000001};
  EXPECT_TRUE(fires(check(r), "utilization_range"));
  r = real_result();
  r["cpu"]["cache_hit_rate"] = 2.0;
  EXPECT_TRUE(fires(check(r), "utilization_range"));
}

TEST(Invariants, FiniteNonNegative) {
  for (const double bad :
       {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(), -0.5}) {
    nlohmann::json r = real_result();
    first_ssd(r)["fetch_wait_ns"]["p99"] = bad;
    const auto violations = check(r);
    ASSERT_TRUE(fires(violations, "finite_non_negative")) << bad;
    EXPECT_NE(names(violations).find("fetch_wait_ns.p99"), std::string::npos) << names(violations);
  }
  nlohmann::json r = real_result();
  r["gpus"]["gpu0"]["op_profile"]["atomic"]["calls"] = -3;  // a negative integer
  EXPECT_TRUE(fires(check(r), "finite_non_negative"));
  // The configuration may hold a negative sentinel, never a NaN.
  r = real_result();
  r["config"]["scenario"]["bfs_source"] = -1;
  EXPECT_FALSE(fires(check(r), "finite_non_negative")) << names(check(r));
  r["config"]["scenario"]["span_gib"] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(fires(check(r), "finite_non_negative"));
}

}  // namespace
}  // namespace gpunvme::invariants
