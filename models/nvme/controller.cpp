#include "models/nvme/controller.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "models/flash/flash_params.h"
#include "sim/protocol/nvme_commands.h"
#include "sim/protocol/nvme_prp.h"
#include "sim/protocol/nvme_registers.h"

namespace gpunvme::nvme {

namespace {
constexpr std::uint64_t kPageBytes = 4096;  // CC.MPS = 0: the host's memory page size

std::vector<ParamSpec> controller_params() {
  return {
      integer_param("max_io_queues", "", 128, 1, 65535,
                    "I/O queue pairs the controller grants (Set Features, Number of Queues)",
                    "CALIBRATION.md: real drives grant 8-135; 128 is common"),
      integer_param("mqes", "entries", 16384, 2, 65536,
                    "largest queue the controller accepts (CAP.MQES + 1)",
                    "CALIBRATION.md: MQES seen from 128 to 16,384"),
      integer_param("mdts", "", 5, 0, 15,
                    "maximum data transfer size as a power of two of 4 KiB pages (0 = no limit)",
                    "NVMe base spec 2.0 Identify Controller byte 77; 5 (128 KiB) is common"),
      integer_param("dstrd", "", 0, 0, 15, "doorbell stride: doorbells are 4 << DSTRD bytes apart",
                    "NVMe base spec 2.0 CAP.DSTRD; physical controllers report 0"),
      integer_param("controller_cores", "", 4, 1, 256,
                    "command processors working in parallel",
                    "estimate; device profiles calibrate it with command_overhead_ns"),
      real_param("command_overhead_ns", "ns", 2000.0, 0.0, 1e7,
                 "processor time per command (parse, translate, schedule media, post completion)",
                 "estimate; device profiles calibrate it from their datasheet IOPS"),
      integer_param("sq_fetch_burst", "entries", 8, 1, 64,
                    "submission entries one SQ fetch reads at most (one PCIe read request)",
                    "estimate: 8 x 64 B = one 512 B read request at the common MRRS"),
      integer_param("max_outstanding_fetches", "", 16, 1, 1024,
                    "SQ fetch reads the controller keeps in flight",
                    "estimate; PCIe tags allow up to 256 (10-bit tags: 768)"),
      integer_choice_param("lba_bytes", "B", 512, {512, 4096}, "namespace LBA size",
                           "NVMe namespaces are formatted with 512 B or 4 KiB LBAs"),
      integer_param("datasheet_read_iops_4k", "IOPS", 0, 0, 1e9,
                    "datasheet 4 KiB random-read IOPS (0 = unknown); checked by the calibration "
                    "tests, not used by the model",
                    "device profile"),
      integer_param("datasheet_write_iops_4k", "IOPS", 0, 0, 1e9,
                    "datasheet 4 KiB random-write IOPS (0 = unknown)", "device profile"),
      real_param("datasheet_seq_read_gbps", "GB/s", 0.0, 0.0, 1e3,
                 "datasheet sequential read bandwidth (0 = unknown)", "device profile"),
      real_param("datasheet_seq_write_gbps", "GB/s", 0.0, 0.0, 1e3,
                 "datasheet sequential write bandwidth (0 = unknown)", "device profile"),
  };
}
}  // namespace

const ComponentSpec& nvme_ssd_spec() {
  static const ComponentSpec spec = [] {
    ComponentSpec s{"nvme_ssd",
                    "An NVMe SSD: the controller (queues, doorbells, arbitration, DMA) and its "
                    "flash back end. Device profiles in configs/ssd/ set these per drive.",
                    controller_params()};
    for (const ParamSpec& p : flash::flash_param_specs()) s.params.push_back(p);
    return s;
  }();
  return spec;
}

Controller::Controller(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
                       pcie::Fabric& fabric, MemorySpace& memory)
    : Component(name, std::move(params)),
      node_(node),
      fabric_(fabric),
      memory_(memory),
      flash_(flash::flash_params_from(this->params())) {
  const ParamValues& p = this->params();
  max_io_queues_ = static_cast<std::uint32_t>(p.integer("max_io_queues"));
  max_entries_ = static_cast<std::uint32_t>(p.integer("mqes"));
  dstrd_ = static_cast<std::uint8_t>(p.integer("dstrd"));
  lba_bytes_ = static_cast<std::uint32_t>(p.integer("lba_bytes"));
  const auto mdts = p.integer("mdts");
  max_transfer_bytes_ = mdts == 0 ? 0 : (kPageBytes << mdts);
  fetch_burst_ = static_cast<std::uint32_t>(p.integer("sq_fetch_burst"));
  max_fetches_ = static_cast<std::uint32_t>(p.integer("max_outstanding_fetches"));
  command_overhead_ = ns_to_ps(p.real("command_overhead_ns"));
  processor_free_at_.assign(static_cast<std::size_t>(p.integer("controller_cores")), 0);
  // BAR0: registers, then one doorbell pair per queue (admin queue included).
  const std::uint64_t bar_bytes =
      reg::kDoorbellBase + (2ull * (max_io_queues_ + 1)) * doorbell_stride_bytes(dstrd_);
  registers_ = &memory.allocate(std::max<std::uint64_t>(bar_bytes, 16384), node,
                                RegionKind::Registers, id() + ".bar0", 16384);
  fabric.attach_registers(*registers_, this);
  sqs_.resize(max_io_queues_ + 1);
  cqs_.resize(max_io_queues_ + 1);
}

std::uint64_t Controller::doorbell_address(bool sq, std::uint16_t qid) const {
  return registers_->base +
         (sq ? sq_tail_doorbell_offset(qid, dstrd_) : cq_head_doorbell_offset(qid, dstrd_));
}

std::uint64_t Controller::capacity_lbas() const {
  return flash_.params().capacity_bytes / lba_bytes_;
}

void Controller::create_io_queue_pair(std::uint16_t qid, std::uint64_t sq_base,
                                      std::uint64_t cq_base, std::uint32_t entries) {
  if (qid == 0 || qid > max_io_queues_) {
    throw std::invalid_argument(fmt::format("{}: queue id {} outside the {} granted I/O queues",
                                            id(), qid, max_io_queues_));
  }
  if (entries < 2 || entries > max_entries_) {
    throw std::invalid_argument(fmt::format("{}: queue size {} outside 2..{} (CAP.MQES + 1)",
                                            id(), entries, max_entries_));
  }
  SubmissionQueue& sq = sqs_[qid];
  CompletionQueue& cq = cqs_[qid];
  if (sq.exists) throw std::invalid_argument(fmt::format("{}: queue {} exists", id(), qid));
  sq = SubmissionQueue{};
  sq.exists = true;
  sq.base = sq_base;
  sq.entries = entries;
  sq.outstanding.assign((65536 + 63) / 64, 0);
  sq.rung_at.assign(entries, 0);
  cq = CompletionQueue{};
  cq.exists = true;
  cq.base = cq_base;
  cq.entries = entries;
}

void Controller::violation(const std::string& what, std::uint16_t qid, std::uint32_t slot,
                           std::uint16_t cid) const {
  throw InvariantViolation(fmt::format("{}: invariant violated at {:.3f} ns: {} (queue {}, slot "
                                       "{}, CID {})",
                                       id(), ps_to_ns(now()), what, qid, slot, cid));
}

void Controller::on_register_write(std::uint64_t offset, const std::uint8_t* data,
                                   std::uint32_t len) {
  const DoorbellTarget target = decode_doorbell_offset(offset, dstrd_);
  if (!target.valid || len != 4 || target.qid == 0 || target.qid > max_io_queues_) {
    // Writes to other registers do not reach this model after setup.
    violation(fmt::format("write of {} B to BAR0 offset 0x{:x}, which is no I/O doorbell", len,
                          offset),
              target.qid, 0, 0);
  }
  std::uint32_t value;
  std::memcpy(&value, data, 4);
  ++doorbell_writes_;
  if (target.kind == DoorbellKind::SqTail) {
    SubmissionQueue& sq = sqs_[target.qid];
    if (!sq.exists || value >= sq.entries) {
      violation(fmt::format("SQ tail doorbell value {} for a queue of {} entries", value,
                            sq.entries),
                target.qid, value, 0);
    }
    // Entries between the old and the new tail are new; they must fit in the
    // free part of the ring (one slot always stays empty).
    const std::uint32_t added = (value + sq.entries - sq.tail) % sq.entries;
    const std::uint32_t occupied = (sq.tail + sq.entries - sq.head) % sq.entries;
    if (occupied + added > sq.entries - 1) {
      violation(fmt::format("SQ overrun: tail {} -> {} adds {} entries to {} unfetched", sq.tail,
                            value, added, occupied),
                target.qid, value, 0);
    }
    for (std::uint32_t i = sq.tail; i != value; i = (i + 1) % sq.entries) sq.rung_at[i] = now();
    sq.tail = value;
    kick_fetch();
  } else {
    CompletionQueue& cq = cqs_[target.qid];
    if (!cq.exists || value >= cq.entries) {
      violation(fmt::format("CQ head doorbell value {} for a queue of {} entries", value,
                            cq.entries),
                target.qid, value, 0);
    }
    // The new head may not pass the tail: the host cannot consume entries the
    // controller has not posted.
    const std::uint32_t posted = (cq.tail + cq.entries - cq.head) % cq.entries;
    const std::uint32_t consumed = (value + cq.entries - cq.head) % cq.entries;
    if (consumed > posted) {
      violation(fmt::format("CQ head {} -> {} passes the tail {}", cq.head, value, cq.tail),
                target.qid, value, 0);
    }
    cq.head = value;
    while (!cq.waiting.empty() && (cq.tail + 1) % cq.entries != cq.head) {
      CompletionEntry entry = cq.waiting.front();
      cq.waiting.pop_front();
      post(target.qid, entry);
    }
  }
}

// Round robin over SQs with unfetched entries; each fetch reads a contiguous
// run of entries (up to the burst, never across the ring's end).
void Controller::kick_fetch() {
  const auto queues = static_cast<std::uint16_t>(sqs_.size() - 1);
  std::uint16_t idle_scan = 0;
  while (fetches_in_flight_ < max_fetches_ && idle_scan < queues) {
    const std::uint16_t qid = next_sq_;
    next_sq_ = static_cast<std::uint16_t>(next_sq_ % queues + 1);
    SubmissionQueue& sq = sqs_[qid];
    if (!sq.exists) {
      ++idle_scan;
      continue;
    }
    const std::uint32_t fetch_from = (sq.head + sq.fetching) % sq.entries;
    if (fetch_from == sq.tail) {
      ++idle_scan;
      continue;
    }
    idle_scan = 0;
    const std::uint32_t available = (sq.tail + sq.entries - fetch_from) % sq.entries;
    const std::uint32_t count =
        std::min({available, fetch_burst_, sq.entries - fetch_from});
    sq.fetching += count;
    ++fetches_in_flight_;
    fabric_.read(node_, sq.base + std::uint64_t{fetch_from} * kSqEntrySize, count * kSqEntrySize,
                 [this, qid, fetch_from, count](const std::uint8_t* data, std::uint32_t) {
                   --fetches_in_flight_;
                   on_entries(qid, fetch_from, data, count);
                   kick_fetch();
                 });
  }
}

void Controller::on_entries(std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                            std::uint32_t count) {
  SubmissionQueue& sq = sqs_[qid];
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t slot = (first + i) % sq.entries;
    auto command = std::make_shared<Command>();
    command->qid = qid;
    std::memcpy(&command->sqe, data + std::size_t{i} * kSqEntrySize, kSqEntrySize);
    command->fetched_at = now();
    fetch_wait_.record(now() - sq.rung_at[slot]);
    ++fetched_;
    const std::uint16_t cid = command->sqe.cid();
    std::uint64_t& word = sq.outstanding[cid / 64];
    const std::uint64_t bit = std::uint64_t{1} << (cid % 64);
    sq.head = (sq.head + 1) % sq.entries;
    --sq.fetching;
    if (word & bit) {
      // A reused CID completes with Command ID Conflict; the original stays
      // outstanding (NVMe base spec 2.0, 4.1.2 and generic status 03h).
      ++errors_;
      Command conflict = *command;
      schedule_in(command_overhead_, [this, conflict] {
        CompletionEntry entry{};
        entry.sqid = conflict.qid;
        entry.cid = conflict.sqe.cid();
        entry.set_status(Status::CommandIdConflict, false);
        post(conflict.qid, entry);
      });
      continue;
    }
    word |= bit;
    execute(std::move(command));
  }
}

