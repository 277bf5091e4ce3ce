// The software target's copy cost under GPU warps polling its CQ lines
// (nvme_ssd copy_op_line_poller_ns in configs/topologies/hw-soft-controller.json)
// against its measurement, configs/measurements/hw-controller-under-polls-h100-2026-11-26.json:
// controller-only runs (no strategy) with W warps polling the 32 CQ rings'
// current lines while the target writes them. Calibration: the rows whose
// batches make one copy (adjacent buffers); prediction: the rows whose
// batches make one copy per command (buffers apart), 8 to 64 per batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace gpunvme {
namespace {

const std::string kRoot = std::string(GPUNVME_SOURCE_DIR) + "/";
constexpr double kLines = 32;  // one polled line per CQ ring, 32 rings

nlohmann::json load(const std::string& path) {
  std::ifstream in(kRoot + path);
  EXPECT_TRUE(in) << path;
  return nlohmann::json::parse(in);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Per row with pollers: its batch time, that run's batch time at the same
// depth without pollers, its copies per batch and its pollers.
struct Row {
  double batch_ns, base_ns, copies, pollers;
  bool scattered;
};

std::vector<Row> rows() {
  const nlohmann::json file =
      load("configs/measurements/hw-controller-under-polls-h100-2026-11-26.json");
  std::map<std::tuple<std::string, int, bool>, double> base;
  const auto run_of = [](const nlohmann::json& c) {
    const std::string f = c.at("run_file");
    return f.substr(f.size() - 2);  // r1, r2
  };
  for (const nlohmann::json& c : file.at("cases")) {
    if (c.at("host_pollers") == 0) {
      base[{run_of(c), c.at("depth"), c.at("scatter_buffers")}] = c["target"]["batch_fixed_ns"];
    }
  }
  std::vector<Row> out;
  for (const nlohmann::json& c : file.at("cases")) {
    if (c.at("host_pollers") == 0) continue;
    const auto key = std::make_tuple(run_of(c), int{c.at("depth")}, bool{c.at("scatter_buffers")});
    EXPECT_EQ(base.count(key), 1u) << c.at("run_file");
    out.push_back({c["target"]["batch_fixed_ns"], base[key], c["target"]["batch_copies"]["mean"],
                   c.at("host_pollers"), c.at("scatter_buffers")});
  }
  return out;
}

// The per-row figure: time a copy operation gains per warp beyond the first
// on each of the 32 lines. Hand-worked: 66 warps on 32 lines leave 34 extra;
// a batch of 2 copies going from 100 us to 1,460 us costs 680 us a copy, 20
// us per extra warp.
double per_extra_poller_ns(const Row& r) {
  return (r.batch_ns - r.base_ns) / r.copies / (r.pollers - kLines);
}

TEST(CopyLinePollers, PerRowFigureByHand) {
  EXPECT_DOUBLE_EQ(per_extra_poller_ns({1'460'000, 100'000, 2, 66, false}), 20'000);
}

// The figure README and copy_op_line_poller_ns's source give: the median of
// the 24 calibration rows. hw-soft-controller.json leaves the parameter at 0
// (the strategy cases refute it for warps waiting on their next completion)
// and charges the figure as copy_op_ring_sweeper_ns, per warp sweeping a
// ring (the calibration rows' warps read the rings entry after entry).
TEST(CopyLinePollers, TheFigureIsTheMedianOfTheCalibrationRows) {
  std::vector<double> calibration;
  for (const Row& r : rows()) {
    if (!r.scattered) calibration.push_back(per_extra_poller_ns(r));
  }
  ASSERT_EQ(calibration.size(), 24u);
  EXPECT_NEAR(median(calibration), 15'755.2, 0.05);
  const nlohmann::json topology = load("configs/topologies/hw-soft-controller.json");
  for (const nlohmann::json& node : topology.at("nodes")) {
    if (node.at("kind") == "nvme_ssd") {
      EXPECT_EQ(node.at("copy_op_line_poller_ns").get<double>(), 0.0);
      EXPECT_NEAR(node.at("copy_op_ring_sweeper_ns").get<double>(), median(calibration), 0.05);
    }
  }
}

// The prediction set: batches of 8 to 64 copies, predicted as the run's
// batch time without pollers plus copies x extra warps x the figure: 66
// to 528 warps -22 to +18 % (median of all 18 rows' errors 4.9 %); the one
// 1,056-warp row, 8 copies a batch, is predicted 2.2 times too slow (the
// copies saturate there: 7.2 us per extra warp against 14-16 us with one
// copy a batch).
TEST(CopyLinePollers, PredictsTheOneCopyPerCommandRows) {
  const double figure = 15'755.2;
  std::vector<double> errors;
  for (const Row& r : rows()) {
    if (!r.scattered) continue;
    const double predicted = r.base_ns + r.copies * (r.pollers - kLines) * figure;
    const double error = (predicted - r.batch_ns) / r.batch_ns;
    errors.push_back(std::abs(error));
    if (r.pollers < 1056) {
      EXPECT_LT(std::abs(error), 0.30) << r.pollers << " warps, " << r.copies << " copies";
    }
  }
  ASSERT_EQ(errors.size(), 18u);
  EXPECT_LT(median(errors), 0.06);
}

}  // namespace
}  // namespace gpunvme
