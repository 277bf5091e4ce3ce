// The controller's data pointers and memory accesses: PRP lists (chained
// list pages, each read from memory as it is reached), SGL segments, the
// checks every DMA segment passes, and the choice between a PCIe transaction
// and an internal access to the controller's own memory buffer.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "models/nvme/controller.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_sgl.h"

namespace gpunvme::nvme {

namespace {
constexpr std::uint64_t kPageBytes = 4096;
// Descriptors one command's SGL may hold, which also bounds the segment
// reads: 4096 x 16 B = 64 KiB of descriptors.
constexpr std::uint32_t kMaxSglDescriptors = 4096;

// List pages or SGL segments read so far, by address.
struct Fetched {
  std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> chunks;

  bool read(std::uint64_t addr, void* out, std::size_t len) const {
    for (const auto& [base, bytes] : chunks) {
      if (addr >= base && addr - base + len <= bytes.size()) {
        std::memcpy(out, bytes.data() + (addr - base), len);
        return true;
      }
    }
    return false;
  }
};

// Physically contiguous segments in one memory region travel as one DMA
// burst; the link accounting still splits it at MPS and 4 KiB boundaries.
// Merged in place: the list only shrinks, and a second vector would cost an
// allocation per command.
template <class Segment>
std::vector<Segment> merge_contiguous(const MemorySpace& memory, std::vector<Segment> segments) {
  std::size_t merged = 0;  // segments[0, merged) are the merged list so far
  for (const Segment& s : segments) {
    Segment* last = merged > 0 ? &segments[merged - 1] : nullptr;
    if (last != nullptr && !last->bit_bucket && !s.bit_bucket && last->addr + last->len == s.addr &&
        last->len + s.len <= 0xFFFFFFFFull &&
        memory.find(last->addr, last->len + s.len) != nullptr) {
      last->len += s.len;
    } else {
      segments[merged++] = s;
    }
  }
  segments.resize(merged);
  return segments;
}
}  // namespace

bool Controller::in_own_cmb(std::uint64_t addr, std::uint64_t len) const {
  return cmb_ != nullptr && cmb_->contains(addr, len);
}

void Controller::mem_read(std::uint64_t addr, std::uint32_t len, pcie::Fabric::ReadDone done) {
  if (in_own_cmb(addr, len)) {
    schedule_in(cmb_access_, [this, addr, len, done = std::move(done)] {
      std::vector<std::uint8_t> bytes(len);
      memory_.read(addr, bytes.data(), len);
      done(bytes.data(), len);
    });
    return;
  }
  fabric_.read(node_, addr, len, std::move(done));
}

void Controller::mem_write(std::uint64_t addr, std::uint32_t len, const void* data,
                           std::function<void()> delivered) {
  if (in_own_cmb(addr, len)) {
    std::vector<std::uint8_t> bytes;
    if (data != nullptr) {
      const auto* p = static_cast<const std::uint8_t*>(data);
      bytes.assign(p, p + len);
    }
    schedule_in(cmb_access_,
                [this, addr, bytes = std::move(bytes), delivered = std::move(delivered)] {
                  if (!bytes.empty()) memory_.write(addr, bytes.data(), bytes.size());
                  if (delivered) delivered();
                });
    return;
  }
  fabric_.write(node_, addr, len, data, std::move(delivered));
}

// Data moves only to or from host memory, GPU memory or a controller memory
// buffer; anything else (an unmapped address, a device's registers) means
// the submitter handed over a bad buffer, and the run stops.
void Controller::check_dma_target(const Command& command, std::uint64_t addr, std::uint64_t len,
                                  const char* what) const {
  const Region* region = memory_.find(addr, std::max<std::uint64_t>(len, 1));
  if (region == nullptr || region->kind == RegionKind::Registers) {
    violation(fmt::format("{} DMA of {} B at 0x{:x} outside host, GPU and CMB memory{}", what, len,
                          addr, region == nullptr ? "" : " (in " + region->name + ")"),
              command.qid, command.slot, command.cid());
  }
}

// Data never lands in (or comes from) a queue ring: a PRP or SGL pointing
// there would corrupt entries the host or the controller still owns, which a
// length check cannot see. The rings do not overlap one another, so the one
// starting last below the segment's end is the only candidate.
void Controller::check_not_in_ring(const Command& command, std::uint64_t addr,
                                   std::uint64_t len) const {
  const std::optional<QueueSet::RingHit> ring = queues_.ring_overlapping(addr, len);
  if (!ring) return;
  violation(fmt::format("data DMA of {} B at 0x{:x} overlaps {} {}'s ring (its slot {})", len, addr,
                        ring->sq ? "SQ" : "CQ", ring->qid, ring->slot),
            command.qid, command.slot, command.cid());
}

// The segments the data moves through are exactly the buffer the command
// describes: together they cover its length, each is a valid target.
void Controller::check_segments(const Command& command, const std::vector<Segment>& segments,
                                std::uint64_t bytes) const {
  std::uint64_t total = 0;
  for (const Segment& s : segments) {
    if (s.len == 0) {
      violation("empty data segment", command.qid, command.slot, command.cid());
    }
    if (!s.bit_bucket) {
      check_dma_target(command, s.addr, s.len, "data");
      check_not_in_ring(command, s.addr, s.len);
    }
    total += s.len;
  }
  if (total != bytes) {
    violation(fmt::format("data segments cover {} B of a {} B transfer", total, bytes), command.qid,
              command.slot, command.cid());
  }
}

void Controller::resolve_data_pointer(CommandPtr command, std::uint64_t bytes, bool to_host,
                                      Picoseconds start, Resolved done) {
  if (command->sqe.psdt() == Psdt::Prp) {
    resolve_prp(std::move(command), bytes, start, std::move(done));
  } else {
    resolve_sgl(std::move(command), bytes, to_host, start, std::move(done));
  }
}

// PRP1 and PRP2 (NVMe base spec 1.4, 4.3): PRP2 is a data page for a
// transfer of two pages, a list pointer beyond that. A full list page ends
// with a pointer to the next; each page is read when the walk reaches it,
// entry-exact: only the entries still needed.
void Controller::resolve_prp(CommandPtr command, std::uint64_t bytes, Picoseconds start,
                             Resolved done) {
  // Walks the PRPs, reading list entries from the pages fetched so far, and reports the result.
  auto walk = [this, bytes](const Command& c, const Fetched& fetched, Resolved& report) {
    std::vector<Segment> segments;
    const SubmissionEntry& e = c.sqe;
    const Status walked = walk_prp(
        e.prp1, e.prp2, bytes, kPageBytes,
        [&](std::uint64_t addr) -> std::uint64_t {
          std::uint64_t entry = 0;
          fetched.read(addr, &entry, sizeof entry);
          return entry;
        },
        [&](std::uint64_t addr, std::uint64_t len) {
          segments.push_back({addr, len, false});
        });
    report(walked, walked == Status::Success ? merge_contiguous(memory_, std::move(segments))
                                             : std::vector<Segment>{});
  };
  const SubmissionEntry& sqe = command->sqe;
  const std::uint64_t first = kPageBytes - page_offset(sqe.prp1, kPageBytes);
  const bool needs_list = bytes > first + kPageBytes;
  if (!needs_list || (sqe.prp1 & 0x3u) != 0 || (sqe.prp2 & (kPrpEntrySize - 1)) != 0) {
    // No list to read, or the walk fails before reading one: resolved at once, without the
    // shared state (an allocation per command) that a list read needs.
    walk(*command, Fetched{}, done);
    return;
  }
  struct State {
    Fetched fetched;
    Resolved done;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  auto finish = [walk, command, state] { walk(*command, state->fetched, state->done); };
  // Data entries the list holds: every page after the first.
  const std::uint64_t entries = (bytes - first + kPageBytes - 1) / kPageBytes;
  // The reader refers to itself weakly; the pending read holds it alive.
  auto fetch = std::make_shared<std::function<void(std::uint64_t, std::uint64_t)>>();
  std::weak_ptr<std::function<void(std::uint64_t, std::uint64_t)>> weak = fetch;
  *fetch = [this, command, state, finish, weak](std::uint64_t list, std::uint64_t left) {
    auto self = weak.lock();
    const std::uint64_t slots = (kPageBytes - page_offset(list, kPageBytes)) / kPrpEntrySize;
    const bool last_page = left <= slots;
    const std::uint64_t count = last_page ? left : slots;
    check_dma_target(*command, list, count * kPrpEntrySize, "PRP list");
    mem_read(list, static_cast<std::uint32_t>(count * kPrpEntrySize),
             [state, finish, self, list, left, slots, last_page](const std::uint8_t* data,
                                                                 std::uint32_t len) {
               state->fetched.chunks.emplace_back(list,
                                                  std::vector<std::uint8_t>(data, data + len));
               if (last_page) {
                 finish();
                 return;
               }
               std::uint64_t next = 0;
               std::memcpy(&next, data + len - kPrpEntrySize, kPrpEntrySize);
               if (page_offset(next, kPageBytes) != 0) {
                 finish();  // the walk reports PRP Offset Invalid for the chain pointer
                 return;
               }
               (*self)(next, left - (slots - 1));
             });
  };
  schedule_at(start, [fetch, list = sqe.prp2, entries] { (*fetch)(list, entries); });
}

// SGLs (NVMe base spec 1.4, 4.4): a single Data Block or Bit Bucket in the
// command needs no read; a Segment or Last Segment descriptor points to a
// segment of descriptors, read whole, whose last descriptor may continue the
// list.
void Controller::resolve_sgl(CommandPtr command, std::uint64_t bytes, bool to_host,
                             Picoseconds start, Resolved done) {
  struct State {
    Fetched fetched;
    Resolved done;
    std::uint32_t descriptors = 0;
  };
  auto state = std::make_shared<State>();
  state->done = std::move(done);
  SglWalkOptions options;
  options.allow_bit_bucket = to_host;  // Identify SGLS bit 16: bit buckets for reads
  options.max_descriptors = kMaxSglDescriptors;
  auto finish = [this, command, bytes, state, options] {
    std::vector<Segment> segments;
    const Status walked = walk_sgl(
        command->sqe.sgl1(), bytes,
        [&](std::uint64_t addr) {
          SglDescriptor d{};
          state->fetched.read(addr, &d, sizeof d);
          return d;
        },
        [&](std::uint64_t addr, std::uint64_t len, bool bucket) {
          segments.push_back({addr, len, bucket});
        },
        options);
    state->done(walked, walked == Status::Success ? merge_contiguous(memory_, std::move(segments))
                                                  : std::vector<Segment>{});
  };
  const SglDescriptor sgl1 = command->sqe.sgl1();
  const auto is_chain = [](const SglDescriptor& d) {
    return d.type() == SglDescriptorType::Segment || d.type() == SglDescriptorType::LastSegment;
  };
  if (!is_chain(sgl1)) {
    finish();
    return;
  }
  auto fetch = std::make_shared<std::function<void(SglDescriptor)>>();
  std::weak_ptr<std::function<void(SglDescriptor)>> weak = fetch;
  *fetch = [this, command, state, finish, weak, is_chain](SglDescriptor seg) {
    auto self = weak.lock();
    const bool readable =
        seg.subtype() == SglDescriptorSubtype::Address && seg.length != 0 &&
        seg.length % kSglDescriptorSize == 0 &&
        state->descriptors + seg.length / kSglDescriptorSize <= kMaxSglDescriptors;
    if (!readable) {
      finish();  // the walk reports the malformed segment
      return;
    }
    state->descriptors += seg.length / kSglDescriptorSize;
    check_dma_target(*command, seg.address, seg.length, "SGL segment");
    mem_read(seg.address, seg.length,
             [state, finish, self, seg, is_chain](const std::uint8_t* data, std::uint32_t len) {
               state->fetched.chunks.emplace_back(seg.address,
                                                  std::vector<std::uint8_t>(data, data + len));
               SglDescriptor last{};
               std::memcpy(&last, data + len - kSglDescriptorSize, kSglDescriptorSize);
               if (seg.type() == SglDescriptorType::Segment && is_chain(last)) {
                 (*self)(last);
                 return;
               }
               finish();
             });
  };
  schedule_at(start, [fetch, sgl1] { (*fetch)(sgl1); });
}

}  // namespace gpunvme::nvme