Picoseconds Controller::book_processor() {
  auto earliest = std::min_element(processor_free_at_.begin(), processor_free_at_.end());
  const Picoseconds start = std::max(now(), *earliest);
  *earliest = start + command_overhead_;
  return *earliest;
}

void Controller::execute(std::shared_ptr<Command> command) {
  const Picoseconds processed = book_processor();
  const SubmissionEntry& sqe = command->sqe;
  const auto opcode = static_cast<NvmOpcode>(sqe.opcode());
  if (opcode == NvmOpcode::Flush) {
    const Picoseconds done = flash_.flush(processed);
    schedule_at(done, [this, command] { complete(*command, Status::Success); });
    return;
  }
  if (opcode != NvmOpcode::Read && opcode != NvmOpcode::Write) {
    schedule_at(processed, [this, command] { complete(*command, Status::InvalidCommandOpcode); });
    return;
  }
  const ReadWriteFields rw = decode_read_write(sqe);
  const std::uint64_t bytes = std::uint64_t{rw.block_count} * lba_bytes_;
  Status status = Status::Success;
  if (sqe.nsid != 1) {
    status = Status::InvalidNamespaceOrFormat;
  } else if (rw.slba + rw.block_count > capacity_lbas()) {
    status = Status::LbaOutOfRange;
  } else if (max_transfer_bytes_ != 0 && bytes > max_transfer_bytes_) {
    status = Status::InvalidFieldInCommand;
  } else if (sqe.psdt() != Psdt::Prp) {
    status = Status::InvalidFieldInCommand;  // SGLs are not offered by this controller
  }
  if (status != Status::Success) {
    ++errors_;
    schedule_at(processed, [this, command, status] { complete(*command, status); });
    return;
  }
  const std::uint64_t offset = rw.slba * lba_bytes_;
  if (opcode == NvmOpcode::Read) {
    const Picoseconds media_done = flash_.read(processed, offset, static_cast<std::uint32_t>(bytes));
    schedule_at(media_done, [this, command, media_done] { move_data(command, media_done); });
  } else {
    schedule_at(processed, [this, command] { move_data(command, now()); });
  }
}

