#include "sim/system/machine/cq_observer.h"

#include "sim/core/protocol/nvme_entries.h"
#include "sim/kernel/simulation.h"

namespace gpunvme::platform {

CqArrivalObserver::~CqArrivalObserver() {
  for (const Ring& r : rings_) memory_.cancel(r.watch);
}

void CqArrivalObserver::observe(const algo::QueuePair& q) {
  rings_.push_back(Ring{q.cq_base, q.entries, 0, static_cast<std::uint16_t>(q.trace_id), 0});
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
    sink_.stage(r.trace, entry.cid, algo::Stage::CqePosted, Simulation::now());
    ++r.position;
  }
  arm(i);
}

}  // namespace gpunvme::platform
