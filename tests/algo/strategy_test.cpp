// The strategies end to end on the simulator: every named strategy over 1 to
// 1024 queues and 1 or 4 SSDs keeps every invariant (the controllers check
// CID uniqueness, SQ overruns, CQ heads, completions; the run checks that
// every I/O completes); policy variants; configuration errors; one command's
// stages against closed forms from the parameters; doorbell traffic.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "sim/kernel/params/config_error.h"
#include "sim/system/run/run.h"

namespace gpunvme {
namespace {

// A GPU and four Gen5 SSDs behind one switch; the SSDs grant 1024 queues.
std::string four_ssd_topology() {
  const std::string path = ::testing::TempDir() + "/gpu-4ssd.json";
  nlohmann::json nodes = {{{"id", "cpu0"}, {"kind", "cpu"}},
                          {{"id", "dram0"}, {"kind", "host_memory"}, {"socket", "cpu0"}},
                          {{"id", "rc0"}, {"kind", "root_complex"}, {"socket", "cpu0"}},
                          {{"id", "sw0"}, {"kind", "switch"}},
                          {{"id", "gpu0"}, {"kind", "gpu"}}};
  nlohmann::json links = {{{"from", "rc0"}, {"to", "sw0"}, {"gen", 5}, {"width", 16}},
                          {{"from", "sw0"}, {"to", "gpu0"}, {"gen", 5}, {"width", 16}}};
  for (int k = 0; k < 4; ++k) {
    const std::string id = "ssd" + std::to_string(k);
    nodes.push_back(
        {{"id", id}, {"kind", "nvme_ssd"}, {"profile", "samsung-pm1743"}, {"max_io_queues", 1024}});
    links.push_back({{"from", "sw0"}, {"to", id}, {"gen", 5}, {"width", 4}});
  }
  std::ofstream(path) << nlohmann::json{
      {"name", "gpu-4ssd"},
      {"nodes", nodes},
      {"links", links}}.dump(2);
  return path;
}

nlohmann::json run_with(const std::string& topology, std::vector<std::string> sets) {
  return run(load_config(topology, default_scenario_file(), sets, 1));
}

std::string ssd_list(int n) {
  std::string s = "[";
  for (int k = 0; k < n; ++k) s += std::string(k ? "," : "") + "\"ssd" + std::to_string(k) + "\"";
  return s + "]";
}

// Every I/O completed without error, every SSD's commands add up, and every
// stage of the breakdown saw every I/O.
void expect_clean(const nlohmann::json& r, std::uint64_t ios, const std::string& what) {
  EXPECT_EQ(r["summary"]["ios"].get<std::uint64_t>(), ios) << what;
  EXPECT_EQ(r["summary"]["errors"].get<std::uint64_t>(), 0u) << what;
  std::uint64_t commands = 0;
  for (const auto& [id, ssd] : r["ssds"].items()) {
    commands += ssd["commands"].get<std::uint64_t>();
    EXPECT_EQ(ssd["errors"].get<std::uint64_t>(), 0u) << what << " " << id;
  }
  EXPECT_EQ(commands, ios) << what;
  for (const char* stage :
       {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell", "completion_wait",
        "completion_polling", "cq_head_sync", "delivery", "end_to_end"}) {
    EXPECT_EQ(r["stages"][stage]["count"].get<std::uint64_t>(), ios) << what << " " << stage;
  }
}

void expect_config_error(const std::vector<std::string>& sets, const std::string& path) {
  try {
    load_config(default_topology_file(), default_scenario_file(), sets, 1);
    ADD_FAILURE() << "accepted: " << sets.back();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// First in the binary: an exception thrown after SystemC coroutines have
// run trips AddressSanitizer's alternate-stack check.
TEST(StrategyConfig, MeaninglessCombinationsAreConfigErrors) {
  expect_config_error(
      {"scenario.strategy=per_warp_queue", "scenario.queues=8", "scenario.threads=1024"},
      "$.threads");
  expect_config_error(
      {"scenario.strategy=io_agents", "scenario.queues=4", "scenario.agent_warps=8"},
      "$.agent_warps");
  expect_config_error({"scenario.strategy=io_agents", "scenario.submission=per_command"},
                      "$.submission");
  expect_config_error({"scenario.cid_scheme=counter_lock", "scenario.cid_space=16"}, "$.cid_space");
  expect_config_error({"scenario.completion=owner_drain"}, "$.completion");
  expect_config_error({"scenario.threads=300000"}, "$.threads");
  expect_config_error({"scenario.cid_scheme=thread_pool", "scenario.queues=1",
                       "scenario.threads=4096", "scenario.iodepth=32"},
                      "$.cid_scheme");
  expect_config_error(
      {"scenario.completion=polling_warps", "scenario.queues=2", "scenario.poller_warps=3"},
      "$.poller_warps");
  // The default SSD profile offers neither a CMB nor Doorbell Buffer Config.
  expect_config_error({"scenario.sq_placement=cmb"}, "$.sq_placement");
  expect_config_error({"scenario.shadow_doorbells=true"}, "$.shadow_doorbells");
  // Nor indexed completion (a proposed extension).
  expect_config_error({"scenario.completion=cqe_at_slot"}, "$.completion");
  expect_config_error({"scenario.completion=cqe_at_slot", "scenario.strategy=per_warp_queue"},
                      "$.completion");
  // Nor batch completion notification.
  expect_config_error({"scenario.completion=cid_bitmap"}, "$.completion");
  // Nor warp doorbells; and a shadow doorbell cannot carry a run.
  expect_config_error({"scenario.submission=warp_doorbell"}, "$.submission");
  expect_config_error({"scenario.submission=warp_doorbell", "scenario.shadow_doorbells=true",
                       "topology.nodes.ssd0.warp_doorbells=true",
                       "topology.nodes.ssd0.shadow_doorbells=true"},
                      "$.shadow_doorbells");
  // Nor wide CIDs.
  expect_config_error({"scenario.cid_scheme=thread_wide"}, "$.cid_scheme");
  expect_config_error({"scenario.sq_placement=tape"}, "$.sq_placement");
  expect_config_error({"scenario.sq_placement=cmb", "topology.nodes.ssd0.cmb_mib=1",
                       "scenario.queues=32", "scenario.queue_entries=1024"},
                      "$.sq_placement");
}

// Every valid combination of the four strategy dimensions (and io_agents,
// whose dimensions are fixed), each run once, at one (queues, SSDs) pair
// taken in rotation from {1, 8, 128, 1024} x {1, 4} (four-SSD runs alternate
// interleaving and striping), so that every pair is covered across the
// tuples. A tuple whose turn lands on a pair the scenario validation rejects
// moves on to the next pair in rotation; tuples rejected at every pair are
// skipped (and counted, so that the validation cannot silently reject
// everything). Few I/Os per run: the point is that every combination runs and
// keeps the invariants. Second in the binary, and every configuration is
// checked before any runs: see the note on the first test about exceptions.
TEST(Strategies, EveryPolicyTupleOverQueueCountsAndSsdsKeepsTheInvariants) {
  const std::string topology = four_ssd_topology();
  const std::uint64_t ios = 64;
  struct Tuple {
    std::string strategy, mapping, cid, submission, completion;
  };
  std::vector<Tuple> tuples;
  for (const char* mapping : {"per_sm", "per_warp", "round_robin"}) {
    for (const char* cid : {"sq_slot", "counter", "counter_lock", "warp_partition", "thread_pool"}) {
      for (const char* submission : {"per_command", "ticket_ready", "warp_batch", "exclusive"}) {
        for (const char* completion : {"cq_scan", "cid_flags", "polling_warps", "owner_drain"}) {
          tuples.push_back({"warp_batch", mapping, cid, submission, completion});
        }
      }
    }
  }
  tuples.push_back({"io_agents", "strategy", "strategy", "strategy", "strategy"});
  constexpr int kQueues[] = {1, 8, 128, 1024};
  constexpr int kSsds[] = {1, 4};
  constexpr std::size_t kPairs = 8;
  std::size_t rejected = 0, turn = 0;
  std::vector<std::pair<std::string, std::vector<std::string>>> accepted;
  std::set<std::string> valid_tuples;
  std::set<std::pair<int, int>> pairs_run;
  for (const Tuple& t : tuples) {
    const std::size_t first = turn;  // advances with every tuple that runs
    for (std::size_t k = 0; k < kPairs; ++k) {
      const std::size_t pair = (first + k) % kPairs;
      const int queues = kQueues[pair / 2];
      const int ssds = kSsds[pair % 2];
      const std::string ssd_mapping = ssds > 1 && (first / kPairs) % 2 == 1 ? "stripe" : "interleave";
      int threads = 64;
      if (t.submission == "exclusive") {
        threads = std::min(threads, 32 * queues * (ssd_mapping == "stripe" ? 1 : ssds));
      }
      const std::string what = t.strategy + "/" + t.mapping + "/" + t.cid + "/" + t.submission +
                               "/" + t.completion + " queues=" + std::to_string(queues) +
                               " ssds=" + std::to_string(ssds) + " " + ssd_mapping;
      std::vector<std::string> sets = {
          "scenario.strategy=" + t.strategy, "scenario.queue_mapping=" + t.mapping,
          "scenario.cid_scheme=" + t.cid, "scenario.submission=" + t.submission,
          "scenario.completion=" + t.completion, "scenario.queues=" + std::to_string(queues),
          "scenario.ssds=" + ssd_list(ssds), "scenario.ssd_mapping=" + ssd_mapping,
          "scenario.queue_entries=8", "scenario.iodepth=1",
          "scenario.threads=" + std::to_string(threads), "scenario.ios=" + std::to_string(ios),
          "scenario.agent_warps=" + std::to_string(std::min(queues, 4)),
          "scenario.poller_warps=" + std::to_string(std::min(queues * ssds, 2))};
      try {
        load_config(topology, default_scenario_file(), sets, 1);
      } catch (const ConfigError&) {
        ++rejected;
        continue;
      }
      valid_tuples.insert(t.strategy + t.mapping + t.cid + t.submission + t.completion);
      pairs_run.insert({queues, ssds});
      accepted.push_back({what, std::move(sets)});
      ++turn;
      break;
    }
  }
  // 3 mappings x 5 CID schemes x 3 shared-queue submissions x 3 completions,
  // 5 exclusive tuples (per_warp, owner_drain, any CID scheme), io_agents.
  EXPECT_EQ(valid_tuples.size(), 3u * 5 * 3 * 3 + 5 + 1);
  EXPECT_EQ(accepted.size(), valid_tuples.size());
  EXPECT_EQ(pairs_run.size(), kPairs);
  EXPECT_GT(rejected, 0u);
  for (const auto& [what, sets] : accepted) {
    expect_clean(run(load_config(topology, default_scenario_file(), sets, 1)), ios, what);
  }
}

TEST(Strategies, EveryStrategyOverQueueCountsAndSsdsKeepsTheInvariants) {
  const std::string topology = four_ssd_topology();
  const std::uint64_t ios = 96;
  for (const char* strategy :
       {"warp_batch", "all_threads", "bam_ticket", "io_agents", "per_warp_queue"}) {
    for (int queues : {1, 8, 128, 1024}) {
      for (int ssds : {1, 4}) {
        // per_warp_queue: one queue per warp; io_agents: at most one agent per queue.
        int threads = 64;
        if (std::string(strategy) == "per_warp_queue")
          threads = std::min(threads, 32 * queues * ssds);
        const std::string what = std::string(strategy) + " queues=" + std::to_string(queues) +
                                 " ssds=" + std::to_string(ssds);
        const nlohmann::json r =
            run_with(topology, {"scenario.strategy=" + std::string(strategy),
                                "scenario.queues=" + std::to_string(queues),
                                "scenario.ssds=" + ssd_list(ssds), "scenario.queue_entries=8",
                                "scenario.iodepth=2", "scenario.threads=" + std::to_string(threads),
                                "scenario.ios=" + std::to_string(ios),
                                "scenario.agent_warps=" + std::to_string(std::min(queues, 4))});
        expect_clean(r, ios, what);
        EXPECT_EQ(r["summary"]["strategy"], strategy);
      }
    }
  }
}

// Regression (issue 5): owner_drain consumed completions without giving
// their CIDs back, so per_warp / counter_lock / exclusive / owner_drain spun
// forever in CID allocation once cid_space (= queue depth, 8 here) commands
// had gone through the warp's queue, and warp_partition ran out of local ids
// (duplicate CIDs, a lost completion). Each run pushes many times cid_space
// commands through one queue; every CID scheme must finish clean.
TEST(Strategies, OwnerDrainGivesCidsBack) {
  const std::string topology = four_ssd_topology();
  const std::uint64_t ios = 96;
  for (const char* cid : {"counter_lock", "warp_partition", "sq_slot", "counter", "thread_pool"}) {
    for (int iodepth : {1, 2}) {
      const std::string what = std::string(cid) + " iodepth=" + std::to_string(iodepth);
      expect_clean(
          run_with(topology,
                   {"scenario.strategy=warp_batch", "scenario.queue_mapping=per_warp",
                    "scenario.cid_scheme=" + std::string(cid), "scenario.submission=exclusive",
                    "scenario.completion=owner_drain", "scenario.queues=1",
                    "scenario.ssds=" + ssd_list(1), "scenario.queue_entries=8",
                    "scenario.iodepth=" + std::to_string(iodepth), "scenario.threads=32",
                    "scenario.ios=" + std::to_string(ios)}),
          ios, what);
    }
  }
}

TEST(Strategies, QueuesOfTwoEntries) {
  // One slot per queue: every command waits for the previous one on its
  // queue to be consumed.
  const std::string topology = four_ssd_topology();
  for (const char* strategy :
       {"warp_batch", "all_threads", "bam_ticket", "io_agents", "per_warp_queue"}) {
    const nlohmann::json r = run_with(
        topology, {"scenario.strategy=" + std::string(strategy), "scenario.queues=2",
                   "scenario.ssds=" + ssd_list(2), "scenario.queue_entries=2", "scenario.iodepth=3",
                   "scenario.threads=64", "scenario.ios=120", "scenario.agent_warps=2"});
    expect_clean(r, 120, strategy);
  }
}

TEST(Strategies, PolicyVariants) {
  const std::string topology = four_ssd_topology();
  struct Variant {
    std::vector<std::string> sets;
  };
  const std::vector<Variant> variants = {
      {{"scenario.cid_scheme=counter_lock", "scenario.submission=per_command"}},
      {{"scenario.cid_scheme=counter_lock", "scenario.submission=warp_batch",
        "scenario.completion=cq_scan"}},
      {{"scenario.cid_scheme=warp_partition", "scenario.queue_mapping=per_sm",
        "scenario.completion=polling_warps", "scenario.poller_warps=3"}},
      {{"scenario.cid_scheme=thread_pool", "scenario.submission=ticket_ready",
        "scenario.completion=cid_flags"}},
      {{"scenario.cid_scheme=counter", "scenario.queue_mapping=round_robin",
        "scenario.submission=warp_batch", "scenario.completion=cq_scan"}},
      {{"scenario.strategy=all_threads", "scenario.ssd_mapping=stripe",
        "scenario.cq_doorbell_batch=3"}},
      {{"scenario.strategy=bam_ticket", "scenario.ssd_mapping=stripe", "scenario.rw=randwrite",
        "scenario.bs=16384"}},
      {{"scenario.strategy=io_agents", "scenario.ssd_mapping=stripe", "scenario.batch_size=4",
        "scenario.batch_timeout_ns=3000", "scenario.agent_warps=2"}},
      {{"scenario.strategy=per_warp_queue", "scenario.ssd_mapping=stripe",
        "scenario.cq_doorbell_batch=2"}},
      {{"scenario.strategy=warp_batch", "scenario.poll_backoff_ns=300",
        "scenario.distribution=sequential"}},
  };
  for (const Variant& v : variants) {
    std::vector<std::string> sets = {"scenario.queues=4",        "scenario.ssds=" + ssd_list(4),
                                     "scenario.queue_entries=4", "scenario.iodepth=2",
                                     "scenario.threads=64",      "scenario.ios=128"};
    sets.insert(sets.end(), v.sets.begin(), v.sets.end());
    std::string what;
    for (const auto& s : v.sets) what += s + " ";
    expect_clean(run_with(topology, sets), 128, what);
  }
}

TEST(Strategies, ResultsAreDeterministic) {
  auto strip = [](nlohmann::json r) {
    r["summary"].erase("wall_time_s");
    return r.dump();
  };
  const std::vector<std::string> sets = {"scenario.strategy=bam_ticket", "scenario.threads=128",
                                         "scenario.ios=512", "scenario.queues=4"};
  EXPECT_EQ(strip(run_with(default_topology_file(), sets)),
            strip(run_with(default_topology_file(), sets)));
}

// ---------------------------------------------------------------------------
// One warp, one command, nothing else running: each GPU-side stage is a sum
// of parameters, and the end-to-end latency is the sum of the stages.

double param(const nlohmann::json& result, const std::string& name) {
  for (const nlohmann::json& node : result["config"]["topology"]["nodes"]) {
    if (node["id"] == "gpu0") return node["params"][name].get<double>();
  }
  throw std::runtime_error("no gpu0");
}

// The warps' own loops over lanes (lane_loop_iteration_ns) are set to zero
// here; LaneLoopsCostTheirIterations checks them.
TEST(Strategies, OneCommandStagesAreSumsOfTheParameters) {
  // Near and far L2 partitions the same, so no atomic depends on the hash.
  const nlohmann::json r = run_with(
      default_topology_file(),
      {"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1", "scenario.queues=1",
       "scenario.queue_entries=16", "topology.nodes.gpu0.atomic_far_latency_ns=140",
       "topology.nodes.gpu0.lane_loop_iteration_ns=0"});
  auto ps = [&](const char* name) { return std::llround(param(r, name) * 1000.0); };
  const long long cycle = std::llround(1000.0 / param(r, "sm_clock_ghz"));
  const long long A = ps("atomic_latency_ns"), L = ps("load_latency_ns"), S = ps("store_issue_ns"),
                  P = ps("pcie_store_issue_ns"), E = ps("entry_store_ns");
  // Every GPU or system fence also reloads the descriptors its L1 dropped.
  const long long R = ps("fence_l1_reload_ns"), F = ps("fence_system_ns") + R,
                  FP = ps("fence_system_after_pcie_store_ns") + R,
                  G = ps("fence_gpu_after_store_ns") + R;
  auto stage = [&](const char* name) {
    EXPECT_EQ(r["stages"][name]["count"].get<int>(), 1) << name;
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  // Grouping ballot (one cycle), the ticket atomic, the two gate words.
  EXPECT_EQ(stage("cid_allocation"), cycle + A + 2 * L);
  // The 64 B entry (the larger of entry_store_ns and its four 16 B stores'
  // issue), then the system fence that makes the entry visible.
  EXPECT_EQ(stage("sqe_construction"), std::max(4 * S, E) + F);
  // The turn word.
  EXPECT_EQ(stage("sq_tail_sync"), L);
  // The MMIO doorbell, the fence after a PCIe store, the turn update.
  EXPECT_EQ(stage("doorbell"), P + FP + S);
  // The waiter checked its flag once (L), then polled every load latency
  // from there; it sees the CQE on the first poll issued after it landed,
  // checks its flag again, reads the CQ lock, head and entry to see that a
  // drain is due (three loads: the predicate evaluated through check(),
  // outside a wait), takes the lock, loads the head and the entry.
  const long long wait = stage("completion_wait");
  const long long from_poll_start = wait - L;
  const long long polls = (from_poll_start + L - 1) / L;
  EXPECT_EQ(stage("completion_polling"), polls * L + L - from_poll_start + L + 3 * L + A + 2 * L);
  // Acquire fence, head store, rung word, CQ doorbell, rung store.
  EXPECT_EQ(stage("cq_head_sync"), F + S + L + P + S);
  // The flag store, the fence before unlocking, the unlock, the requester's
  // flag load.
  EXPECT_EQ(stage("delivery"), S + G + S + L);
  long long sum = 0;
  for (const char* s : {"cid_allocation", "sqe_construction", "sq_tail_sync", "doorbell",
                        "completion_wait", "completion_polling", "cq_head_sync", "delivery"}) {
    sum += stage(s);
  }
  EXPECT_EQ(stage("end_to_end"), sum);
  // The SSD's part: fetch wait and service as the controller saw them, plus
  // two small TLPs' flight through the switch, less the doorbell stage's
  // time after the MMIO write left the SM.
  const double device = r["stages"]["ssd_fetch_wait"]["mean"].get<double>() +
                        r["stages"]["ssd_service"]["mean"].get<double>();
  const double wait_ns = static_cast<double>(wait) / 1000.0;
  EXPECT_GT(wait_ns, device - static_cast<double>(P + FP + S) / 1000.0);
  EXPECT_LT(wait_ns, device + 2000.0);
}

// The same command with the warps' own loops over lanes charged: each loop
// costs lane_loop_iteration_ns per lane of its mask, on the stages whose
// code runs it. Between the request and its CID: the ticket, the pending
// record, the CID and the CID's records (one lane each); the doorbell's
// records (one); delivery: the reaping warp's scan of all 32 lanes for
// outstanding commands, the flagged command's completion and the check that
// the request is done (34). The SQE, the tail and the CQ head have none.
TEST(Strategies, LaneLoopsCostTheirIterations) {
  auto one_command = [](double iteration_ns) {
    return run_with(default_topology_file(),
                    {"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1",
                     "scenario.queues=1", "scenario.queue_entries=16",
                     "topology.nodes.gpu0.atomic_far_latency_ns=140",
                     "topology.nodes.gpu0.lane_loop_iteration_ns=" + std::to_string(iteration_ns)});
  };
  const nlohmann::json free_loops = one_command(0.0);
  const nlohmann::json charged = one_command(250.0);
  auto added = [&](const char* stage) {
    return std::llround((charged["stages"][stage]["mean"].get<double>() -
                         free_loops["stages"][stage]["mean"].get<double>()) *
                        1000.0);
  };
  const long long I = 250000;  // ps
  EXPECT_EQ(added("cid_allocation"), 4 * I);
  EXPECT_EQ(added("sqe_construction"), 0);
  EXPECT_EQ(added("sq_tail_sync"), 0);
  EXPECT_EQ(added("doorbell"), I);
  EXPECT_EQ(added("cq_head_sync"), 0);
  EXPECT_EQ(added("delivery"), 34 * I);
  const nlohmann::json& gpu = charged["gpus"]["gpu0"];
  EXPECT_EQ(gpu["lane_loop_ns"].get<double>(), gpu["lane_loop_iterations"].get<double>() * 250.0);
  EXPECT_EQ(free_loops["gpus"]["gpu0"]["lane_loop_iterations"], gpu["lane_loop_iterations"]);
}

// ---------------------------------------------------------------------------
// Doorbells: one per command puts many more posted writes on the GPU's link.

std::uint64_t gpu_posted_writes(const nlohmann::json& r) {
  for (const nlohmann::json& link : r["pcie"]["links"]) {
    if (link["direction"] == "gpu0->sw0") {
      return link["by_class"]["posted_write"]["tlps"].get<std::uint64_t>();
    }
  }
  return 0;
}

TEST(Strategies, DoorbellPerCommandPutsMoreTlpsOnTheLinkThanBatches) {
  const std::uint64_t ios = 1024;
  const std::vector<std::string> common = {"scenario.queue_mapping=per_warp",
                                           "scenario.threads=256", "scenario.ios=1024",
                                           "scenario.queues=8", "scenario.cq_doorbell_batch=512"};
  auto with = [&](const std::string& strategy) {
    std::vector<std::string> sets = common;
    sets.push_back("scenario.strategy=" + strategy);
    return run_with(default_topology_file(), sets);
  };
  const nlohmann::json per_command = with("all_threads");
  const nlohmann::json batched = with("warp_batch");
  expect_clean(per_command, ios, "all_threads");
  expect_clean(batched, ios, "warp_batch");
  // Each command rings its own SQ doorbell; a warp rings one for its lanes.
  const std::uint64_t many = gpu_posted_writes(per_command);
  const std::uint64_t few = gpu_posted_writes(batched);
  EXPECT_GE(many, ios);
  EXPECT_LE(few, ios / 32 + 8 * 4);
  EXPECT_GT(many, 10 * few);
  EXPECT_EQ(per_command["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>(), many);
  EXPECT_GE(per_command["ssds"]["ssd0"]["doorbell_writes"].get<std::uint64_t>(), ios);
}

// Warp doorbells (submission = warp_doorbell on SSDs with warp_doorbells)
// with three CID schemes and both completions that suit shared queues, on
// 8-entry queues that wrap many times: every I/O completes once, without
// error, and every stage sees it (runs announced out of order are put in
// slot order by the controller, never lost or fetched twice).
TEST(WarpDoorbell, EveryCidSchemeAndCompletionKeepsTheInvariants) {
  const std::uint64_t ios = 256;
  for (const char* completion : {"cid_flags", "cq_scan", "cqe_at_slot"}) {
    for (const char* cid : {"sq_slot", "counter", "thread_pool"}) {
      for (const char* queues : {"1", "8"}) {
        const std::string what = std::string(completion) + "/" + cid + " queues=" + queues;
        expect_clean(
            run_with(default_topology_file(),
                     {"topology.nodes.ssd0.warp_doorbells=true",
                      "topology.nodes.ssd0.indexed_completion=true",
                      "scenario.submission=warp_doorbell",
                      std::string("scenario.completion=") + completion,
                      std::string("scenario.cid_scheme=") + cid,
                      std::string("scenario.queues=") + queues, "scenario.queue_entries=8",
                      "scenario.threads=64", "scenario.iodepth=2",
                      "scenario.ios=" + std::to_string(ios)}),
            ios, what);
      }
    }
  }
}

// One warp of 32 threads, one I/O each, by hand. warp_batch writes the tail
// doorbell and then the turn counter behind a system fence; warp_doorbell
// writes one run doorbell and nothing after it, so its doorbell step is
// shorter by at least that fence. Both ring one SQ doorbell (plus the CQ
// head doorbell). On the controller, warp_doorbell_ns is booked before the
// tail moves: with the processors idle, 10 us of it is exactly 5 us slower
// than 5 us for every I/O (completion_wait, the SSD's part, grows 1:1).
TEST(WarpDoorbell, OneWarpByHand) {
  auto one = [](const char* submission, const char* cost_ns) {
    return run_with(default_topology_file(),
                    {"scenario.strategy=warp_batch", "scenario.threads=32", "scenario.ios=32",
                     "scenario.queues=1", "scenario.queue_entries=64",
                     "topology.nodes.ssd0.warp_doorbells=true",
                     std::string("topology.nodes.ssd0.warp_doorbell_ns=") + cost_ns,
                     std::string("scenario.submission=") + submission});
  };
  const nlohmann::json batch = one("warp_batch", "0");
  const nlohmann::json free_run = one("warp_doorbell", "0");
  const nlohmann::json run_5us = one("warp_doorbell", "5000");
  const nlohmann::json run_10us = one("warp_doorbell", "10000");
  auto stage_ps = [](const nlohmann::json& r, const char* name) {
    EXPECT_EQ(r["stages"][name]["count"].get<int>(), 32) << name;
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  const long long F = std::llround(param(free_run, "fence_system_ns") * 1000.0);
  EXPECT_LE(stage_ps(free_run, "doorbell"), stage_ps(batch, "doorbell") - F);
  EXPECT_EQ(stage_ps(run_10us, "completion_wait") - stage_ps(run_5us, "completion_wait"),
            5000000);
  const auto mmio = [](const nlohmann::json& r) {
    return r["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>();
  };
  EXPECT_EQ(mmio(free_run), mmio(batch));
}

}  // namespace
}  // namespace gpunvme

namespace gpunvme {
namespace {

// ---------------------------------------------------------------------------
// Queue options from the scenario: SQs in the SSD's CMB, shadow doorbells.

std::uint64_t ssd_read_requests(const nlohmann::json& r) {
  for (const nlohmann::json& link : r["pcie"]["links"]) {
    if (link["direction"] == "ssd0->sw0" && link["by_class"].contains("read_request")) {
      return link["by_class"]["read_request"]["tlps"].get<std::uint64_t>();
    }
  }
  return 0;
}

TEST(QueueOptions, SqInTheCmbRemovesTheSsdsSqeFetchReads) {
  const std::vector<std::string> common = {"scenario.threads=256", "scenario.ios=1024",
                                           "topology.nodes.ssd0.cmb_mib=64"};
  auto with = [&](const std::string& placement) {
    std::vector<std::string> sets = common;
    sets.push_back("scenario.sq_placement=" + placement);
    return run_with(default_topology_file(), sets);
  };
  const nlohmann::json gpu = with("gpu");
  const nlohmann::json cmb = with("cmb");
  expect_clean(gpu, 1024, "sq in gpu memory");
  expect_clean(cmb, 1024, "sq in cmb");
  // Reads (4 KiB randread) need no read from the SSD besides SQE fetches
  // and the bring-up's admin fetches; with the SQ in the CMB only the
  // latter remain.
  const std::uint64_t fetches_gpu = ssd_read_requests(gpu);
  const std::uint64_t fetches_cmb = ssd_read_requests(cmb);
  EXPECT_GE(fetches_gpu, 1024u / 32);
  EXPECT_LT(fetches_cmb, 16u);
  EXPECT_GT(fetches_gpu, 4 * fetches_cmb);
}

TEST(QueueOptions, ShadowDoorbellsReduceMmioDoorbellWrites) {
  const std::vector<std::string> common = {"scenario.threads=256", "scenario.ios=1024",
                                           "topology.nodes.ssd0.shadow_doorbells=true"};
  auto with = [&](bool shadow) {
    std::vector<std::string> sets = common;
    sets.push_back(std::string("scenario.shadow_doorbells=") + (shadow ? "true" : "false"));
    return run_with(default_topology_file(), sets);
  };
  const nlohmann::json plain = with(false);
  const nlohmann::json shadow = with(true);
  expect_clean(plain, 1024, "mmio doorbells");
  expect_clean(shadow, 1024, "shadow doorbells");
  const auto writes = [](const nlohmann::json& r) {
    return r["ssds"]["ssd0"]["doorbell_writes"].get<std::uint64_t>();
  };
  const auto mmio = [](const nlohmann::json& r) {
    return r["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>();
  };
  EXPECT_GT(writes(plain), 2 * writes(shadow));
  EXPECT_GT(mmio(plain), 2 * mmio(shadow));
}

// The extension scenarios validate on the topology whose SSD offers the
// extensions (they are refused on the default one: scenarios/nvme-ext/ is
// kept apart from the scenarios that run on it).
TEST(IndexedCompletion, ExtensionScenariosValidateOnTheExtensionTopology) {
  const std::string root = GPUNVME_SOURCE_DIR;
  const std::string topology = root + "/configs/topologies/nvme-ext.json";
  int scenarios = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root + "/scenarios/nvme-ext")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_config(topology, entry.path().string(), {}, 1));
    ++scenarios;
  }
  EXPECT_GE(scenarios, 1);
}

// Indexed completion (completion = cqe_at_slot on SSDs with
// indexed_completion) under every shared-queue submission and three CID
// schemes, on 8-entry queues that wrap many times: every I/O completes once,
// without error, and every stage sees it.
TEST(IndexedCompletion, EverySharedSubmissionAndCidSchemeKeepsTheInvariants) {
  const std::uint64_t ios = 256;
  for (const char* submission : {"per_command", "ticket_ready", "warp_batch"}) {
    for (const char* cid : {"sq_slot", "counter", "thread_pool"}) {
      for (const char* queues : {"1", "8"}) {
        const std::string what = std::string(submission) + "/" + cid + " queues=" + queues;
        expect_clean(run_with(default_topology_file(),
                              {"topology.nodes.ssd0.indexed_completion=true",
                               "scenario.completion=cqe_at_slot",
                               std::string("scenario.submission=") + submission,
                               std::string("scenario.cid_scheme=") + cid,
                               std::string("scenario.queues=") + queues, "scenario.queue_entries=8",
                               "scenario.threads=64", "scenario.iodepth=2",
                               "scenario.ios=" + std::to_string(ios)}),
                     ios, what);
      }
    }
  }
}

// One command by hand. With indexed completion the requester's poll of its
// own slot is the whole of the completion step: no CQ head to publish
// (cq_head_sync 0) and no CQ head doorbell (one MMIO store, the SQ
// doorbell, where cid_flags makes two); delivery is the acquire fence alone.
// The controller's path is the tail CQ's plus indexed_completion_ns of
// firmware time before the entry is written: with the cost at 0 the SSD's
// part (completion_wait) is the same as cid_flags'. The entry is written
// when the read's data has been handed to the link, and a small cost hides
// behind the 4 KiB still crossing it; once the cost is longer than that, each
// further nanosecond of it is a nanosecond of completion_wait: 10 us of
// firmware time is exactly 5 us slower than 5 us (the processors are idle,
// so booking it waits for nothing).
TEST(IndexedCompletion, OneCommandByHand) {
  auto one = [](const char* completion, const char* cost_ns) {
    return run_with(default_topology_file(),
                    {"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1",
                     "scenario.queues=1", "scenario.queue_entries=16",
                     "topology.nodes.gpu0.atomic_far_latency_ns=140",
                     "topology.nodes.gpu0.lane_loop_iteration_ns=0",
                     "topology.nodes.ssd0.indexed_completion=true",
                     std::string("topology.nodes.ssd0.indexed_completion_ns=") + cost_ns,
                     std::string("scenario.completion=") + completion});
  };
  const nlohmann::json flags = one("cid_flags", "0");
  const nlohmann::json free_slot = one("cqe_at_slot", "0");
  const nlohmann::json slot_5us = one("cqe_at_slot", "5000");
  const nlohmann::json slot_10us = one("cqe_at_slot", "10000");
  auto stage_ps = [](const nlohmann::json& r, const char* name) {
    EXPECT_EQ(r["stages"][name]["count"].get<int>(), 1) << name;
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  const long long F = std::llround(
      (param(free_slot, "fence_system_ns") + param(free_slot, "fence_l1_reload_ns")) * 1000.0);
  EXPECT_EQ(stage_ps(free_slot, "cq_head_sync"), 0);
  EXPECT_EQ(stage_ps(free_slot, "delivery"), F);
  EXPECT_EQ(stage_ps(free_slot, "completion_wait"), stage_ps(flags, "completion_wait"));
  EXPECT_GT(stage_ps(slot_5us, "completion_wait"), stage_ps(free_slot, "completion_wait"));
  EXPECT_EQ(stage_ps(slot_10us, "completion_wait") - stage_ps(slot_5us, "completion_wait"),
            5000000);
  const auto mmio = [](const nlohmann::json& r) {
    return r["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>();
  };
  EXPECT_EQ(mmio(flags), 2u);
  EXPECT_EQ(mmio(free_slot), 1u);
}

// Controller-polled shadow doorbells, one command by hand: the doorbell step
// is the shadow word's store, the system fence after it and the turn
// store (2 stores and a fence, where an MMIO doorbell costs a PCIe store, the
// fence after it and the turn store), and with indexed completion the GPU
// makes no MMIO store at all. The controller applies the new tail after
// shadow_poll_read_ns on a processor: 2 us of it is exactly 1 us slower
// than 1 us.
TEST(ShadowPolling, OneCommandByHand) {
  auto one = [](const char* read_ns) {
    return run_with(default_topology_file(),
                    {"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1",
                     "scenario.queues=1", "scenario.queue_entries=16",
                     "scenario.shadow_doorbells=true", "scenario.completion=cqe_at_slot",
                     "topology.nodes.gpu0.lane_loop_iteration_ns=0",
                     "topology.nodes.ssd0.indexed_completion=true",
                     "topology.nodes.ssd0.shadow_doorbells=true",
                     "topology.nodes.ssd0.shadow_doorbell_polling=true",
                     std::string("topology.nodes.ssd0.shadow_poll_read_ns=") + read_ns});
  };
  const nlohmann::json r1 = one("1000");
  const nlohmann::json r2 = one("2000");
  expect_clean(r1, 1, "polled shadow doorbells");
  auto ps = [&](const char* name) { return std::llround(param(r1, name) * 1000.0); };
  auto stage_ps = [](const nlohmann::json& r, const char* name) {
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  EXPECT_EQ(stage_ps(r1, "doorbell"),
            2 * ps("store_issue_ns") + ps("fence_system_ns") + ps("fence_l1_reload_ns"));
  EXPECT_EQ(r1["gpus"]["gpu0"]["mmio_stores"].get<std::uint64_t>(), 0u);
  EXPECT_EQ(stage_ps(r2, "completion_wait") - stage_ps(r1, "completion_wait"), 1000000);
}

}  // namespace
}  // namespace gpunvme

namespace gpunvme {
namespace {

// ---------------------------------------------------------------------------
// Wide CIDs (cid_scheme = thread_wide on SSDs with wide_cids): each thread's
// own range of 32-bit CIDs, thread << k | I/O index.

// Under every shared-queue submission (warp doorbells included) and every
// completion that matches CQEs by CID or slot, on 8-entry queues that wrap
// many times: every I/O completes once, without error, and every stage sees
// it (the stage records and the CQ arrival watch key I/Os by the 32-bit CID
// from CDW2 and DW1).
TEST(WideCid, EverySubmissionAndCompletionKeepsTheInvariants) {
  const std::uint64_t ios = 256;
  for (const char* submission : {"per_command", "ticket_ready", "warp_batch", "warp_doorbell"}) {
    for (const char* completion : {"cid_flags", "cq_scan", "cqe_at_slot"}) {
      const std::string what = std::string(submission) + "/" + completion;
      expect_clean(
          run_with(
              default_topology_file(),
              {"topology.nodes.ssd0.wide_cids=true", "topology.nodes.ssd0.warp_doorbells=true",
               "topology.nodes.ssd0.indexed_completion=true", "scenario.cid_scheme=thread_wide",
               std::string("scenario.submission=") + submission,
               std::string("scenario.completion=") + completion, "scenario.queues=2",
               "scenario.queue_entries=8", "scenario.threads=64", "scenario.iodepth=2",
               "scenario.ios=" + std::to_string(ios)}),
          ios, what);
    }
  }
}

// 4096 threads on one queue at iodepth 32: thread-owned 16-bit CIDs would
// need 128 warps x 1024 = 131,072 CIDs, and thread_pool is refused
// (StrategyConfig above). With wide CIDs thread t owns t << 5 | 0..31, so
// threads t and t + 2048 share the low 16 bits of their CIDs: with 4096
// entries in the queue both are outstanding at once, and a controller or a
// completion path that looked at 16 bits only would see Command ID
// Conflicts or deliver one's completion to the other. Every I/O completes
// once and clean, with no conflict.
TEST(WideCid, MoreThreadsPerQueueThanSixteenBitCidsCanNumber) {
  const std::uint64_t ios = 8192;  // two per thread
  const nlohmann::json r =
      run_with(default_topology_file(),
               {"topology.nodes.ssd0.wide_cids=true", "scenario.cid_scheme=thread_wide",
                "scenario.queues=1", "scenario.queue_entries=4096", "scenario.threads=4096",
                "scenario.iodepth=32", "scenario.ios=" + std::to_string(ios)});
  expect_clean(r, ios, "4096 threads on one queue");
  EXPECT_EQ(r["ssds"]["ssd0"]["cid_conflicts"].get<std::uint64_t>(), 0u);
}

// One command by hand. thread_wide computes its CID as thread_pool does
// (no shared word): the same cid_allocation. The counter scheme's atomic
// on the queue's counter costs a far atomic more. On the controller,
// wide_cid_ns is booked on an idle processor before the completion entry is
// written: 10 us of it is exactly 5 us slower than 5 us.
TEST(WideCid, OneCommandByHand) {
  auto one = [](const char* cid, const char* cost_ns) {
    return run_with(
        default_topology_file(),
        {"scenario.strategy=warp_batch", "scenario.threads=1", "scenario.ios=1",
         "scenario.queues=1", "scenario.queue_entries=16",
         "topology.nodes.gpu0.lane_loop_iteration_ns=0", "topology.nodes.ssd0.wide_cids=true",
         std::string("topology.nodes.ssd0.wide_cid_ns=") + cost_ns,
         std::string("scenario.cid_scheme=") + cid});
  };
  const nlohmann::json pool = one("thread_pool", "0");
  const nlohmann::json counter = one("counter", "0");
  const nlohmann::json wide_free = one("thread_wide", "0");
  const nlohmann::json wide_5us = one("thread_wide", "5000");
  const nlohmann::json wide_10us = one("thread_wide", "10000");
  expect_clean(wide_5us, 1, "one wide command");
  auto stage_ps = [](const nlohmann::json& r, const char* name) {
    EXPECT_EQ(r["stages"][name]["count"].get<int>(), 1) << name;
    return std::llround(r["stages"][name]["mean"].get<double>() * 1000.0);
  };
  EXPECT_EQ(stage_ps(wide_free, "cid_allocation"), stage_ps(pool, "cid_allocation"));
  EXPECT_GT(stage_ps(counter, "cid_allocation"), stage_ps(wide_free, "cid_allocation"));
  // Without firmware time, a wide command's SSD part is a 16-bit one's.
  EXPECT_EQ(stage_ps(wide_free, "completion_wait"), stage_ps(pool, "completion_wait"));
  EXPECT_EQ(stage_ps(wide_10us, "completion_wait") - stage_ps(wide_5us, "completion_wait"),
            5000000);
}

}  // namespace
}  // namespace gpunvme