// Data moves by DMA to or from the buffers the PRPs describe. A PRP list is
// read over PCIe from wherever the host put it before the data moves.
void Controller::move_data(std::shared_ptr<Command> command, Picoseconds) {
  const SubmissionEntry& sqe = command->sqe;
  const ReadWriteFields rw = decode_read_write(sqe);
  const std::uint64_t bytes = std::uint64_t{rw.block_count} * lba_bytes_;
  const bool is_read = static_cast<NvmOpcode>(sqe.opcode()) == NvmOpcode::Read;
  const std::uint64_t first = kPageBytes - page_offset(sqe.prp1, kPageBytes);
  const bool needs_list = bytes > first + kPageBytes;

  auto transfer = [this, command, bytes, is_read](const std::uint8_t* list, std::uint32_t list_len) {
    struct Segment {
      std::uint64_t addr, len;
    };
    std::vector<Segment> segments;
    const SubmissionEntry& e = command->sqe;
    const Status walked = walk_prp(
        e.prp1, e.prp2, bytes, kPageBytes,
        [&](std::uint64_t addr) -> std::uint64_t {
          const std::uint64_t index = (addr - e.prp2) / 8;
          std::uint64_t entry = 0;
          if (list != nullptr && (index + 1) * 8 <= list_len) std::memcpy(&entry, list + index * 8, 8);
          return entry;
        },
        [&](std::uint64_t addr, std::uint64_t len) { segments.push_back({addr, len}); });
    if (walked != Status::Success) {
      ++errors_;
      complete(*command, walked);
      return;
    }
    for (const Segment& s : segments) {
      const Region* region = memory_.find(s.addr, s.len);
      if (region == nullptr || region->kind == RegionKind::Registers) {
        ++errors_;
        complete(*command, Status::DataTransferError);
        return;
      }
    }
    if (is_read) {
      // Posted writes stay in order on their path, so the completion entry
      // written after them cannot overtake the data.
      for (const Segment& s : segments) {
        fabric_.write(node_, s.addr, static_cast<std::uint32_t>(s.len), nullptr, nullptr);
      }
      complete(*command, Status::Success);
    } else {
      auto left = std::make_shared<std::size_t>(segments.size());
      for (const Segment& s : segments) {
        fabric_.read(node_, s.addr, static_cast<std::uint32_t>(s.len),
                     [this, command, left, bytes](const std::uint8_t*, std::uint32_t) {
                       if (--*left != 0) return;
                       const ReadWriteFields f = decode_read_write(command->sqe);
                       const Picoseconds stored = flash_.write(
                           now(), f.slba * lba_bytes_, static_cast<std::uint32_t>(bytes));
                       schedule_at(stored, [this, command] { complete(*command, Status::Success); });
                     });
      }
    }
  };

  if (!needs_list) {
    transfer(nullptr, 0);
    return;
  }
  // Entries needed after PRP1, all read from the list in one request (a list
  // page that chains to another is read entry-exact up to its end).
  const std::uint64_t entries = (bytes - first + kPageBytes - 1) / kPageBytes;
  const std::uint64_t in_page = (kPageBytes - page_offset(sqe.prp2, kPageBytes)) / 8;
  const auto list_len = static_cast<std::uint32_t>(std::min(entries, in_page) * 8);
  fabric_.read(node_, sqe.prp2, list_len,
               [transfer](const std::uint8_t* data, std::uint32_t len) { transfer(data, len); });
}

