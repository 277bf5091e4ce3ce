// The controller's completion posting: completion queue entries written at
// the CQ's tail with its phase tag and the SQ's head, entries held back while
// their CQ is full and posted as the host frees slots, and the MSI-X message
// that follows each entry of a CQ with interrupts enabled.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/nvme/queue_set.h"
#include "sim/core/protocol/nvme_entries.h"

namespace gpunvme::nvme {

// What posting needs from the controller.
struct CompletionHooks {
  // The status field (phase tag included) that the CQ slot at `addr` holds.
  std::function<std::uint16_t(std::uint64_t addr)> load_status;
  // A posted write of `len` bytes from `data` to `addr`. The MSI-X message is
  // written after its entry on the same path, so it cannot overtake it.
  std::function<void(std::uint64_t addr, std::uint32_t len, const void* data)> write;
  // CQ `cqid`'s slot `slot` still holds an entry of the current phase: the
  // host freed a slot it had not consumed, or handed over a CQ it had not
  // zeroed. `entry` is not posted (the controller stops the run here).
  std::function<void(std::uint16_t cqid, std::uint32_t slot, const CompletionEntry& entry)>
      slot_not_consumed;
};

class CompletionPoster {
 public:
  // An MSI-X table of `vectors` entries, none programmed, for the queues of
  // `queues`.
  CompletionPoster(QueueSet& queues, std::size_t vectors, CompletionHooks hooks);

  std::size_t vectors() const { return msix_.size(); }
  // Programs table entry `vector` (below vectors()): the message is a write
  // of `data` (4 B) to `address`.
  void set_vector(std::uint16_t vector, std::uint64_t address, std::uint32_t data);

  // Posts `entry` (DW0, SQ id, CID, status and DNR as completed) to CQ
  // `cqid`, at its tail with the CQ's phase and the SQ's current head, then
  // the CQ's MSI-X message if it has interrupts enabled on a programmed
  // vector; or holds the entry back while the CQ is full.
  void post(std::uint16_t cqid, const CompletionEntry& entry);
  // Posts `entry` to indexed CQ `cqid` at slot `slot` (its command's SQ
  // slot) with phase tag `phase` (its command's SQ lap), then the MSI-X
  // message as post() does. Never held back: the slot is the command's own,
  // consumed by the host before it could reuse the SQ slot.
  void post_at_slot(std::uint16_t cqid, const CompletionEntry& entry, std::uint32_t slot,
                    bool phase);
  // After the host moved CQ `cqid`'s head: posts the entries held back for
  // it, oldest first, while the CQ has room.
  void release_held(std::uint16_t cqid);

  std::uint64_t interrupts() const { return interrupts_; }
  // Entries that found their CQ full and were held back.
  std::uint64_t cq_full_stalls() const { return cq_full_stalls_; }

 private:
  void signal(const CompletionQueue& cq);
  struct MsixEntry {
    std::uint64_t address = 0;  // 0 = not programmed
    std::uint32_t data = 0;
  };

  QueueSet& queues_;
  std::vector<MsixEntry> msix_;
  CompletionHooks hooks_;
  std::uint64_t interrupts_ = 0;
  std::uint64_t cq_full_stalls_ = 0;
};

}  // namespace gpunvme::nvme
