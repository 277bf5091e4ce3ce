// The dimensions a GPU I/O strategy is composed of, and the named strategies.
//
// A strategy picks a queue mapping (which queue a thread's I/O goes to), a
// CID scheme (how the command identifier is chosen), a submission policy
// (how SQ slots are claimed and the tail doorbell is rung) and a completion
// policy (how a thread learns that its command finished and who moves the
// CQ head). Seeds 001 and 003 list the options; BaM (ASPLOS 2023) is one
// point of the space.
#pragma once

#include <cstdint>

#include "sim/core/protocol/portability.h"

namespace gpunvme::algo {

enum class QueueMapping : std::uint8_t {
  PerSm,       // queue = the thread's SM (modulo the queues)
  PerWarp,     // queue = the thread's warp (modulo the queues)
  PerAgent,    // queue = the I/O-agent warp serving the thread (io_agents only)
  RoundRobin,  // each I/O of a thread takes the next queue of a shared pool
};

// How the queues of several SSDs are chosen.
enum class SsdMapping : std::uint8_t {
  Interleave,  // the mapping picks among all queues of all SSDs (queue i of SSD k sits at i * ssds
               // + k)
  Stripe,      // the I/O's block picks the SSD (block % ssds); the mapping picks the queue on it
};

enum class CidScheme : std::uint8_t {
  SqSlot,         // CID = the SQ slot the command occupies
  Counter,        // one atomic counter per queue, CID = counter mod cid_space
  CounterLock,    // counter candidate, then an atomic lock bit per CID; retry when taken
  WarpPartition,  // CID = warp's partition << k | warp-local id (no shared atomics)
  ThreadPool,     // CID = thread's static pool: (thread partition) * iodepth + round
  ThreadWide,  // 32-bit CID = thread's own range: (thread partition) << k | its I/O's index (wide
               // CIDs, a proposed NVMe extension the SSD must offer); no allocation, no 16-bit
               // limit
};

enum class Submission : std::uint8_t {
  PerCommand,   // every thread: ticket, entry, wait for its turn, its own doorbell
  TicketReady,  // every thread: ticket, entry, ready mark; a lock winner publishes a run of ready
                // entries with one doorbell
  WarpBatch,    // the warp's leader claims the lanes' slots, lanes fill, one doorbell per warp in
                // ticket order
  Exclusive,    // the warp owns the queue: no shared counters, one doorbell per batch
  AgentBatch,  // I/O-agent warps take posted requests and ring every batch_size commands or after a
               // timeout
  WarpDoorbell,  // as WarpBatch, but one warp doorbell names the warp's run (a proposed NVMe
                 // extension the SSD must offer): the controller orders the runs, no turn wait
};

enum class Completion : std::uint8_t {
  CqScan,    // a waiter scans the CQ for its own CID (phase check) and marks it consumed; a lock
             // winner moves the head
  CidFlags,  // whoever holds the CQ lock drains it into per-CID flags (indexed completion); waiters
             // poll their flag
  PollingWarps,  // dedicated polling warps drain their queues into per-CID flags
  OwnerDrain,    // the queue's single owner (per-warp queue, I/O agent) drains it
  SlotIndexed,   // indexed completion (a proposed NVMe extension the SSD must offer): the CQE lands
                 // at the command's SQ slot; each requester polls its own slot, no lock, no head
  CidBitmap,     // batch completion notification (a proposed NVMe extension the SSD must offer):
                 // the SSD flips a bit per successful CID in a bitmap, one word per 32 CIDs; the
                 // CQ ring holds failed commands only, drained into the per-CID flags
};

struct Strategy {
  QueueMapping mapping = QueueMapping::PerWarp;
  CidScheme cid = CidScheme::SqSlot;
  Submission submission = Submission::WarpBatch;
  Completion completion = Completion::CidFlags;
};

// The named strategies (scenario field `strategy`); each policy field of a
// scenario may override its part where the combination is meaningful.
enum class NamedStrategy : std::uint8_t {
  AllThreads,
  BamTicket,
  WarpBatch,
  IoAgents,
  PerWarpQueue
};

GPUNVME_HD constexpr Strategy named_strategy(NamedStrategy s) {
  switch (s) {
    case NamedStrategy::AllThreads:
      // Seed 003's naive submit_io: every thread an atomic CID and slot, a
      // fence and its own doorbell; completion by scanning the CQ.
      return {QueueMapping::PerSm, CidScheme::Counter, Submission::PerCommand, Completion::CqScan};
    case NamedStrategy::BamTicket:
      // BaM: ticket slot claim, ready marks, a lock winner rings one doorbell
      // for a run; CID = slot; CQ scan by CID.
      return {QueueMapping::PerWarp, CidScheme::SqSlot, Submission::TicketReady,
              Completion::CqScan};
    case NamedStrategy::WarpBatch:
      return {QueueMapping::PerWarp, CidScheme::SqSlot, Submission::WarpBatch,
              Completion::CidFlags};
    case NamedStrategy::IoAgents:
      return {QueueMapping::PerAgent, CidScheme::SqSlot, Submission::AgentBatch,
              Completion::OwnerDrain};
    case NamedStrategy::PerWarpQueue:
      return {QueueMapping::PerWarp, CidScheme::SqSlot, Submission::Exclusive,
              Completion::OwnerDrain};
  }
  return {};
}

}  // namespace gpunvme::algo
