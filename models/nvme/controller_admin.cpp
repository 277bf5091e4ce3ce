// Admin commands, Doorbell Buffer Config among them. The statuses are those of the NVM
// Express Base Specification 1.4, section 5 (each command's "Command
// Specific Status Values" figure) and 4.6.1.2.1 (generic statuses).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "models/nvme/controller.h"
#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_queue.h"

namespace gpunvme::nvme {

namespace {
constexpr std::uint64_t kPageBytes = 4096;
constexpr std::uint32_t kIdentifyBytes = 4096;
constexpr std::uint32_t kVersion14 = 0x00010400;
// Asynchronous Event Requests held at once (Identify AERL is zero-based).
constexpr std::size_t kAerLimit = 4;

template <class T>
void put(std::array<std::uint8_t, kIdentifyBytes>& data, std::size_t offset, T value) {
  std::memcpy(data.data() + offset, &value, sizeof value);
}

void put_text(std::array<std::uint8_t, kIdentifyBytes>& data, std::size_t offset, std::size_t width,
              const std::string& text) {
  // ASCII, left justified, padded with spaces (Identify SN, MN, FR).
  for (std::size_t i = 0; i < width; ++i) {
    data[offset + i] = static_cast<std::uint8_t>(i < text.size() ? text[i] : ' ');
  }
}

int log2_exact(std::uint32_t v) {
  int n = 0;
  while ((1u << n) < v) ++n;
  return n;
}
}  // namespace

// Admin commands run one at a time on their own processor; each takes
// admin_command_ns, then its effect happens and its completion is posted.
void Controller::execute_admin(CommandPtr command) {
  const Picoseconds processed = admin_processor_.book(now(), admin_command_).end;
  const SubmissionEntry& sqe = command->sqe;
  auto finish = [this, command, processed](Status status) {
    schedule_at(processed, [this, command, status] { admin_done(command, status); });
  };
  // SGLs are not allowed for admin commands over PCIe (1.4, 4.2).
  if (sqe.psdt() != Psdt::Prp) {
    finish(Status::InvalidFieldInCommand);
    return;
  }
  switch (static_cast<AdminOpcode>(sqe.opcode())) {
    case AdminOpcode::Identify:
      schedule_at(processed, [this, command] { identify(command); });
      return;
    case AdminOpcode::CreateIoCq:
      schedule_at(processed, [this, command] { admin_done(command, create_cq(command->sqe)); });
      return;
    case AdminOpcode::CreateIoSq:
      schedule_at(processed, [this, command] { admin_done(command, create_sq(command->sqe)); });
      return;
    case AdminOpcode::DeleteIoSq:
      schedule_at(processed, [this, command] { delete_sq(command); });
      return;
    case AdminOpcode::DeleteIoCq:
      schedule_at(processed, [this, command] { admin_done(command, delete_cq(command->sqe)); });
      return;
    case AdminOpcode::SetFeatures:
      schedule_at(processed, [this, command] {
        std::uint32_t dw0 = 0;
        const Status status = set_features(command->sqe, &dw0);
        admin_done(command, status, dw0);
      });
      return;
    case AdminOpcode::GetFeatures:
      schedule_at(processed, [this, command] {
        std::uint32_t dw0 = 0;
        const Status status = get_features(command->sqe, &dw0);
        admin_done(command, status, dw0);
      });
      return;
    case AdminOpcode::Abort:
      // Aborts are best effort (1.4, 5.1): this controller aborts only a
      // command it lost (an injected timeout), which then completes with
      // Command Abort Requested; DW0 bit 0 says whether it was aborted (0)
      // or not (1: not found, or still being served and left to finish).
      schedule_at(processed, [this, command] {
        const std::uint32_t dw10 = command->sqe.cdw10;
        const bool aborted = abort_lost(static_cast<std::uint16_t>(dw10 & 0xFFFFu),
                                        static_cast<std::uint16_t>(dw10 >> 16));
        admin_done(command, Status::Success, aborted ? 0u : 1u);
      });
      return;
    case AdminOpcode::AsynchronousEventRequest:
      if (held_aers_.size() >= kAerLimit) {
        finish(Status::AsynchronousEventRequestLimitExceeded);
      } else {
        // Held until an event occurs; the model raises none.
        held_aers_.push_back(std::move(command));
      }
      return;
    case AdminOpcode::DoorbellBufferConfig:
      if (!shadow_supported_) {
        finish(Status::InvalidCommandOpcode);
        return;
      }
      schedule_at(processed, [this, command] {
        admin_done(command, configure_doorbell_buffer(command->sqe));
      });
      return;
    default: finish(Status::InvalidCommandOpcode); return;
  }
}

void Controller::admin_done(CommandPtr command, Status status, std::uint32_t dw0) {
  complete(*command, status, dw0);
}

bool Controller::queue_memory_ok(std::uint64_t base, std::uint64_t bytes, bool* in_cmb) const {
  const Region* region = memory_.find(base, bytes);
  if (region == nullptr) return false;
  *in_cmb = region->kind == RegionKind::ControllerMemoryBuffer && region->owner == node_;
  return region->kind == RegionKind::HostMemory || region->kind == RegionKind::DeviceMemory ||
         *in_cmb;
}

// Create I/O Completion Queue (1.4, 5.3).
Status Controller::create_cq(const SubmissionEntry& sqe) {
  const CreateIoCqFields f = decode_create_io_cq(sqe);
  const bool exists = f.qid != 0 && f.qid <= granted_cqs_ && queues_.cq(f.qid).exists;
  const QueueError refused =
      check_queue_create(f.qid, granted_cqs_, exists, f.queue_entries, max_entries_);
  if (refused != QueueError::None) return status_for(refused);
  if (!f.physically_contiguous) return Status::InvalidFieldInCommand;  // CAP.CQR = 1
  if (cc_.iocqes != kCqEntrySizeLog2) return Status::InvalidFieldInCommand;
  if (page_offset(f.base, kPageBytes) != 0) return Status::PrpOffsetInvalid;
  if (f.irq_enabled && f.vector >= completions_->vectors()) return Status::InvalidInterruptVector;
  if (f.indexed && !indexed_supported_) return Status::InvalidFieldInCommand;
  bool in_cmb = false;
  if (!queue_memory_ok(f.base, std::uint64_t{f.queue_entries} * kCqEntrySize, &in_cmb)) {
    return Status::InvalidFieldInCommand;
  }
  // Batch completion notification (a proposed extension): offered, not with
  // indexed completion (whose entries have fixed slots), and a bitmap of
  // whole lines in memory the controller may write.
  const BatchCompletionFields batch = decode_batch_completion(sqe);
  if (batch.enabled) {
    if (!batch_supported_ || f.indexed) return Status::InvalidFieldInCommand;
    if (batch.bitmap % kBatchBitmapAlignment != 0) return Status::InvalidFieldInCommand;
    bool bitmap_in_cmb = false;
    if (!queue_memory_ok(batch.bitmap, std::uint64_t{batch.words} * kBatchBitmapWordBytes,
                         &bitmap_in_cmb)) {
      return Status::InvalidFieldInCommand;
    }
  }
  CompletionQueue& cq = queues_.cq(f.qid);
  cq = CompletionQueue{};
  cq.exists = true;
  cq.base = f.base;
  cq.entries = f.queue_entries;
  cq.in_cmb = in_cmb;
  cq.irq_enabled = f.irq_enabled;
  cq.vector = f.vector;
  cq.indexed = f.indexed;
  queues_.ring_created(f.qid, /*sq=*/false);
  if (batch.enabled) batch_->open(f.qid, batch.bitmap, batch.words);
  if (shadow_->configured()) shadow_->start(DoorbellKind::CqHead, f.qid);
  return Status::Success;
}

// Create I/O Submission Queue (1.4, 5.4).
Status Controller::create_sq(const SubmissionEntry& sqe) {
  const CreateIoSqFields f = decode_create_io_sq(sqe);
  const bool exists = f.qid != 0 && f.qid <= granted_sqs_ && queues_.sq(f.qid).exists;
  const QueueError refused =
      check_queue_create(f.qid, granted_sqs_, exists, f.queue_entries, max_entries_);
  if (refused != QueueError::None) return status_for(refused);
  if (!f.physically_contiguous) return Status::InvalidFieldInCommand;  // CAP.CQR = 1
  if (cc_.iosqes != kSqEntrySizeLog2) return Status::InvalidFieldInCommand;
  if (f.cqid == 0 || f.cqid >= queues_.count() || !queues_.cq(f.cqid).exists) {
    return Status::CompletionQueueInvalid;
  }
  if (page_offset(f.base, kPageBytes) != 0) return Status::PrpOffsetInvalid;
  if (f.warp_doorbells && !warp_doorbells_supported_) return Status::InvalidFieldInCommand;
  if (f.wide_cids && !wide_cids_supported_) return Status::InvalidFieldInCommand;
  // An indexed CQ holds one entry per slot of the one SQ bound to it.
  const CompletionQueue& bound = queues_.cq(f.cqid);
  if (bound.indexed && bound.bound_sqs > 0) return Status::CompletionQueueInvalid;
  if (bound.indexed && bound.entries != f.queue_entries) return Status::InvalidQueueSize;
  bool in_cmb = false;
  if (!queue_memory_ok(f.base, std::uint64_t{f.queue_entries} * kSqEntrySize, &in_cmb)) {
    return Status::InvalidFieldInCommand;
  }
  SubmissionQueue& sq = queues_.sq(f.qid);
  sq = SubmissionQueue{};
  processors_->forget_queue(f.qid);
  sq.open(f.base, f.queue_entries);
  sq.cqid = f.cqid;
  sq.priority = f.priority;
  sq.warp_doorbells = f.warp_doorbells;
  sq.wide_cids = f.wide_cids;
  sq.in_cmb = in_cmb;
  ++queues_.cq(f.cqid).bound_sqs;
  fetch_->arbiter().add_queue(f.qid, f.priority);
  queues_.ring_created(f.qid, /*sq=*/true);
  if (shadow_->configured()) shadow_->start(DoorbellKind::SqTail, f.qid);
  return Status::Success;
}

// Delete I/O Submission Queue (1.4, 5.6): completes once every command of
// the queue has completed. Entries rung but not yet fetched are still
// fetched and complete with Command Aborted due to SQ Deletion, so every
// submitted command gets exactly one completion.
void Controller::delete_sq(CommandPtr command) {
  const std::uint16_t qid = decode_delete_queue_qid(command->sqe);
  if (qid == 0 || qid >= queues_.count() || !queues_.sq(qid).exists || queues_.sq(qid).on_drained) {
    admin_done(command, Status::InvalidQueueIdentifier);
    return;
  }
  SubmissionQueue& sq = queues_.sq(qid);
  const std::uint64_t generation = generation_;
  sq.on_drained = [this, command, qid, generation] {
    if (generation != generation_) return;
    fetch_->arbiter().remove_queue(qid);
    if (shadow_->configured()) shadow_->stop(DoorbellKind::SqTail, qid);
    --queues_.cq(queues_.sq(qid).cqid).bound_sqs;
    const std::uint64_t base = queues_.sq(qid).base;
    queues_.sq(qid) = SubmissionQueue{};
    processors_->forget_queue(qid);
    queues_.ring_deleted(base);
    admin_done(command, Status::Success);
  };
  if (sq.in_flight == 0 && sq.fetching == 0 && sq.head == sq.tail) {
    auto drained = std::move(sq.on_drained);
    sq.on_drained = nullptr;
    drained();
  }
}

// Delete I/O Completion Queue (1.4, 5.5): every SQ posting to it must be
// deleted first.
Status Controller::delete_cq(const SubmissionEntry& sqe) {
  const std::uint16_t qid = decode_delete_queue_qid(sqe);
  if (qid == 0 || qid >= queues_.count() || !queues_.cq(qid).exists)
    return Status::InvalidQueueIdentifier;
  if (queues_.cq(qid).bound_sqs != 0) return Status::InvalidQueueDeletion;
  if (shadow_->configured()) shadow_->stop(DoorbellKind::CqHead, qid);
  batch_->close(qid);
  const std::uint64_t base = queues_.cq(qid).base;
  queues_.cq(qid) = CompletionQueue{};
  queues_.ring_deleted(base);
  return Status::Success;
}

// Identify (1.4, 5.15): the 4 KiB structure moves to PRP1/PRP2 by DMA, and
// the completion follows it.
void Controller::identify(CommandPtr command) {
  const SubmissionEntry& sqe = command->sqe;
  const auto cns = static_cast<IdentifyCns>(sqe.cdw10 & 0xFFu);
  std::array<std::uint8_t, kIdentifyBytes> data{};
  if (cns == IdentifyCns::Controller) {
    put<std::uint16_t>(data, 0, 0x1E0F);  // VID: an unassigned-looking vendor for a model
    put_text(data, 4, 20, "GPUNVME-SIM");
    put_text(data, 24, 40, id());
    put_text(data, 64, 8, "1.0");
    data[72] = default_burst_log2_;  // RAB
    data[kIdentifyCtrlMdtsOffset] = mdts_;
    put<std::uint16_t>(data, 78, 1);  // CNTLID
    put<std::uint32_t>(data, 80, kVersion14);
    put<std::uint16_t>(data, 256, shadow_supported_ ? (1u << 8) : 0u);  // OACS bit 8: DBBC
    data[258] = 3;                                                      // ACL: 4 aborts
    data[259] = static_cast<std::uint8_t>(kAerLimit - 1);               // AERL
    data[kIdentifyCtrlSqesOffset] = (kSqEntrySizeLog2 << 4) | kSqEntrySizeLog2;
    data[kIdentifyCtrlCqesOffset] = (kCqEntrySizeLog2 << 4) | kCqEntrySizeLog2;
    put<std::uint16_t>(data, 514,
                       static_cast<std::uint16_t>(
                           std::min<std::uint32_t>(fetch_->max_active(), 0xFFFF)));  // MAXCMD
    put<std::uint32_t>(data, 516, 1);        // NN: one namespace
    put<std::uint16_t>(data, 520, 1u << 2);  // ONCS bit 2: Dataset Management
    data[525] = vwc_present_ ? 1 : 0;        // VWC
    // SGLS: bits 1:0 = 01b (byte-aligned data blocks), bit 16 bit buckets.
    put<std::uint32_t>(data, kIdentifyCtrlSglsOffset, sgl_supported_ ? (1u | (1u << 16)) : 0u);
  } else if (cns == IdentifyCns::Namespace) {
    if (sqe.nsid != 1) {
      admin_done(command, Status::InvalidNamespaceOrFormat);
      return;
    }
    const std::uint64_t lbas = capacity_lbas();
    put<std::uint64_t>(data, 0, lbas);   // NSZE
    put<std::uint64_t>(data, 8, lbas);   // NCAP
    put<std::uint64_t>(data, 16, lbas);  // NUSE
    data[25] = 0;                        // NLBAF: one format
    data[26] = 0;                        // FLBAS: format 0
    put<std::uint32_t>(data, 128, static_cast<std::uint32_t>(log2_exact(lba_bytes_)) << 16);
  } else if (cns == IdentifyCns::ActiveNamespaceList) {
    if (sqe.nsid < 1) put<std::uint32_t>(data, 0, 1);  // namespaces above NSID: just 1
  } else {
    admin_done(command, Status::InvalidFieldInCommand);
    return;
  }
  struct Piece {
    std::uint64_t addr, len;
  };
  std::vector<Piece> pieces;
  const Status walked = walk_prp(
      sqe.prp1, sqe.prp2, kIdentifyBytes, kPageBytes, [](std::uint64_t) { return 0ull; },
      [&](std::uint64_t addr, std::uint64_t len) {
        pieces.push_back({addr, len});
      });
  if (walked != Status::Success) {
    admin_done(command, walked);
    return;
  }
  std::uint64_t offset = 0;
  for (const Piece& piece : pieces) {
    check_dma_target(*command, piece.addr, piece.len, "Identify data");
    if (dma_observer_) dma_observer_({command->qid, sqe.cid(), piece.addr, piece.len, true});
    mem_write(piece.addr, static_cast<std::uint32_t>(piece.len), data.data() + offset, nullptr);
    offset += piece.len;
  }
  admin_done(command, Status::Success);
}

// Set Features (1.4, 5.21).
Status Controller::set_features(const SubmissionEntry& sqe, std::uint32_t* dw0) {
  const FeatureId fid = decode_feature_id(sqe);
  if ((sqe.cdw10 >> 31) != 0) return Status::FeatureIdentifierNotSaveable;
  switch (fid) {
    case FeatureId::NumberOfQueues: {
      const NumQueues asked = decode_num_queues(sqe.cdw11);
      if (asked.nsq_zero_based == 0xFFFF || asked.ncq_zero_based == 0xFFFF) {
        return Status::InvalidFieldInCommand;
      }
      // Only before any I/O queue exists (1.4, 5.21.1.7).
      for (std::size_t qid = 1; qid < queues_.count(); ++qid) {
        if (queues_.sq(qid).exists || queues_.cq(qid).exists) return Status::CommandSequenceError;
      }
      granted_sqs_ = std::min(asked.sq_count(), max_io_queues_);
      granted_cqs_ = std::min(asked.cq_count(), max_io_queues_);
      *dw0 = NumQueues{static_cast<std::uint16_t>(granted_sqs_ - 1),
                       static_cast<std::uint16_t>(granted_cqs_ - 1)}
                 .encode();
      return Status::Success;
    }
    case FeatureId::Arbitration:
      fetch_->arbiter().set_arbitration(decode_arbitration(sqe.cdw11));
      return Status::Success;
    case FeatureId::VolatileWriteCache:
      if (!vwc_present_) return Status::InvalidFieldInCommand;
      vwc_enabled_ = (sqe.cdw11 & 1u) != 0;
      return Status::Success;
    default: return Status::InvalidFieldInCommand;
  }
}

Status Controller::get_features(const SubmissionEntry& sqe, std::uint32_t* dw0) const {
  switch (decode_feature_id(sqe)) {
    case FeatureId::NumberOfQueues:
      *dw0 = NumQueues{static_cast<std::uint16_t>(granted_sqs_ - 1),
                       static_cast<std::uint16_t>(granted_cqs_ - 1)}
                 .encode();
      return Status::Success;
    case FeatureId::Arbitration:
      *dw0 = fetch_->arbiter().arbitration().encode();
      return Status::Success;
    case FeatureId::VolatileWriteCache:
      if (!vwc_present_) return Status::InvalidFieldInCommand;
      *dw0 = vwc_enabled_ ? 1u : 0u;
      return Status::Success;
    default: return Status::InvalidFieldInCommand;
  }
}

// ---------------------------------------------------------------------------
// Shadow doorbells (Doorbell Buffer Config, 1.4, 5.7)
// ---------------------------------------------------------------------------

// PRP1 is the shadow doorbell buffer and PRP2 the EventIdx buffer, each page
// aligned and laid out like the doorbells, large enough for every granted
// queue.
Status Controller::configure_doorbell_buffer(const SubmissionEntry& sqe) {
  const std::uint64_t bytes =
      2ull * (std::max(granted_sqs_, granted_cqs_) + 1) * doorbell_stride_bytes(dstrd_);
  for (std::uint64_t base : {sqe.prp1, sqe.prp2}) {
    if (base == 0 || page_offset(base, kPageBytes) != 0) return Status::InvalidFieldInCommand;
    const Region* region = memory_.find(base, bytes);
    if (region == nullptr ||
        (region->kind != RegionKind::HostMemory && region->kind != RegionKind::DeviceMemory)) {
      return Status::InvalidFieldInCommand;
    }
  }
  shadow_->configure(sqe.prp1, sqe.prp2);
  return Status::Success;
}

}  // namespace gpunvme::nvme
