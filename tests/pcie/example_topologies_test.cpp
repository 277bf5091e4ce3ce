// The shipped example topologies run the default scenario end to end, and each result reports
// the path its traffic took (redirected, translated, through the root complex, across the CPU
// fabric) with the fabric's statistics; a platform that refuses the scenario's traffic is a
// ConfigError before the run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

std::string topology(const std::string& name) {
  return std::string(GPUNVME_SOURCE_DIR) + "/configs/topologies/" + name + ".json";
}

// Whole runs go through the gpunvme program in a child process: warps are SystemC threads on
// their own stacks, and an exception thrown in this process after such a run (the ConfigErrors
// below) trips AddressSanitizer's stack bookkeeping, a false positive it warns about.
nlohmann::json run_small(const std::string& name, const std::vector<std::string>& overrides = {}) {
  const std::string out = (std::filesystem::temp_directory_path() /
                           ("gpunvme_pcie_" + name + "_" + std::to_string(getpid()) + ".json"))
                              .string();
  std::string command = std::string(GPUNVME_CLI) + " run --topology " + topology(name) +
                        " --set scenario.ios=400 --set scenario.threads=64 --out " + out;
  for (const std::string& o : overrides) command += " --set " + o;
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string output;
  char buffer[4096];
  while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  std::ifstream in(out);
  if (!in) return nlohmann::json::object();
  const nlohmann::json result = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  return result;
}

// The pair entry of `from` -> `to` in a result's paths.
nlohmann::json pair(const nlohmann::json& result, const std::string& from, const std::string& to) {
  for (const auto& p : result["paths"]) {
    if (p["from"] == from && p["to"] == to) return p;
  }
  return nullptr;
}

TEST(ExampleTopologies, DefaultSwitchIsDirect) {
  const nlohmann::json r = run_small("default");
  EXPECT_EQ(r["summary"]["errors"], 0);
  for (auto [from, to] : {std::pair{"ssd0", "gpu0"}, std::pair{"gpu0", "ssd0"}}) {
    const nlohmann::json p = pair(r, from, to);
    ASSERT_FALSE(p.is_null()) << from << " -> " << to;
    EXPECT_EQ(p["path"], "direct");
    EXPECT_EQ(p["kind"], "PIX");
  }
  EXPECT_TRUE(r["paths"][0]["peer_to_peer"].get<bool>());  // device pairs come first
  EXPECT_GT(pair(r, "ssd0", "gpu0")["write_bytes"].get<std::uint64_t>(), 400u * 4096);
  EXPECT_EQ(pair(r, "gpu0", "ssd0")["reads"], 0);  // the GPU only rings doorbells
  EXPECT_EQ(r["pcie"]["credit_stall_ns"], 0.0);
}

TEST(ExampleTopologies, AcsOnRedirectsThroughTheRootComplex) {
  const nlohmann::json r = run_small("acs-on");
  const nlohmann::json p = pair(r, "ssd0", "gpu0");
  EXPECT_EQ(p["path"], "redirected");
  EXPECT_EQ(p["redirected_by"], "sw0");
  EXPECT_EQ(p["route"], nlohmann::json({"ssd0", "sw0", "rc0", "sw0", "gpu0"}));
  // The data now crosses the root complex's peer fabric and its link both ways.
  const nlohmann::json& rc = r["pcie"]["root_complexes"][0];
  EXPECT_GT(rc["fabric"]["peer"]["wire_bytes"].get<std::uint64_t>(), 400u * 4096);
  // And it is slower than the direct path of the default machine (by about a
  // microsecond of ~95: the mean, as percentiles come from 1.6 %-wide bins).
  const nlohmann::json direct = run_small("default");
  EXPECT_GT(r["summary"]["latency_ns"]["mean"].get<double>(),
            direct["summary"]["latency_ns"]["mean"].get<double>());
}

TEST(ExampleTopologies, TranslatingIommuLooksEveryRequestUp) {
  const nlohmann::json r = run_small("iommu-translating");
  EXPECT_EQ(r["summary"]["errors"], 0);
  const nlohmann::json p = pair(r, "ssd0", "gpu0");
  EXPECT_EQ(p["path"], "translated");
  EXPECT_EQ(p["translated_by"], "rc0");
  const nlohmann::json& iotlb = p["iotlb"];
  EXPECT_EQ(iotlb["lookups"].get<std::uint64_t>(),
            iotlb["hits"].get<std::uint64_t>() + iotlb["misses"].get<std::uint64_t>());
  EXPECT_GT(iotlb["misses"].get<std::uint64_t>(), 0u);
  EXPECT_GT(iotlb["hits"].get<std::uint64_t>(), 0u);
  // The SSD's own pair counts only its requests to GPU memory; its queue traffic with host
  // memory is another pair (IotlbCountsArePerRequesterTargetPair checks the sum).
  EXPECT_LT(iotlb["lookups"].get<std::uint64_t>(),
            r["pcie"]["root_complexes"][0]["iotlb"]["lookups"].get<std::uint64_t>());
  // Without the peer mappings the same machine cannot run the scenario.
  try {
    load_config(topology("iommu-translating"), "",
                {"topology.nodes.rc0.iommu_maps_peer_bars=false"}, 1);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.path(), "$.nodes[2].iommu_maps_peer_bars");
  }
}