void Controller::complete(const Command& command, Status status) {
  SubmissionQueue& sq = sqs_[command.qid];
  const std::uint16_t cid = command.sqe.cid();
  std::uint64_t& word = sq.outstanding[cid / 64];
  const std::uint64_t bit = std::uint64_t{1} << (cid % 64);
  if (!(word & bit)) violation("command completed twice", command.qid, 0, cid);
  word &= ~bit;
  service_.record(now() - command.fetched_at);
  ++completed_;
  CompletionEntry entry{};
  entry.sqid = command.qid;
  entry.cid = cid;
  entry.set_status(status, false);
  post(command.qid, entry);
}

void Controller::post(std::uint16_t qid, const CompletionEntry& pending) {
  CompletionQueue& cq = cqs_[qid];
  if ((cq.tail + 1) % cq.entries == cq.head) {
    ++cq_full_stalls_;
    cq.waiting.push_back(pending);
    return;
  }
  CompletionEntry entry = pending;
  entry.sqhd = static_cast<std::uint16_t>(sqs_[qid].head);
  entry.set_status(entry.status(), cq.phase);
  const std::uint64_t addr = cq.base + std::uint64_t{cq.tail} * kCqEntrySize;
  cq.tail = (cq.tail + 1) % cq.entries;
  if (cq.tail == 0) cq.phase = !cq.phase;
  fabric_.write(node_, addr, kCqEntrySize, &entry, nullptr);
}

