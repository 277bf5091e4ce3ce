// What gpunvme validate prints and plots from a correlation report, on small
// synthetic postdiction reports (no simulation).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "sim/frontend/validate/validate.h"

namespace gpunvme::validate {
namespace {

nlohmann::json metric_summary(std::size_t cases, const nlohmann::json& r) {
  return {{"unit", "ns"},
          {"calibrated", false},
          {"doc", ""},
          {"cases", cases},
          {"mean_abs_error_pct", 5.0},
          {"max_abs_error_pct", 8.0},
          {"aggregate_error_pct", 1.0},
          {"pearson_r", r},
          {"within_tolerance", true}};
}

// Cases with measured and simulated IOPS and one latency each.
nlohmann::json postdiction_report(std::size_t cases) {
  nlohmann::json report = {
      {"mode", "postdiction"},
      {"device", {{"name", "Test GPU"}}},
      {"date_measured", "2026-01-01"},
      {"tolerance_pct", 10.0},
      {"metrics",
       {{"iops", metric_summary(cases, 0.9)}, {"doorbell_ns", metric_summary(cases, 0.8)}}},
      {"cases", nlohmann::json::array()}};
  report["metrics"]["iops"]["unit"] = "IO/s";
  report["metrics"]["iops"]["calibrated"] = true;
  for (std::size_t i = 0; i < cases; ++i) {
    const double scale = static_cast<double>(i + 1);
    report["cases"].push_back(
        {{"strategy", "warp_batch"},
         {"warps", 8 * (i + 1)},
         {"metrics",
          {{"iops", {{"measured", 100000.0 * scale}, {"simulated", 110000.0 * scale}}},
           {"doorbell_ns", {{"measured", 300.0 * scale}, {"simulated", 280.0 * scale}}}}}});
  }
  return report;
}

std::size_t count(const std::string& text, const std::regex& pattern) {
  return static_cast<std::size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), pattern), {}));
}

TEST(ValidateOutput, CorrelationNeedsThreeCases) {
  EXPECT_EQ(correlation_text(metric_summary(2, 1.0)), "r omitted (2 cases; needs 3)");
  EXPECT_EQ(correlation_text(metric_summary(3, 0.5)), "r 0.500");
  EXPECT_EQ(correlation_text(metric_summary(3, nullptr)), "r n/a");

  const std::string two = report_table(postdiction_report(2));
  EXPECT_EQ(two.find("1.000"), std::string::npos) << two;
  EXPECT_EQ(two.find("0.900"), std::string::npos) << two;
  EXPECT_NE(two.find("fewer than 3 cases"), std::string::npos) << two;

  const std::string three = report_table(postdiction_report(3));
  EXPECT_NE(three.find("0.900"), std::string::npos) << three;
  EXPECT_NE(three.find("0.800"), std::string::npos) << three;
  EXPECT_EQ(three.find("fewer than"), std::string::npos) << three;
}

// A per-instance report's table says that its figures are the pooled view's
// and prints each instance's own MAE; a pooled report's table does not.
TEST(ValidateOutput, PerInstanceTableNamesBothViews) {
  nlohmann::json report = postdiction_report(3);
  EXPECT_EQ(report_table(report).find("per-instance"), std::string::npos);
  report["per_instance_summary"] = {
      {"instances",
       {{"h100-i", {{"cases", 2}, {"mean_abs_error_pct", 4.0}, {"max_abs_error_pct", 6.0}}},
        {"h100-j", {{"cases", 2}, {"mean_abs_error_pct", 8.0}, {"max_abs_error_pct", 9.0}}}}},
      {"case_instance_pairs", 4},
      {"mean_abs_error_pct", 6.0}};
  const std::string table = report_table(report);
  EXPECT_NE(table.find("the median of the instances' predictions with the pooled measured median"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("IOPS MAE 6.0 % over 4 case-instance pairs (h100-i 4.0 %, h100-j 8.0 %)"),
            std::string::npos)
      << table;
}

TEST(ValidateOutput, PostdictionPlotShowsIopsBesideTheLatencies) {
  const std::string svg = correlation_svg(postdiction_report(3));
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // Three points per metric, each titled with its metric and figures.
  EXPECT_EQ(count(svg, std::regex("<title>iops warp_batch \\d+ warps: measured \\d+, "
                                  "simulated \\d+</title>")),
            3u);
  EXPECT_NE(svg.find("<title>iops warp_batch 16 warps: measured 200000, simulated 220000"),
            std::string::npos)
      << svg;
  EXPECT_EQ(count(svg, std::regex("<title>doorbell_ns warp_batch")), 3u);
  EXPECT_NE(svg.find("simulated (IOPS)"), std::string::npos);
  EXPECT_NE(svg.find("measured on hardware (ns)"), std::string::npos);
  EXPECT_NE(svg.find(">MAE 5.0%, r 0.900<"), std::string::npos) << svg;
  // Different colours for the two metrics' legend dots.
  EXPECT_EQ(count(svg, std::regex("r=\"5\" fill=\"#1f77b4\"")), 1u);
  EXPECT_EQ(count(svg, std::regex("r=\"5\" fill=\"#d62728\"")), 1u);
}

TEST(ValidateOutput, PlotOfTwoCasesSaysWhyRIsLeftOut) {
  const std::string svg = correlation_svg(postdiction_report(2));
  EXPECT_NE(svg.find("r omitted (2 cases; needs 3)"), std::string::npos) << svg;
}

}  // namespace
}  // namespace gpunvme::validate
