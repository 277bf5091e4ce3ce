// The strategy name tables (sim/core/algo/strategy_names.h) against the names the
// scenarios, the README and the hardware backend use, written out here by
// hand.
#include "sim/core/algo/strategy_names.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gpunvme::algo {
namespace {

using Names = std::vector<std::string>;

TEST(StrategyNames, EveryNamedStrategyHasOneEntryAndTheDefaultComesFirst) {
  const std::vector<std::pair<NamedStrategy, std::string>> expected = {
      {NamedStrategy::WarpBatch, "warp_batch"},
      {NamedStrategy::AllThreads, "all_threads"},
      {NamedStrategy::BamTicket, "bam_ticket"},
      {NamedStrategy::IoAgents, "io_agents"},
      {NamedStrategy::PerWarpQueue, "per_warp_queue"}};
  EXPECT_EQ(strategy_names(),
            (Names{"warp_batch", "all_threads", "bam_ticket", "io_agents", "per_warp_queue"}));
  for (const auto& [value, name] : expected) {
    EXPECT_EQ(strategy_entry(value).name, name);
    ASSERT_NE(find_strategy(name), nullptr) << name;
    EXPECT_EQ(find_strategy(name)->value, value) << name;
  }
  EXPECT_EQ(find_strategy("warp_batchh"), nullptr);
  EXPECT_EQ(find_strategy(""), nullptr);
  EXPECT_EQ(find_strategy("WARP_BATCH"), nullptr);
}

TEST(StrategyNames, PolicyFieldsAllowTheirOptionsAfterStrategy) {
  EXPECT_EQ(allowed_names("queue_mapping"),
            (Names{"strategy", "per_sm", "per_warp", "round_robin"}));
  EXPECT_EQ(allowed_names("cid_scheme"), (Names{"strategy", "sq_slot", "counter", "counter_lock",
                                                "warp_partition", "thread_pool", "thread_wide"}));
  EXPECT_EQ(allowed_names("submission"), (Names{"strategy", "per_command", "ticket_ready",
                                                "warp_batch", "exclusive", "warp_doorbell"}));
  EXPECT_EQ(allowed_names("completion"), (Names{"strategy", "cq_scan", "cid_flags", "polling_warps",
                                                "owner_drain", "cqe_at_slot", "cid_bitmap"}));
  EXPECT_EQ(allowed_names("ssd_mapping"), (Names{"interleave", "stripe"}));
  EXPECT_TRUE(allowed_names("bs").empty());
}

TEST(StrategyNames, NamesAndValuesRoundTrip) {
  EXPECT_EQ(parse_name(kCidSchemeNames, "counter_lock"), CidScheme::CounterLock);
  EXPECT_EQ(parse_name(kSubmissionNames, "ticket_ready"), Submission::TicketReady);
  EXPECT_EQ(parse_name(kCompletionNames, "strategy"), std::nullopt);  // not an option itself
  EXPECT_EQ(name_of(kQueueMappingNames, QueueMapping::RoundRobin), "round_robin");
  // io_agents' own policies have no scenario name.
  EXPECT_EQ(name_of(kQueueMappingNames, QueueMapping::PerAgent), "");
  EXPECT_EQ(name_of(kSubmissionNames, Submission::AgentBatch), "");
}

TEST(StrategyNames, DescribeTextListsEachStrategyInOrder) {
  EXPECT_EQ(strategy_field_doc(),
            "GPU-side I/O strategy: warp_batch = per-warp queues mapping, a warp claims "
            "slots for all its lanes, one doorbell per warp in ticket order, waiters drain "
            "the CQ into per-CID flags; all_threads = queue per SM, every thread an atomic "
            "CID and ticket, its own doorbell, CQ scan; bam_ticket = ticket claim, ready "
            "marks, a lock winner rings one doorbell per run, CQ scan; io_agents = compute "
            "warps post requests to agent warps that own the queues and batch doorbells; "
            "per_warp_queue = each warp owns a queue, no shared atomics");
}

TEST(StrategyNames, ResolvingAppliesOverridesOnTheNamedStrategy) {
  ResolvedStrategy r;
  StrategyFields f;
  f.strategy = "all_threads";
  ASSERT_FALSE(resolve_strategy(f, r));
  EXPECT_EQ(r.named, NamedStrategy::AllThreads);
  EXPECT_EQ(r.strategy.mapping, QueueMapping::PerSm);
  EXPECT_EQ(r.strategy.cid, CidScheme::Counter);
  EXPECT_EQ(r.strategy.submission, Submission::PerCommand);
  EXPECT_EQ(r.strategy.completion, Completion::CqScan);
  EXPECT_FALSE(r.agents);
  EXPECT_FALSE(r.pollers);

  f.strategy = "warp_batch";
  f.completion = "polling_warps";
  f.cid_scheme = "thread_pool";
  f.ssd_mapping = "stripe";
  ASSERT_FALSE(resolve_strategy(f, r));
  EXPECT_EQ(r.named, NamedStrategy::WarpBatch);
  EXPECT_EQ(r.strategy.mapping, QueueMapping::PerWarp);  // the strategy's own
  EXPECT_EQ(r.strategy.cid, CidScheme::ThreadPool);
  EXPECT_EQ(r.strategy.completion, Completion::PollingWarps);
  EXPECT_EQ(r.ssd_mapping, SsdMapping::Stripe);
  EXPECT_TRUE(r.pollers);

  StrategyFields agents;
  agents.strategy = "io_agents";
  ASSERT_FALSE(resolve_strategy(agents, r));
  EXPECT_TRUE(r.agents);
  EXPECT_FALSE(r.pollers);
  EXPECT_EQ(r.strategy.submission, Submission::AgentBatch);
}

// An unknown name is reported, never taken for the default strategy or left
// at the strategy's own option.
TEST(StrategyNames, UnknownNamesAreReportedWithTheirField) {
  ResolvedStrategy r;
  StrategyFields f;
  f.strategy = "warp_batchh";
  auto unknown = resolve_strategy(f, r);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->field, "strategy");
  EXPECT_EQ(unknown->value, "warp_batchh");

