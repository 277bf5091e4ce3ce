#include "models/host/gpu_error_host.h"

#include <algorithm>
#include <utility>

namespace gpunvme::host {

namespace {
// The status field without its phase tag: SC in bits 7:0, SCT in 10:8, DNR
// in bit 14 (NVMe 1.4, Figure 126).
constexpr std::uint16_t kStatusCodeMask = 0x7FF;
constexpr std::uint16_t kDoNotRetry = 1u << 14;
constexpr std::uint16_t kAbortRequested = 0x007;     // the host's timeout aborted it
constexpr std::uint16_t kAbortedSqDeletion = 0x008;  // a controller reset aborted it
}  // namespace

GpuErrorHost::GpuErrorHost(const sc_core::sc_module_name& name, MemorySpace& memory,
                           pcie::Fabric& fabric, std::size_t cpu_node,
                           const algo::ErrorMailbox& mailbox, const GpuErrorPolicy& policy,
                           std::vector<nvme::Controller*> ssds,
                           std::function<std::size_t(std::uint32_t queue)> ssd_of_queue)
    : Component(name, ParamValues{}),
      memory_(memory),
      fabric_(fabric),
      cpu_node_(cpu_node),
      mailbox_(mailbox),
      policy_(policy),
      ssds_(std::move(ssds)),
      ssd_of_queue_(std::move(ssd_of_queue)),
      back_at_(ssds_.size(), 0),
      since_reset_(ssds_.size(), 0),
      counts_(ssds_.size()) {
  // A reset aborts the commands the controller holds: it must know them.
  if (policy_.reset_after != 0 || policy_.reset_on_timeout) {
    for (nvme::Controller* ssd : ssds_) ssd->track_outstanding();
  }
  arm();
}

GpuErrorHost::~GpuErrorHost() {
  if (watching_) memory_.cancel(watch_);
}

GpuErrorCounts GpuErrorHost::total() const {
  GpuErrorCounts t;
  for (const GpuErrorCounts& c : counts_) {
    t.records += c.records;
    t.retries += c.retries;
    t.failed += c.failed;
    t.resets += c.resets;
    t.reset_retries += c.reset_retries;
    t.host_ps += c.host_ps;
    t.reset_recovery_ps += c.reset_recovery_ps;
  }
  return t;
}

std::uint64_t GpuErrorHost::entry_address(std::uint32_t position) const {
  return mailbox_.ring + std::uint64_t{position % mailbox_.entries} * nvme::kGpuErrorRecordSize;
}

void GpuErrorHost::arm() {
  watching_ = true;
  watch_ = memory_.watch(entry_address(next_), 4, [this] {
    watching_ = false;
    on_ring_write();
  });
}

void GpuErrorHost::on_ring_write() {
  // Every record whose sequence word has landed, in ring order (the GPU
  // writes the body first, then the word: the record is whole).
  for (;;) {
    const auto record = memory_.load<nvme::GpuErrorRecord>(entry_address(next_));
    if (record.sequence != next_ + 1u) break;
    ++next_;
    handle(record, now());
  }
  arm();
}

void GpuErrorHost::handle(const nvme::GpuErrorRecord& record, Picoseconds landed) {
  // Seen at the first poll at or after it landed, or once the thread is
  // done with the record before; then read and decided.
  const Picoseconds period = policy_.poll_period;
  const Picoseconds polled = period == 0 ? landed : (landed + period - 1) / period * period;
  const Picoseconds decided = std::max(polled, busy_until_) + policy_.decision;
  busy_until_ = decided;
  schedule_at(decided, [this, record, landed] { decide(record, landed); });
}

void GpuErrorHost::decide(const nvme::GpuErrorRecord& record, Picoseconds landed) {
  const std::size_t ssd = ssd_of_queue_(record.queue);
  GpuErrorCounts& counts = counts_[ssd];
  ++counts.records;
  const std::uint16_t code = record.status & kStatusCodeMask;
  const bool may_retry = policy_.retry && record.attempt < policy_.max_retries;
  if (code == kAbortedSqDeletion) {
    if (may_retry) {
      ++counts.reset_retries;
      send_verdict(record, nvme::GpuErrorAction::Retry, std::max(now(), back_at_[ssd]), landed,
                   ssd);
    } else {
      send_verdict(record, nvme::GpuErrorAction::Fail, now(), landed, ssd);
    }
    return;
  }
  ++since_reset_[ssd];
  const bool reset = (policy_.reset_after != 0 && since_reset_[ssd] >= policy_.reset_after) ||
                     (policy_.reset_on_timeout && code == kAbortRequested);
  if (reset) {
    // The controller's reset model says when it is back; this SSD's retries
    // go out only then.
    since_reset_[ssd] = 0;
    ++counts.resets;
    const Picoseconds back = ssds_[ssd]->host_reset();
    counts.reset_recovery_ps += back - now();
    back_at_[ssd] = std::max(back_at_[ssd], back);
  }
  const bool dnr = (record.status & kDoNotRetry) != 0;
  if (may_retry && (!dnr || policy_.retry_dnr)) {
    send_verdict(record, nvme::GpuErrorAction::Retry,
                 std::max(now() + policy_.backoff, back_at_[ssd]), landed, ssd);
    return;
  }
  send_verdict(record, nvme::GpuErrorAction::Fail, now(), landed, ssd);
}

void GpuErrorHost::send_verdict(const nvme::GpuErrorRecord& record, nvme::GpuErrorAction action,
                                Picoseconds at, Picoseconds landed, std::size_t ssd) {
  GpuErrorCounts& counts = counts_[ssd];
  if (action == nvme::GpuErrorAction::Retry) {
    ++counts.retries;
  } else {
    ++counts.failed;
  }
  counts.host_ps += at - landed;
  const std::uint64_t address = algo::verdict_address(mailbox_, record.verdict_index);
  nvme::GpuErrorVerdict verdict{record.sequence, static_cast<std::uint16_t>(action), 0};
  const auto write = [this, address, verdict] {
    fabric_.write(cpu_node_, address, sizeof verdict, &verdict, {});
  };
  if (at <= now()) {
    write();
  } else {
    schedule_at(at, write);
  }
}

}  // namespace gpunvme::host