void Controller::check_drained() const {
  for (std::size_t qid = 1; qid < sqs_.size(); ++qid) {
    const SubmissionQueue& sq = sqs_[qid];
    if (!sq.exists) continue;
    for (std::size_t w = 0; w < sq.outstanding.size(); ++w) {
      if (sq.outstanding[w] != 0) {
        const auto cid = static_cast<std::uint16_t>(w * 64 + __builtin_ctzll(sq.outstanding[w]));
        violation("command never completed", static_cast<std::uint16_t>(qid), 0, cid);
      }
    }
    if (sq.head != sq.tail) {
      violation(fmt::format("{} entries rung but never fetched",
                            (sq.tail + sq.entries - sq.head) % sq.entries),
                static_cast<std::uint16_t>(qid), sq.head, 0);
    }
  }
}

nlohmann::json Controller::statistics(Picoseconds elapsed) const {
  const flash::FlashStats& f = flash_.stats();
  return {{"commands", completed_},
          {"errors", errors_},
          {"doorbell_writes", doorbell_writes_},
          {"cq_full_stalls", cq_full_stalls_},
          {"fetch_wait_ns", fetch_wait_.summary_ns()},
          {"service_ns", service_.summary_ns()},
          {"flash", {{"page_reads", f.page_reads}, {"page_programs", f.page_programs}}},
          {"iops", elapsed == 0 ? 0.0
                                : static_cast<double>(completed_) * 1e12 /
                                      static_cast<double>(elapsed)}};
}

}  // namespace gpunvme::nvme