  const std::vector<std::pair<std::string, std::string>> bad = {{"queue_mapping", "per_block"},
                                                                {"cid_scheme", "random"},
                                                                {"submission", "batch"},
                                                                {"completion", "interrupt"},
                                                                {"ssd_mapping", "strategy"}};
  for (const auto& [field, value] : bad) {
    StrategyFields g;
    g.strategy = "bam_ticket";
    if (field == "queue_mapping") g.queue_mapping = value;
    if (field == "cid_scheme") g.cid_scheme = value;
    if (field == "submission") g.submission = value;
    if (field == "completion") g.completion = value;
    if (field == "ssd_mapping") g.ssd_mapping = value;
    unknown = resolve_strategy(g, r);
    ASSERT_TRUE(unknown) << field;
    EXPECT_EQ(unknown->field, field);
    EXPECT_EQ(unknown->value, value);
  }
}

TEST(StrategyNames, IoAgentsFixesItsPoliciesAndItsCidScheme) {
  StrategyFields f;
  f.strategy = "io_agents";
  EXPECT_FALSE(refused_option(f, NamedStrategy::IoAgents, CidScheme::SqSlot));
  f.submission = "warp_batch";
  f.completion = "cid_flags";
  auto refused = refused_option(f, NamedStrategy::IoAgents, CidScheme::SqSlot);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->field, "submission");  // before completion
  EXPECT_EQ(refused->value, "warp_batch");
  EXPECT_EQ(refused->why, "io_agents fixes it: agents own their queues; leave it \"strategy\"");

  StrategyFields g;
  g.strategy = "io_agents";
  g.cid_scheme = "counter";
  refused = refused_option(g, NamedStrategy::IoAgents, CidScheme::Counter);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->field, "cid_scheme");
  EXPECT_EQ(refused->value, "counter");
  EXPECT_EQ(refused->why, "io_agents uses CID = SQ slot (an agent owns its queues)");

  // The queue strategies take every option (their combinations are checked
  // against the GPU and queues elsewhere).
  StrategyFields h;
  h.strategy = "warp_batch";
  h.queue_mapping = "round_robin";
  h.cid_scheme = "counter";
  EXPECT_FALSE(refused_option(h, NamedStrategy::WarpBatch, CidScheme::Counter));
}

}  // namespace
}  // namespace gpunvme::algo
