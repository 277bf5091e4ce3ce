// The controller's fetch engine: which SQ is served next (the Arbiter), the
// command slots an I/O command holds from the request of its entry until its
// completion is posted (max_active_commands), and the reads of submission
// entries from the SQ rings (sq_fetch_burst entries per read at most, never
// across the ring's end, max_outstanding_fetches reads in flight).
//
// The engine reads entries; what they become is the controller's business:
// each read's entries are handed over (FetchHooks::deliver), and the
// controller reports back when an I/O command takes its slot as active
// (command_started) and when the slot frees (command_ended). The processor
// policy may hold an I/O SQ back or shorten its turn, and hears when its
// reads arrive.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "models/nvme/arbiter.h"
#include "models/nvme/command_processors.h"
#include "models/nvme/queue_set.h"
#include "sim/core/protocol/nvme_queue.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

// Entries rung on `sq` that are neither fetched nor being fetched.
inline std::uint32_t unfetched(const SubmissionQueue& sq) {
  return ring_occupied(ring_advance(sq.head, sq.fetching, sq.entries), sq.tail, sq.entries);
}

// The engine's limits, from the controller's parameters.
struct FetchLimits {
  std::uint32_t fetch_burst = 8;    // sq_fetch_burst: entries per read at most
  std::uint32_t max_fetches = 8;    // max_outstanding_fetches: reads in flight at most
  std::uint32_t max_active = 1024;  // max_active_commands: the command slots
};

// What the engine needs from the controller.
struct FetchHooks {
  using ReadDone = std::function<void(const std::uint8_t* data, std::uint32_t len)>;
  // Simulated time.
  std::function<Picoseconds()> now;
  // A read of `len` bytes at `addr` (entries of an SQ ring); `done` when the
  // data has arrived.
  std::function<void(std::uint64_t addr, std::uint32_t len, ReadDone done)> read;
  // The `count` entries of SQ `qid` from slot `first` on, read in controller
  // generation `generation`, have arrived at `data`: the controller takes
  // them in (moves the SQ's head, drops them when a reset came between).
  std::function<void(std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                     std::uint32_t count, std::uint64_t generation)>
      deliver;
  // The controller's reset count.
  std::function<std::uint64_t()> generation;
};

class FetchEngine {
 public:
  // Fetches from the SQs of `queues` for the commands `processors` run; an
  // arbitration burst of 2^`burst_log2` at reset.
  FetchEngine(QueueSet& queues, ProcessorPolicy& processors, FetchLimits limits,
              std::uint8_t burst_log2, FetchHooks hooks);

  Arbiter& arbiter() { return arbiter_; }
  const Arbiter& arbiter() const { return arbiter_; }
  std::uint32_t max_active() const { return limits_.max_active; }

  // SQ `qid` has entries to fetch (a doorbell, or the policy offering it
  // again): it joins the arbiter's turn order.
  void mark_ready(std::uint16_t qid) { arbiter_.mark_ready(qid); }
  // Serves SQs in the arbiter's order: each turn takes up to the arbitration
  // burst from one SQ, in reads of at most sq_fetch_burst entries that never
  // cross the ring's end, while read slots and command slots last.
  void kick();
  // Nothing is fetched before `until` (a reset being recovered from); the
  // controller kicks the engine again then.
  void pause_until(Picoseconds until) { paused_until_ = std::max(paused_until_, until); }
  Picoseconds paused_until() const { return paused_until_; }

  // Command slots: an I/O command whose entry arrived holds its slot as
  // active until command_ended (its completion posted, or dropped by a reset).
  void command_started();
  void command_ended();
  // Every slot is taken (active or reserved by a read in flight).
  bool slots_full() const { return active_ + entries_fetching_ >= limits_.max_active; }
  std::uint32_t active() const { return active_; }
  std::uint32_t entries_fetching() const { return entries_fetching_; }
  std::uint32_t reads_in_flight() const { return fetches_in_flight_; }

  // The controller's "slots" statistics: count, busy_max, busy_mean and
  // commands_mean (slots reserved or active, and active, averaged over
  // `io_span`, 0 when it is), fetch_stalls and stalled_ns (times and time
  // an I/O SQ waited for a slot; one still open counts to now).
  nlohmann::json slot_statistics(Picoseconds io_span) const;

 private:
  // Integrates slot occupancy up to now; call before it changes.
  void account_slots();

  QueueSet& queues_;
  ProcessorPolicy& processors_;
  FetchLimits limits_;
  FetchHooks hooks_;
  Arbiter arbiter_;
  Picoseconds paused_until_ = 0;
  std::uint32_t fetches_in_flight_ = 0;
  std::uint32_t entries_fetching_ = 0;  // I/O entries requested, not yet arrived
  std::uint32_t active_ = 0;            // I/O commands between fetch and completion

  // Occupancy integrated over simulated time, so that results can report the
  // mean alongside the maximum.
  Picoseconds slots_since_ = 0;                  // last change of active_ or entries_fetching_
  long double slot_ps_ = 0;                      // integral of active_ over time
  long double reserved_slot_ps_ = 0;             // integral of active_ + entries_fetching_
  std::uint32_t slots_busy_max_ = 0;             // max of active_ + entries_fetching_
  std::uint64_t slot_stalls_ = 0;                // times the engine found no free slot
  std::optional<Picoseconds> slot_stall_since_;  // while an I/O SQ waits for a slot
  Picoseconds slot_stall_ps_ = 0;
};

}  // namespace gpunvme::nvme
