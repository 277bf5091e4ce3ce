#include "sim/core/platform/soft_target.h"

#include <fmt/format.h>

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/queue_invariants.h"

namespace gpunvme::platform {

namespace {
std::uint64_t next_random(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ull;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
}  // namespace

SoftTarget::SoftTarget(HostArena& arena, std::uint32_t max_queues, Options options)
    : arena_(arena),
      options_(options),
      doorbell_base_(options.doorbell_base),
      doorbells_(new std::atomic<std::uint32_t>[2ull * (max_queues + 1)]),
      queues_(max_queues + 1) {
  for (std::uint32_t i = 0; i < 2 * (max_queues + 1); ++i) doorbells_[i].store(0);
}

SoftTarget::~SoftTarget() { stop(); }

void SoftTarget::create_queue(std::uint16_t qid, std::uint64_t sq_base, std::uint64_t cq_base,
                              std::uint32_t entries) {
  const std::uint32_t highest_qid = static_cast<std::uint32_t>(queues_.size() - 1);
  const bool exists = qid != 0 && qid <= highest_qid && queues_[qid].exists;
  if (nvme::check_queue_create(qid, highest_qid, exists, entries, nvme::kMaxQueueEntries) !=
      nvme::QueueError::None) {
    throw std::invalid_argument(fmt::format("queue {} of {} entries refused", qid, entries));
  }
  Queue& q = queues_[qid];
  q.exists = true;
  q.sq_base = sq_base;
  q.cq_base = cq_base;
  q.entries = entries;
  q.cids.open();
  if (options_.shadow_doorbells) {
    q.sq_shadow = arena_.allocate(4, 4);
    q.cq_shadow = arena_.allocate(4, 4);
    q.sq_event = arena_.allocate(4, 4);
    q.cq_event = arena_.allocate(4, 4);
    // Polling the shadow words, the target never needs an MMIO doorbell:
    // EventIdx sits half a 16-bit wrap away from anything the host reaches.
    arena_.store_release(q.sq_event, 0x8000u);
    arena_.store_release(q.cq_event, 0x8000u);
  }
}

void SoftTarget::start() {
  stop_.store(false);
  for (std::uint32_t t = 0; t < options_.threads; ++t)
    threads_.emplace_back([this, t] { serve(t); });
}

void SoftTarget::stop() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void SoftTarget::mmio_write(std::uint64_t addr, std::uint32_t value) {
  doorbell_writes_.fetch_add(1);
  const std::uint64_t offset = addr - doorbell_base_;
  if (addr < doorbell_base_ || offset % 4 != 0 || offset / 4 >= 2 * queues_.size()) {
    violation(fmt::format("MMIO write of {} to 0x{:x}, which is no doorbell", value, addr));
    return;
  }
  doorbells_[offset / 4].store(value, std::memory_order_release);
}

void SoftTarget::violation(const std::string& what) {
  std::lock_guard<std::mutex> lock(violations_mutex_);
  violations_.push_back(what);
}

std::vector<std::string> SoftTarget::violations() const {
  std::lock_guard<std::mutex> lock(violations_mutex_);
  return violations_;
}

std::uint64_t SoftTarget::outstanding() const {
  std::uint64_t n = 0;
  for (const Queue& q : queues_) n += q.in_flight.load();
  return n;
}

void SoftTarget::serve(std::uint32_t thread) {
  std::uint64_t rng = options_.seed * 7919 + thread;
  while (!stop_.load(std::memory_order_acquire)) {
    bool work = false;
    for (std::uint32_t qid = 1; qid < queues_.size(); ++qid) {
      if (qid % options_.threads != thread || !queues_[qid].exists) continue;
      work = poll_queue(static_cast<std::uint16_t>(qid), rng) || work;
    }
    if (!work) std::this_thread::yield();
  }
}

bool SoftTarget::poll_queue(std::uint16_t qid, std::uint64_t& rng) {
  Queue& q = queues_[qid];
  const std::uint32_t n = q.entries;
  bool work = false;

  // CQ head: the host may only release entries the target has posted.
  const std::uint32_t head = options_.shadow_doorbells
                                 ? arena_.load_acquire(q.cq_shadow)
                                 : doorbells_[2u * qid + 1].load(std::memory_order_acquire);
  if (head != q.cq_head) {
    if (nvme::check_cq_head(q.cq_head, q.cq_tail, head, n).error != nvme::QueueError::None) {
      violation(fmt::format("queue {}: CQ head {} -> {} passes the tail {}", qid, q.cq_head, head,
                            q.cq_tail));
    }
    q.cq_head = head % n;
  }

  // SQ tail: new entries must fit in the free part of the ring.
  const std::uint32_t tail = options_.shadow_doorbells
                                 ? arena_.load_acquire(q.sq_shadow)
                                 : doorbells_[2u * qid].load(std::memory_order_acquire);
  if (tail != q.sq_tail) {
    const nvme::SqTailCheck check = nvme::check_sq_tail(q.sq_head, q.sq_tail, tail, n);
    if (check.error == nvme::QueueError::ValueBeyondRing) {
      violation(fmt::format("queue {}: SQ tail doorbell value {} for a queue of {} entries", qid,
                            tail, n));
    } else if (check.error == nvme::QueueError::SqOverrun) {
      violation(fmt::format("queue {}: SQ overrun: tail {} -> {} adds {} to {} unfetched", qid,
                            q.sq_tail, tail, check.added, check.unfetched));
    }
    q.sq_tail = tail % n;
  }

  // Fetch and serve every new entry.
  while (q.sq_head != q.sq_tail) {
    nvme::SubmissionEntry e;
    arena_.read(q.sq_base + std::uint64_t{q.sq_head} * nvme::kSqEntrySize, &e, sizeof e);
    const std::uint32_t slot = q.sq_head;
    q.sq_head = (q.sq_head + 1) % n;
    fetched_.fetch_add(1);
    work = true;
    const std::uint16_t cid = e.cid();
    if (q.cids.claim(cid) == nvme::QueueError::CidInUse) {
      violation(fmt::format("queue {}: CID {} reused while outstanding (slot {})", qid, cid, slot));
      continue;
    }
    if (check_ && !check_(qid, e)) {
      violation(
          fmt::format("queue {}: torn or corrupted entry in slot {} (CID {})", qid, slot, cid));
    }
    nvme::Status status = nvme::Status::Success;
    const auto opcode = static_cast<nvme::NvmOpcode>(e.opcode());
    if (opcode != nvme::NvmOpcode::Read && opcode != nvme::NvmOpcode::Write) {
      status = nvme::Status::InvalidCommandOpcode;
    } else if (e.nsid != 1) {
      status = nvme::Status::InvalidNamespaceOrFormat;
    } else {
      const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
      if (rw.slba + rw.block_count > options_.capacity_lbas) {
        status = nvme::Status::LbaOutOfRange;
      } else if (opcode == nvme::NvmOpcode::Read) {
        if (arena_.contains(e.prp1, 8)) {
          const std::uint64_t pattern = data_pattern(rw.slba);
          arena_.write(e.prp1, &pattern, 8);
        } else {
          status = nvme::Status::DataTransferError;
        }
      }
    }
    q.in_flight.fetch_add(1);
    q.held.push_back({cid, status});
  }

  // Complete held commands in random order while the CQ has room.
  while (!q.held.empty() && (q.cq_tail + 1) % n != q.cq_head) {
    // Hold some back now and then, so that completions overtake each other.
    if (q.held.size() > 1 && next_random(rng) % 4 == 0) break;
    const std::size_t pick = next_random(rng) % q.held.size();
    const Queue::Held h = q.held[pick];
    q.held[pick] = q.held.back();
    q.held.pop_back();
    nvme::CompletionEntry c{};
    c.sqhd = static_cast<std::uint16_t>(q.sq_head);
    c.sqid = qid;
    c.cid = h.cid;
    c.set_status(h.status, q.phase);
    const std::uint64_t addr = q.cq_base + std::uint64_t{q.cq_tail} * nvme::kCqEntrySize;
    // DW0-2 first; DW3 (CID, status, phase) last, with release: a host that
    // sees the new phase sees the rest, and the data before it.
    arena_.write(addr, &c, 12);
    std::uint32_t dw3;
    std::memcpy(&dw3, reinterpret_cast<const std::uint8_t*>(&c) + 12, 4);
    q.cids.release(h.cid);
    q.in_flight.fetch_sub(1);
    arena_.store_release(addr + 12, dw3);
    q.cq_tail = (q.cq_tail + 1) % n;
    if (q.cq_tail == 0) q.phase = !q.phase;
    completed_.fetch_add(1);
    work = true;
  }
  return work;
}

}  // namespace gpunvme::platform
