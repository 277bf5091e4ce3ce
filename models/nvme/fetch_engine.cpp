#include "models/nvme/fetch_engine.h"

#include <algorithm>
#include <utility>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_warp_doorbell.h"

namespace gpunvme::nvme {

FetchEngine::FetchEngine(QueueSet& queues, ProcessorPolicy& processors, FetchLimits limits,
                         std::uint8_t burst_log2, FetchHooks hooks)
    : queues_(queues),
      processors_(processors),
      limits_(limits),
      hooks_(std::move(hooks)),
      arbiter_(burst_log2) {}

void FetchEngine::kick() {
  const Picoseconds now = hooks_.now();
  if (now < paused_until_) return;  // resetting: the end of the reset kicks again
  while (fetches_in_flight_ < limits_.max_fetches) {
    const std::uint32_t io_room = active_ + entries_fetching_ >= limits_.max_active
                                      ? 0
                                      : limits_.max_active - active_ - entries_fetching_;
    const std::optional<std::uint16_t> next = arbiter_.next(io_room > 0);
    if (!next) {
      // Only I/O SQs are left ready (the admin SQ is served regardless): they
      // wait for a command slot to free.
      if (io_room == 0 && arbiter_.any_ready() && !slot_stall_since_) slot_stall_since_ = now;
      return;
    }
    const std::uint16_t qid = *next;
    SubmissionQueue& sq = queues_.sq(qid);
    std::uint32_t turn = unfetched(sq);
    if (turn == 0) continue;
    // A queue that takes warp doorbells is fetched a warp's run at a time.
    const std::uint32_t read_entries = sq.warp_doorbells
                                           ? std::max(limits_.fetch_burst, kWarpDoorbellMaxRun)
                                           : limits_.fetch_burst;
    turn = std::min(turn, sq.warp_doorbells ? std::max(arbiter_.burst(), kWarpDoorbellMaxRun)
                                            : arbiter_.burst());
    if (qid != kAdminQueueId) turn = std::min(turn, io_room);
    // The processor policy may hold an I/O SQ back or shorten its turn.
    const bool polled = qid != kAdminQueueId && processors_.one_read_per_turn();
    if (qid != kAdminQueueId) {
      turn = processors_.fetch_turn(qid, turn, read_entries, now);
      if (turn == 0) continue;
    }
    const std::uint64_t generation = hooks_.generation();
    while (turn > 0 && fetches_in_flight_ < limits_.max_fetches) {
      const std::uint32_t from = ring_advance(sq.head, sq.fetching, sq.entries);
      const std::uint32_t count = std::min({turn, read_entries, sq.entries - from});
      sq.fetching += count;
      if (qid != kAdminQueueId) {
        account_slots();
        entries_fetching_ += count;
        slots_busy_max_ = std::max(slots_busy_max_, active_ + entries_fetching_);
        if (slot_stall_since_) {
          // A stall counts once time passed in it: a slot freed and taken in
          // the same instant held nothing back.
          if (now > *slot_stall_since_) {
            ++slot_stalls_;
            slot_stall_ps_ += now - *slot_stall_since_;
          }
          slot_stall_since_.reset();
        }
      }
      ++fetches_in_flight_;
      turn = polled ? 0 : turn - count;
      auto arrived = [this, qid, from, count, generation](const std::uint8_t* data, std::uint32_t) {
        --fetches_in_flight_;
        if (qid != kAdminQueueId) {
          account_slots();
          entries_fetching_ -= count;
        }
        const bool current = qid != kAdminQueueId && generation == hooks_.generation();
        if (current) processors_.read_arrived(qid);
        hooks_.deliver(qid, from, data, count, generation);
        if (current) processors_.read_dispatched(qid, hooks_.now());
        kick();
      };
      hooks_.read(sq.base + std::uint64_t{from} * kSqEntrySize, count * kSqEntrySize,
                  std::move(arrived));
    }
    if (unfetched(sq) > 0) arbiter_.mark_ready(qid);
  }
}

void FetchEngine::command_started() {
  account_slots();
  ++active_;
}

void FetchEngine::command_ended() {
  account_slots();
  --active_;
}

void FetchEngine::account_slots() {
  const Picoseconds now = hooks_.now();
  const Picoseconds elapsed = now - slots_since_;
  if (elapsed != 0) {
    slot_ps_ += static_cast<long double>(active_) * elapsed;
    reserved_slot_ps_ += static_cast<long double>(active_ + entries_fetching_) * elapsed;
  }
  slots_since_ = now;
}

nlohmann::json FetchEngine::slot_statistics(Picoseconds io_span) const {
  const Picoseconds now = hooks_.now();
  // Occupancy is averaged over the I/O span (first I/O doorbell to last I/O
  // completion), outside which no I/O command holds a slot.
  auto over_span = [io_span](long double integral) {
    return io_span == 0 ? 0.0 : static_cast<double>(integral / static_cast<long double>(io_span));
  };
  const auto pending = static_cast<long double>(now - slots_since_);
  const long double command_ps = slot_ps_ + pending * active_;
  const long double reserved_ps = reserved_slot_ps_ + pending * (active_ + entries_fetching_);
  const Picoseconds open_stall = slot_stall_since_ ? now - *slot_stall_since_ : 0;
  return {{"count", limits_.max_active},
          {"busy_mean", over_span(reserved_ps)},
          {"busy_max", slots_busy_max_},
          {"commands_mean", over_span(command_ps)},
          {"fetch_stalls", slot_stalls_ + (open_stall > 0 ? 1 : 0)},
          {"stalled_ns", ps_to_ns(slot_stall_ps_ + open_stall)}};
}

}  // namespace gpunvme::nvme
