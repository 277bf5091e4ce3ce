#include "sim/system/machine/cq_observer.h"

#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_wide_cid.h"
#include "sim/kernel/simulation.h"

namespace gpunvme::platform {

CqArrivalObserver::~CqArrivalObserver() {
  for (const Ring& r : rings_) memory_.cancel(r.watch);
  for (const auto& [slots, count] : slot_ring_sizes_) {
    for (std::uint32_t i = 0; i < count; ++i) memory_.cancel(slots[i].watch);
  }
  for (const auto& words : bitmaps_) {
    for (const BitmapWord& w : words) memory_.cancel(w.watch);
  }
}

void CqArrivalObserver::observe(const algo::QueuePair& q, bool indexed) {
  if (indexed) {
    slot_rings_.push_back(std::make_unique<Slot[]>(q.entries));
    Slot* slots = slot_rings_.back().get();
    slot_ring_sizes_.emplace_back(slots, q.entries);
    for (std::uint32_t i = 0; i < q.entries; ++i) {
      slots[i] = Slot{this, q.cq_base + std::uint64_t{i} * nvme::kCqEntrySize,
                      0,    static_cast<std::uint16_t>(q.trace_id),
                      0,    q.wide_cids != 0};
      slots[i].watch = memory_.watch(slots[i].addr, nvme::kCqEntrySize, &on_slot_write, &slots[i]);
    }
    return;
  }
  rings_.push_back(
      Ring{q.cq_base, q.entries, 0, static_cast<std::uint16_t>(q.trace_id), 0, q.wide_cids != 0});
  arm(rings_.size() - 1);
}

void CqArrivalObserver::arm(std::size_t i) {
  Ring& r = rings_[i];
  const std::uint64_t addr = r.base + std::uint64_t{r.position % r.entries} * nvme::kCqEntrySize;
  r.watch = memory_.watch(addr, nvme::kCqEntrySize, [this, i] { on_write(i); });
}

void CqArrivalObserver::on_write(std::size_t i) {
  Ring& r = rings_[i];
  const std::uint64_t addr = r.base + std::uint64_t{r.position % r.entries} * nvme::kCqEntrySize;
  const auto entry = memory_.load<nvme::CompletionEntry>(addr);
  const std::uint8_t expected = ((r.position / r.entries) & 1u) == 0 ? 1 : 0;
  if (entry.phase() == expected) {
    sink_.stage(r.trace, nvme::completion_cid(entry, r.wide), algo::Stage::CqePosted,
                Simulation::now());
    ++r.position;
  }
  arm(i);
}

void CqArrivalObserver::on_slot_write(void* context, MemorySpace::WatchId id) {
  Slot& s = *static_cast<Slot*>(context);
  CqArrivalObserver& self = *s.observer;
  const auto entry = self.memory_.load<nvme::CompletionEntry>(s.addr);
  const std::uint8_t expected = (s.lap & 1u) == 0 ? 1 : 0;
  if (entry.phase() == expected) {
    self.sink_.stage(s.trace, nvme::completion_cid(entry, s.wide), algo::Stage::CqePosted,
                     Simulation::now());
    ++s.lap;
  }
  self.memory_.rearm(id);
}

void CqArrivalObserver::observe_bitmap(const algo::QueuePair& q) {
  const std::uint32_t count = nvme::batch_bitmap_words(q.cid_space);
  // Sized once: the watches keep pointers to the words.
  bitmaps_.emplace_back(count);
  std::vector<BitmapWord>& words = bitmaps_.back();
  for (std::uint32_t i = 0; i < count; ++i) {
    words[i] = BitmapWord{this,
                          q.completion_bitmap + std::uint64_t{i} * nvme::kBatchBitmapWordBytes,
                          0,
                          i * nvme::kBatchBitmapWordBits,
                          static_cast<std::uint16_t>(q.trace_id),
                          0};
    words[i].watch =
        memory_.watch(words[i].addr, nvme::kBatchBitmapWordBytes, &on_bitmap_write, &words[i]);
  }
}

void CqArrivalObserver::on_bitmap_write(void* context, MemorySpace::WatchId id) {
  BitmapWord& w = *static_cast<BitmapWord*>(context);
  CqArrivalObserver& self = *w.observer;
  const auto value = self.memory_.load<std::uint32_t>(w.addr);
  std::uint32_t flipped = value ^ w.value;
  w.value = value;
  while (flipped != 0) {
    const auto bit = static_cast<std::uint32_t>(__builtin_ctz(flipped));
    flipped &= flipped - 1;
    self.sink_.stage(w.trace, static_cast<std::uint16_t>(w.first_cid + bit), algo::Stage::CqePosted,
                     Simulation::now());
  }
  self.memory_.rearm(id);
}

}  // namespace gpunvme::platform
