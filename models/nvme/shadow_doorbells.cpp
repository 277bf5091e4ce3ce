#include "models/nvme/shadow_doorbells.h"

#include <cstring>
#include <utility>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {

ShadowDoorbells::ShadowDoorbells(QueueSet& queues, MemorySpace& memory, std::uint8_t dstrd,
                                 Picoseconds poll_period, ShadowHooks hooks)
    : queues_(queues),
      memory_(memory),
      dstrd_(dstrd),
      poll_period_(poll_period),
      hooks_(std::move(hooks)),
      polls_(2 * queues.count()) {}

void ShadowDoorbells::configure(std::uint64_t shadow_base, std::uint64_t event_idx_base) {
  if (shadow_base_ != 0) {
    for (std::uint16_t qid = 1; qid < queues_.count(); ++qid) {
      if (queues_.sq(qid).exists) stop(DoorbellKind::SqTail, qid);
      if (queues_.cq(qid).exists) stop(DoorbellKind::CqHead, qid);
    }
  }
  shadow_base_ = shadow_base;
  event_idx_base_ = event_idx_base;
  for (std::uint16_t qid = 1; qid < queues_.count(); ++qid) {
    if (queues_.cq(qid).exists) start(DoorbellKind::CqHead, qid);
    if (queues_.sq(qid).exists) start(DoorbellKind::SqTail, qid);
  }
}

void ShadowDoorbells::start(DoorbellKind kind, std::uint16_t qid) {
  Poll& p = poll_of(kind, qid);
  p = Poll{};
  p.watch = memory_.watch(shadow_address(kind, qid), 4, [this, kind, qid] { on_write(kind, qid); });
  if (kind == DoorbellKind::SqTail) {
    queues_.sq(qid).shadow_awake = always_polled_;
    write_event_idx(
        kind, qid,
        always_polled_ ? (queues_.sq(qid).tail + 0xFFFFu) & 0xFFFFu : queues_.sq(qid).tail);
  } else {
    write_event_idx(kind, qid, (queues_.cq(qid).head + 0xFFFFu) & 0xFFFFu);
  }
}

void ShadowDoorbells::stop(DoorbellKind kind, std::uint16_t qid) {
  Poll& p = poll_of(kind, qid);
  if (p.watch != 0) memory_.cancel(p.watch);
  p = Poll{};
}

void ShadowDoorbells::reset() {
  if (shadow_base_ != 0) {
    for (Poll& p : polls_) {
      if (p.watch != 0) memory_.cancel(p.watch);
      p = Poll{};
    }
  }
  shadow_base_ = event_idx_base_ = 0;
}

void ShadowDoorbells::on_write(DoorbellKind kind, std::uint16_t qid) {
  Poll& p = poll_of(kind, qid);
  // Watches fire once: watch again for the next update.
  p.watch = memory_.watch(shadow_address(kind, qid), 4, [this, kind, qid] { on_write(kind, qid); });
  if (p.read_pending) {
    p.dirty = true;
    return;
  }
  poll(kind, qid);
}

void ShadowDoorbells::poll(DoorbellKind kind, std::uint16_t qid) {
  Poll& p = poll_of(kind, qid);
  p.read_pending = true;
  p.dirty = false;
  const Picoseconds now = hooks_.now();
  const Picoseconds tick = (now + poll_period_ - 1) / poll_period_ * poll_period_;
  const std::uint64_t generation = hooks_.generation();
  const std::uint64_t addr = shadow_address(kind, qid);
  hooks_.schedule_at(tick, [this, kind, qid, generation, addr] {
    if (generation != hooks_.generation()) return;
    hooks_.read(addr, 4, [this, kind, qid, generation](const std::uint8_t* data, std::uint32_t) {
      if (generation != hooks_.generation()) return;
      Poll& polled = poll_of(kind, qid);
      polled.read_pending = false;
      if (polled.watch == 0) return;  // the queue went away meanwhile
      ++reads_;
      std::uint32_t value;
      std::memcpy(&value, data, 4);
      const bool exists =
          kind == DoorbellKind::SqTail ? queues_.sq(qid).exists : queues_.cq(qid).exists;
      if (exists) hooks_.apply(kind, qid, value);
      if (polled.dirty) poll(kind, qid);
    });
  });
}

void ShadowDoorbells::write_event_idx(DoorbellKind kind, std::uint16_t qid, std::uint32_t value) {
  const std::uint64_t addr = event_idx_base_ + shadow_doorbell_offset(kind, qid, dstrd_);
  ++event_idx_writes_;
  hooks_.write(addr, 4, &value);
}

void ShadowDoorbells::update_sq_event_idx(std::uint16_t qid) {
  if (shadow_base_ == 0 || qid == kAdminQueueId || always_polled_) return;
  SubmissionQueue& sq = queues_.sq(qid);
  if (!sq.exists) return;
  const bool busy = sq.in_flight > 0 || sq.fetching > 0 || sq.head != sq.tail;
  if (busy && !sq.shadow_awake) {
    sq.shadow_awake = true;
    write_event_idx(DoorbellKind::SqTail, qid, (sq.tail + 0xFFFFu) & 0xFFFFu);
  } else if (!busy && sq.shadow_awake) {
    sq.shadow_awake = false;
    write_event_idx(DoorbellKind::SqTail, qid, sq.tail);
  }
}

}  // namespace gpunvme::nvme
