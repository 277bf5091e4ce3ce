// The names scenarios give the GPU I/O strategies and their policy options:
// one table per enum (name <-> value), and per named strategy its
// description and the options it lets a scenario choose over its own. The
// scenario's declaration, the parser, the strategy checks, the results and
// `describe` all read these tables; a name that is not in them is never
// taken for another. Header-only, no SystemC: the CUDA backend includes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/algo/policies.h"

namespace gpunvme::algo {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The value a scenario field means by "strategy": the named strategy's own.
inline constexpr std::string_view kStrategyDefault = "strategy";

inline constexpr EnumName<QueueMapping> kQueueMappingNames[] = {
    {QueueMapping::PerSm, "per_sm"},
    {QueueMapping::PerWarp, "per_warp"},
    {QueueMapping::RoundRobin, "round_robin"},
};
inline constexpr EnumName<SsdMapping> kSsdMappingNames[] = {
    {SsdMapping::Interleave, "interleave"},
    {SsdMapping::Stripe, "stripe"},
};
inline constexpr EnumName<CidScheme> kCidSchemeNames[] = {
    {CidScheme::SqSlot, "sq_slot"},           {CidScheme::Counter, "counter"},
    {CidScheme::CounterLock, "counter_lock"}, {CidScheme::WarpPartition, "warp_partition"},
    {CidScheme::ThreadPool, "thread_pool"},   {CidScheme::ThreadWide, "thread_wide"},
};
inline constexpr EnumName<Submission> kSubmissionNames[] = {
    {Submission::PerCommand, "per_command"},     {Submission::TicketReady, "ticket_ready"},
    {Submission::WarpBatch, "warp_batch"},       {Submission::Exclusive, "exclusive"},
    {Submission::WarpDoorbell, "warp_doorbell"},
};
inline constexpr EnumName<Completion> kCompletionNames[] = {
    {Completion::CqScan, "cq_scan"},
    {Completion::CidFlags, "cid_flags"},
    {Completion::PollingWarps, "polling_warps"},
    {Completion::OwnerDrain, "owner_drain"},
    {Completion::SlotIndexed, "cqe_at_slot"},
    {Completion::CidBitmap, "cid_bitmap"},
};

// A set of options of one policy enum, as bits (1 << value).
template <class E>
constexpr std::uint32_t option_bit(E value) {
  return std::uint32_t{1} << static_cast<unsigned>(value);
}
inline constexpr std::uint32_t kAnyOption = ~std::uint32_t{0};

struct StrategyEntry {
  NamedStrategy value;
  std::string_view name;
  std::string_view description;  // what `describe scenario` says of it
  // The options a scenario may set over the strategy's own. With
  // `policies_fixed`, queue_mapping, submission and completion must stay
  // "strategy" (`fixed_reason` says why); the CID scheme the fields resolve
  // to must be one of `cid_schemes` (bits of option_bit; `cid_reason` says
  // why).
  bool policies_fixed = false;
  std::uint32_t cid_schemes = kAnyOption;
  std::string_view fixed_reason = {};
  std::string_view cid_reason = {};
};

// In the order `describe` lists them; the first is the default.
inline constexpr StrategyEntry kStrategies[] = {
    {NamedStrategy::WarpBatch, "warp_batch",
     "per-warp queues mapping, a warp claims slots for all its lanes, one doorbell per warp in "
     "ticket order, waiters drain the CQ into per-CID flags"},
    {NamedStrategy::AllThreads, "all_threads",
     "queue per SM, every thread an atomic CID and ticket, its own doorbell, CQ scan"},
    {NamedStrategy::BamTicket, "bam_ticket",
     "ticket claim, ready marks, a lock winner rings one doorbell per run, CQ scan"},
    {NamedStrategy::IoAgents, "io_agents",
     "compute warps post requests to agent warps that own the queues and batch doorbells", true,
     option_bit(CidScheme::SqSlot),
     "io_agents fixes it: agents own their queues; leave it \"strategy\"",
     "io_agents uses CID = SQ slot (an agent owns its queues)"},
    {NamedStrategy::PerWarpQueue, "per_warp_queue", "each warp owns a queue, no shared atomics"},
};

template <class E, std::size_t N>
constexpr std::optional<E> parse_name(const EnumName<E> (&table)[N], std::string_view name) {
  for (const EnumName<E>& entry : table) {
    if (entry.name == name) return entry.value;
  }
  return std::nullopt;
}

// The name of `value`; empty for a value scenarios cannot name (PerAgent,
// AgentBatch: io_agents' own).
template <class E, std::size_t N>
constexpr std::string_view name_of(const EnumName<E> (&table)[N], E value) {
  for (const EnumName<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return {};
}

// The allowed values of a policy field: "strategy" first when the field
// may defer to the named strategy, then every name of the table.
template <class E, std::size_t N>
std::vector<std::string> option_names(const EnumName<E> (&table)[N], bool with_strategy) {
  std::vector<std::string> names;
  if (with_strategy) names.emplace_back(kStrategyDefault);
  for (const EnumName<E>& entry : table) names.emplace_back(entry.name);
  return names;
}

inline const StrategyEntry* find_strategy(std::string_view name) {
  for (const StrategyEntry& entry : kStrategies) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

inline const StrategyEntry& strategy_entry(NamedStrategy value) {
  for (const StrategyEntry& entry : kStrategies) {
    if (entry.value == value) return entry;
  }
  return kStrategies[0];  // unreachable: every NamedStrategy has an entry (strategy_names_test)
}

inline std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const StrategyEntry& entry : kStrategies) names.emplace_back(entry.name);
  return names;
}

// "GPU-side I/O strategy: NAME = DESCRIPTION; ..." for the scenario field.
inline std::string strategy_field_doc() {
  std::string doc = "GPU-side I/O strategy: ";
  for (std::size_t i = 0; i < std::size(kStrategies); ++i) {
    if (i != 0) doc += "; ";
    doc += std::string(kStrategies[i].name) + " = " + std::string(kStrategies[i].description);
  }
  return doc;
}

// A scenario's strategy fields as written ("strategy" defers a policy to the
// named strategy).
struct StrategyFields {
  std::string_view strategy;
  std::string_view queue_mapping = kStrategyDefault;
  std::string_view cid_scheme = kStrategyDefault;
  std::string_view submission = kStrategyDefault;
  std::string_view completion = kStrategyDefault;
  std::string_view ssd_mapping = "interleave";
};

// The strategy the fields resolve to.
struct ResolvedStrategy {
  NamedStrategy named = NamedStrategy::WarpBatch;
  Strategy strategy;
  SsdMapping ssd_mapping = SsdMapping::Interleave;
  bool agents = false;   // io_agents: agent warps own the queues
  bool pollers = false;  // completion = polling_warps: polling warps drain them
};

// The field whose value is not a name of its table.
struct UnknownName {
  std::string_view field;  // "strategy", "queue_mapping", ...
  std::string_view value;
};

namespace detail {
template <class E, std::size_t N>
bool apply_option(const EnumName<E> (&table)[N], std::string_view value, E& out) {
  if (value == kStrategyDefault) return true;
  const std::optional<E> parsed = parse_name(table, value);
  if (!parsed) return false;
  out = *parsed;
  return true;
}
}  // namespace detail

// Resolves the fields into `out`: the named strategy, each policy field that
// names an option replacing the strategy's own. Returns the first field
// whose name is unknown (nothing is guessed for it), or nullopt.
inline std::optional<UnknownName> resolve_strategy(const StrategyFields& fields,
                                                   ResolvedStrategy& out) {
  const StrategyEntry* entry = find_strategy(fields.strategy);
  if (entry == nullptr) return UnknownName{"strategy", fields.strategy};
  out = ResolvedStrategy{};
  out.named = entry->value;
  out.strategy = named_strategy(entry->value);
  Strategy& st = out.strategy;
  if (!detail::apply_option(kQueueMappingNames, fields.queue_mapping, st.mapping)) {
    return UnknownName{"queue_mapping", fields.queue_mapping};
  }
  if (!detail::apply_option(kCidSchemeNames, fields.cid_scheme, st.cid)) {
    return UnknownName{"cid_scheme", fields.cid_scheme};
  }
  if (!detail::apply_option(kSubmissionNames, fields.submission, st.submission)) {
    return UnknownName{"submission", fields.submission};
  }
  if (!detail::apply_option(kCompletionNames, fields.completion, st.completion)) {
    return UnknownName{"completion", fields.completion};
  }
  const std::optional<SsdMapping> ssd = parse_name(kSsdMappingNames, fields.ssd_mapping);
  if (!ssd) return UnknownName{"ssd_mapping", fields.ssd_mapping};
  out.ssd_mapping = *ssd;
  out.agents = entry->value == NamedStrategy::IoAgents;
  out.pollers = !out.agents && st.completion == Completion::PollingWarps;
  return std::nullopt;
}

// The names a strategy field of a scenario accepts (empty for another
// field): the declaration's choices and the allowed list of an error.
inline std::vector<std::string> allowed_names(std::string_view field) {
  if (field == "strategy") return strategy_names();
  if (field == "queue_mapping") return option_names(kQueueMappingNames, true);
  if (field == "cid_scheme") return option_names(kCidSchemeNames, true);
  if (field == "submission") return option_names(kSubmissionNames, true);
  if (field == "completion") return option_names(kCompletionNames, true);
  if (field == "ssd_mapping") return option_names(kSsdMappingNames, false);
  return {};
}

// A policy field the named strategy does not let a scenario set, the value it
// was given, and why.
struct RefusedOption {
  std::string_view field;
  std::string_view value;
  std::string_view why;
};

// The first field of `fields` that its named strategy `named` refuses: a
// fixed policy set to anything but "strategy", or a CID scheme (`cid`, as the
// fields resolve it) outside the strategy's. Checked in the order
// queue_mapping, submission, completion, cid_scheme.
inline std::optional<RefusedOption> refused_option(const StrategyFields& fields,
                                                   NamedStrategy named, CidScheme cid) {
  const StrategyEntry& entry = strategy_entry(named);
  if (entry.policies_fixed) {
    if (fields.queue_mapping != kStrategyDefault)
      return RefusedOption{"queue_mapping", fields.queue_mapping, entry.fixed_reason};
    if (fields.submission != kStrategyDefault)
      return RefusedOption{"submission", fields.submission, entry.fixed_reason};
    if (fields.completion != kStrategyDefault)
      return RefusedOption{"completion", fields.completion, entry.fixed_reason};
  }
  if ((entry.cid_schemes & option_bit(cid)) == 0) {
    return RefusedOption{"cid_scheme", fields.cid_scheme, entry.cid_reason};
  }
  return std::nullopt;
}

}  // namespace gpunvme::algo
