// The controller side of batch completion notification (a proposed NVMe
// extension, sim/core/protocol/nvme_batch_completion.h): per batch-notified
// CQ, the controller's copy of the completion bitmap, the batch being
// collected, its window timer and the ordered writes of posted batches.
// Failed commands (and CIDs beyond the bitmap) go to the CQ's ring as full
// entries instead.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/kernel/calendar.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

// What the notifier needs from the controller.
struct BatchHooks {
  std::function<Picoseconds()> now;
  std::function<void(Picoseconds when, Calendar::Callback callback)> schedule_at;
  // Books the firmware time of one batch on the command processors from
  // `ready`; returns when it is done.
  std::function<Picoseconds(Picoseconds ready)> book_firmware;
  // A posted write of `len` bytes from `data` to `addr`.
  std::function<void(std::uint64_t addr, std::uint32_t len, const void* data)> write;
  // Posts a full entry to CQ `cqid`'s ring (at its tail, held back while
  // the ring is full).
  std::function<void(std::uint16_t cqid, const CompletionEntry& entry)> post_entry;
};

class BatchNotifier {
 public:
  // Batches of up to `max_completions`, posted at the latest `window` after
  // their first completion (0: each completion at once).
  BatchNotifier(std::uint32_t max_completions, Picoseconds window, BatchHooks hooks);

  // CQ `cqid` becomes batch-notified with a bitmap of `words` words at
  // `bitmap`, all bits clear (the host hands it over zeroed).
  void open(std::uint16_t cqid, std::uint64_t bitmap, std::uint32_t words);
  // CQ `cqid` is deleted: its unposted batch and writes not yet made are
  // dropped.
  void close(std::uint16_t cqid);
  // A controller reset: every CQ closed.
  void reset();
  bool notified(std::uint16_t cqid) const { return areas_.count(cqid) != 0; }

  // The completion `entry` of a command on batch-notified CQ `cqid`.
  void complete(std::uint16_t cqid, const CompletionEntry& entry);

  std::uint64_t batches() const { return batches_; }
  std::uint64_t bitmap_bytes() const { return bitmap_bytes_; }
  std::uint64_t bitmap_completions() const { return bitmap_completions_; }

 private:
  struct Area {
    std::uint64_t bitmap = 0;
    std::vector<std::uint32_t> words;  // the controller's copy, exact: it is the only writer
    std::uint64_t open_id = 0;         // tells this area from an earlier one of the same cqid
    std::uint32_t pending = 0;         // completions in the batch being collected
    std::uint32_t low = 0;             // changed words of that batch
    std::uint32_t high = 0;
    std::uint64_t window_id = 0;    // the window timer that may still post this batch
    Picoseconds last_write_at = 0;  // batches are written in the order they are posted
    // Posted batches whose firmware time is not over, oldest first: the
    // first changed word and the words' values when the batch was posted.
    struct Write {
      std::uint32_t low;
      std::vector<std::uint32_t> words;
    };
    std::deque<Write> writes;
  };
  void post_batch(std::uint16_t cqid, Area& area);
  void write_oldest(std::uint16_t cqid, std::uint64_t open_id);

  std::uint32_t max_completions_;
  Picoseconds window_;
  BatchHooks hooks_;
  std::map<std::uint16_t, Area> areas_;
  std::uint64_t next_id_ = 1;
  std::uint64_t batches_ = 0;
  std::uint64_t bitmap_bytes_ = 0;
  std::uint64_t bitmap_completions_ = 0;
};

}  // namespace gpunvme::nvme
