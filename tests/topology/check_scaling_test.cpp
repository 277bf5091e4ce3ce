// Checking a topology costs time linear in its size: thousands of SSDs
// behind switches are checked in about the time it takes to read them.
//
// The measure is the ratio of two sizes' CPU time on this thread, the least of
// three tries each: a complexity check, not a speed figure, and one that other
// processes on a loaded machine cannot inflate the way they inflate wall time.
#include <gtest/gtest.h>
#include <time.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/system/config/resource_limits.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

using nlohmann::json;

// One GPU and `ssds` SSDs, 100 behind each switch, all switches on one root
// complex; the scenario uses the first SSD.
RawConfig wide_config(int ssds) {
  json nodes = json::array({{{"id", "cpu0"}, {"kind", "cpu"}},
                            {{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
                            {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}},
                            {{"id", "gpu0"}, {"kind", "gpu"}}});
  json links = json::array({{{"from", "rc0"}, {"to", "gpu0"}}});
  for (int i = 0; i < ssds; ++i) {
    const std::string sw = "sw" + std::to_string(i / 100);
    if (i % 100 == 0) {
      nodes.push_back({{"id", sw}, {"kind", "switch"}});
      links.push_back({{"from", "rc0"}, {"to", sw}});
    }
    const std::string id = "ssd" + std::to_string(i);
    nodes.push_back({{"id", id}, {"kind", "nvme_ssd"}, {"profile", "samsung-pm1743"}});
    links.push_back({{"from", sw}, {"to", id}});
  }
  RawConfig raw;
  raw.topology_file = "wide.json";
  raw.scenario_file = "scenario.json";
  raw.topology = {{"name", "wide"}, {"nodes", nodes}, {"links", links}};
  raw.scenario = {{"ssds", {"ssd0"}}, {"threads", 64}, {"ios", 100}};
  return raw;
}

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double seconds_to_check(int ssds) {
  const RawConfig raw = wide_config(ssds);
  double least = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const double start = thread_cpu_seconds();
    resolve_config(raw);
    const double spent = thread_cpu_seconds() - start;
    least = attempt == 0 ? spent : std::min(least, spent);
  }
  return least;
}

TEST(CheckScaling, FourTimesTheSsdsTakeAboutFourTimesAsLong) {
  // Only checked, never built: the memory cap (which running 8,000 SSDs may
  // pass on a small machine) is not what this measures.
  set_max_memory_bytes(1ull << 50);
  seconds_to_check(500);  // warm-up: profiles, allocator
  const double small = seconds_to_check(2000);
  const double large = seconds_to_check(8000);
  // Linear: about 4x; a per-link scan over the nodes would make it about 16x.
  EXPECT_LT(large / small, 8.0) << small << " s for 2,000 SSDs, " << large << " s for 8,000";
  set_max_memory_bytes(default_max_memory_bytes());
}

}  // namespace
}  // namespace gpunvme
