// Budget checks against hand-made results: limits computed here from the
// tolerance rule, verdicts, the failure table, re-baselining and bad files.
#include "sim/frontend/budgets/budgets.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/kernel/params/config_error.h"

namespace gpunvme::budgets {
namespace {

using nlohmann::json;

// A budget file in the test's temporary folder; the scenario is the shipped one.
class BudgetFile {
 public:
  explicit BudgetFile(json fields) {
    path_ = ::testing::TempDir() + "gpunvme_budget_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
    json doc = {{"schema", "gpunvme.budget/1"},
                {"scenario", std::string(GPUNVME_SOURCE_DIR) + "/scenarios/randread-4k.json"}};
    doc.update(fields);
    std::ofstream(path_) << doc.dump();
  }
  ~BudgetFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

json result_with(double iops, double e2e_p50, double e2e_p99) {
  return {{"summary", {{"iops", iops}, {"traversal_time_ns", 5000.0}}},
          {"stages",
           {{"end_to_end", {{"count", 10}, {"p50", e2e_p50}, {"p99", e2e_p99}}},
            {"doorbell", {{"count", 10}, {"p50", 800.0}, {"p99", 800.0}}},
            {"unused", {{"count", 0}, {"p50", 0.0}, {"p99", 0.0}}}}}};
}

TEST(Budgets, LimitsFollowTheToleranceRule) {
  BudgetFile file(
      {{"tolerance", {{"relative", 0.1}, {"absolute_ns", 25}}},
       {"floors", {{"summary.iops", 1000.0}}},
       {"ceilings", {{"summary.traversal_time_ns", 4000.0}}},
       {"latency_ns",
        {{"end_to_end", {{"p50", 1000.0}, {"p99", 2000.0}}}, {"doorbell", {{"p50", 100.0}}}}}});
  const Budget b = load_budget(file.path());
  const auto checks = check_budget(b, result_with(905.0, 1099.0, 2300.0));
  ASSERT_EQ(checks.size(), 5u);
  auto find = [&](const std::string& metric) {
    for (const Check& c : checks) {
      if (c.metric == metric) return c;
    }
    ADD_FAILURE() << "no check " << metric;
    return Check{};
  };
  // Floor: 1000 * (1 - 0.1) = 900 <= 905.
  EXPECT_DOUBLE_EQ(find("summary.iops").limit, 900.0);
  EXPECT_TRUE(find("summary.iops").ok);
  // Ceiling on a summary figure: max(4400, 4025) = 4400 < 5000.
  EXPECT_DOUBLE_EQ(find("summary.traversal_time_ns").limit, 4400.0);
  EXPECT_FALSE(find("summary.traversal_time_ns").ok);
  EXPECT_DOUBLE_EQ(find("summary.traversal_time_ns").over_budget(), 0.25);
  // Percentile ceilings: max(1100, 1025) = 1100 >= 1099; max(2200, 2025) < 2300.
  EXPECT_TRUE(find("stages.end_to_end.p50").ok);
  EXPECT_FALSE(find("stages.end_to_end.p99").ok);
  EXPECT_DOUBLE_EQ(find("stages.end_to_end.p99").over_budget(), 0.15);
  // Small stage: the absolute slack dominates, max(110, 125) = 125 < 800.
  EXPECT_DOUBLE_EQ(find("stages.doorbell.p50").limit, 125.0);
  EXPECT_FALSE(find("stages.doorbell.p50").ok);

  const std::string table = check_table(checks, true);
  EXPECT_NE(table.find("stages.end_to_end.p99"), std::string::npos);
  EXPECT_NE(table.find("+15.0 %"), std::string::npos);
  EXPECT_NE(table.find("EXCEEDED"), std::string::npos);
  EXPECT_EQ(table.find("summary.iops"), std::string::npos);  // within budget
}

TEST(Budgets, MissingStagesAndFiguresFail) {
  BudgetFile file({{"floors", {{"summary.tokens_per_s", 1.0}}},
                   {"latency_ns", {{"unused", {{"p99", 1.0}}}, {"doorbell", {{"p90", 1.0}}}}}});
  const auto checks = check_budget(load_budget(file.path()), result_with(1, 1, 1));
  ASSERT_EQ(checks.size(), 3u);
  for (const Check& c : checks) {
    EXPECT_FALSE(c.ok) << c.metric;
    EXPECT_FALSE(c.note.empty()) << c.metric;
  }
  EXPECT_NE(check_table(checks, true).find("MISSING"), std::string::npos);
}

TEST(Budgets, RebaselineKeepsSettingsAndTakesTheResult) {
  BudgetFile file({{"set", {"scenario.ios=100"}},
                   {"seed", 3},
                   {"tolerance", {{"relative", 0.05}}},
                   {"latency_ns", {{"end_to_end", {{"p99", 1.0}}}}}});
  const Budget b = load_budget(file.path());
  EXPECT_EQ(b.raw.seed, 3u);
  EXPECT_EQ(b.raw.scenario["ios"], 100);
  const json doc = json::parse(rebaseline(b, result_with(123456.7, 1000.04, 2345.67)).dump());
  EXPECT_EQ(doc["seed"], 3);
  EXPECT_EQ(doc["set"], json({"scenario.ios=100"}));
  EXPECT_DOUBLE_EQ(doc["tolerance"]["relative"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(doc["tolerance"]["absolute_ns"].get<double>(), 25.0);
  // Four significant digits for floors and ceilings, 0.1 ns for percentiles.
  EXPECT_DOUBLE_EQ(doc["floors"]["summary.iops"].get<double>(), 123500.0);
  EXPECT_DOUBLE_EQ(doc["ceilings"]["summary.traversal_time_ns"].get<double>(), 5000.0);
  EXPECT_DOUBLE_EQ(doc["latency_ns"]["end_to_end"]["p99"].get<double>(), 2345.7);
  EXPECT_FALSE(doc["latency_ns"]["end_to_end"].contains("p50"));  // the file's keys only
  EXPECT_TRUE(doc["latency_ns"].contains("doorbell"));
  EXPECT_FALSE(doc["latency_ns"].contains("unused"));  // no samples
  // The re-baselined budget passes on the result it came from.
  BudgetFile again(doc);
  for (const Check& c :
       check_budget(load_budget(again.path()), result_with(123456.7, 1000.04, 2345.67))) {
    EXPECT_TRUE(c.ok) << c.metric;
  }
}

TEST(Budgets, BadFilesNameTheField) {
  struct Case {
    json fields;
    std::string path;
  };
  const Case cases[] = {
      {{{"floor", json::object()}}, "$.floor"},
      {{{"schema", "gpunvme.budget/0"}}, "$.schema"},
      {{{"scenario", 7}}, "$.scenario"},
      {{{"tolerance", {{"relative", 1.0}}}}, "$.tolerance.relative"},
      {{{"tolerance", {{"slack", 1.0}}}}, "$.tolerance.slack"},
      {{{"latency_ns", {{"end_to_end", {{"p99", "fast"}}}}}}, "$.latency_ns.end_to_end.p99"},
      {{{"latency_ns", {{"end_to_end", json::object()}}}}, "$.latency_ns.end_to_end"},
      {{{"floors", {{"summary.iops", -1}}}}, "$.floors.summary.iops"},
      {{{"set", {3}}}, "$.set[0]"},
      {{{"seed", -2}}, "$.seed"},
  };
  for (const Case& c : cases) {
    BudgetFile file(c.fields);
    try {
      load_budget(file.path());
      ADD_FAILURE() << "accepted " << c.fields.dump();
    } catch (const ConfigError& e) {
      EXPECT_EQ(e.file(), file.path()) << c.fields.dump();
      EXPECT_EQ(e.path(), c.path) << c.fields.dump() << ": " << e.what();
    }
  }
}

TEST(Budgets, TheTableShowsAMetBoundAsItsMarginAndAnExceededOneAsOver) {
  // over_budget is signed, positive = worse: a floor of 1000 met at 1002 is
  // -0.002, a ceiling of 1000 missed at 1150 is +0.15.
  EXPECT_EQ(budget_margin_text(-0.002), "0.2 % inside");
  EXPECT_EQ(budget_margin_text(0.15), "+15.0 % over");
  EXPECT_EQ(budget_margin_text(-0.0004), "0.0 % inside");
  EXPECT_EQ(budget_margin_text(0.0004), "0.0 % inside");

  Check met_floor;
  met_floor.metric = "summary.iops";
  met_floor.is_floor = true;
  met_floor.budget = 1000;
  met_floor.limit = 900;
  met_floor.measured = 1002;
  met_floor.ok = true;
  const std::string table = check_table({met_floor}, false);
  EXPECT_NE(table.find("vs budget"), std::string::npos) << table;
  EXPECT_NE(table.find("0.2 % inside"), std::string::npos) << table;
  EXPECT_EQ(table.find("over"), std::string::npos) << table;
  EXPECT_EQ(table.find("-0.2"), std::string::npos) << table;
}

}  // namespace
}  // namespace gpunvme::budgets