// IOTLB counts in the paths are per (requester, target) pair: over every translated pair they
// add up to the root complex's total, whichever targets a requester talks to.
void expect_pairs_sum_to_root_complex(const nlohmann::json& r) {
  std::uint64_t lookups = 0, misses = 0;
  for (const auto& p : r["paths"]) {
    if (!p.contains("translated_by")) continue;
    lookups += p["iotlb"]["lookups"].get<std::uint64_t>();
    misses += p["iotlb"]["misses"].get<std::uint64_t>();
  }
  const nlohmann::json& total = r["pcie"]["root_complexes"][0]["iotlb"];
  EXPECT_EQ(lookups, total["lookups"].get<std::uint64_t>());
  EXPECT_EQ(misses, total["misses"].get<std::uint64_t>());
}

TEST(ExampleTopologies, IotlbCountsArePerRequesterTargetPair) {
  expect_pairs_sum_to_root_complex(run_small("iommu-translating"));
  // The bounce-buffer path: the SSD talks to host memory (queues, bounce buffers) and the GPU
  // copies from host memory, so requesters reach several targets through the IOMMU.
  const nlohmann::json bounce = run_small("iommu-translating", {"scenario.path=\"bounce\""});
  EXPECT_EQ(bounce["summary"]["errors"], 0);
  expect_pairs_sum_to_root_complex(bounce);
}

// The SSD's data DMA and the GPU's copy engine run through DMA engines: every data byte of the
// scenario (ios x bs), one chunk per 4 KiB I/O, and the engines are listed in the results.
TEST(ExampleTopologies, DataMovesThroughDmaEngines) {
  auto engine = [](const nlohmann::json& r, const std::string& node) {
    for (const auto& e : r["pcie"]["dma_engines"]) {
      if (e["node"] == node) return e;
    }
    return nlohmann::json();
  };
  const nlohmann::json direct = run_small("default");
  const nlohmann::json ssd = engine(direct, "ssd0");
  ASSERT_FALSE(ssd.is_null());
  EXPECT_EQ(ssd["kind"], "ssd_data_dma");
  EXPECT_EQ(ssd["bytes"].get<std::uint64_t>(), 400u * 4096);
  EXPECT_EQ(ssd["write_chunks"].get<std::uint64_t>(), 400u);
  EXPECT_EQ(ssd["read_chunks"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(ssd["transfers"].get<std::uint64_t>(), 400u);
  // The data and the 16 B completion entries are what the SSD wrote into GPU memory.
  EXPECT_EQ(pair(direct, "ssd0", "gpu0")["write_bytes"].get<std::uint64_t>(), 400u * (4096 + 16));
  EXPECT_EQ(engine(direct, "gpu0")["bytes"].get<std::uint64_t>(), 0u);
  // Through bounce buffers the GPU's copy engine pulls each I/O's 4 KiB from host memory.
  const nlohmann::json bounce = run_small("default", {"scenario.path=\"bounce\""});
  const nlohmann::json ce = engine(bounce, "gpu0");
  EXPECT_EQ(ce["kind"], "gpu_copy_engine");
  EXPECT_EQ(ce["bytes"].get<std::uint64_t>(), 400u * 4096);
  EXPECT_EQ(ce["read_chunks"].get<std::uint64_t>(), 400u);
  EXPECT_EQ(engine(bounce, "ssd0")["bytes"].get<std::uint64_t>(), 400u * 4096);
}

TEST(ExampleTopologies, RootPortsTurnInTheRootComplex) {
  const nlohmann::json r = run_small("two-root-ports");
  const nlohmann::json p = pair(r, "ssd0", "gpu0");
  EXPECT_EQ(p["path"], "root_complex");
  EXPECT_EQ(p["kind"], "PHB");
  EXPECT_EQ(p["route"], nlohmann::json({"ssd0", "rc0", "gpu0"}));
}

TEST(ExampleTopologies, TwoSocketsCrossTheCpuFabricOrAreRefused) {
  const nlohmann::json r = run_small("two-sockets");
  const nlohmann::json p = pair(r, "ssd0", "gpu0");
  EXPECT_EQ(p["path"], "cpu_fabric");
  EXPECT_EQ(p["kind"], "SYS");
  EXPECT_EQ(p["route"], nlohmann::json({"ssd0", "rc1", "cpu1", "cpu0", "rc0", "sw0", "gpu0"}));
  bool inter_socket = false;
  for (const auto& link : r["pcie"]["links"]) {
    if (link["direction"] == "cpu1->cpu0") {
      inter_socket = true;
      EXPECT_EQ(link["type"], "inter_socket");
    }
  }
  EXPECT_TRUE(inter_socket);
  EXPECT_THROW(load_config(topology("two-sockets"), "",
                           {"topology.p2p_across_root_complexes=\"refuse\""}, 1),
               ConfigError);
}

}  // namespace
}  // namespace gpunvme
