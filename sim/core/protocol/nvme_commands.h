// Command builders and decoders for the admin and NVM commands the simulator
// uses.
//
// Builders produce a complete SubmissionEntry with PSDT = PRP; the caller fills
// DPTR through build_prp() (nvme_prp.h) or replaces it with an SGL through
// SubmissionEntry::set_sgl1(). Decoders give the controller model the fields
// back. Field positions are from the NVM Express Base Specification 1.4,
// section 5 (Admin Command Set: Create I/O Completion Queue, Create I/O
// Submission Queue, Delete I/O Completion/Submission Queue, Abort, Identify,
// Get/Set Features, Doorbell Buffer Config) and section 6 (NVM Command Set:
// Flush, Read, Write).
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// ---------------------------------------------------------------------------
// NVM command set: Read, Write, Flush
// ---------------------------------------------------------------------------

// CDW12 flags of Read and Write.
constexpr std::uint32_t kRwForceUnitAccess = 1u << 30;  // FUA
constexpr std::uint32_t kRwLimitedRetry = 1u << 31;     // LR

namespace detail {

GPUNVME_HD constexpr SubmissionEntry make_rw(NvmOpcode opc, std::uint16_t cid, std::uint32_t nsid,
                                             std::uint64_t slba, std::uint16_t nlb_zero_based,
                                             std::uint64_t prp1, std::uint64_t prp2) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(opc));
  e.set_cid(cid);
  e.nsid = nsid;
  e.prp1 = prp1;
  e.prp2 = prp2;
  e.cdw10 = static_cast<std::uint32_t>(slba & 0xFFFFFFFFull);  // SLBA bits 31:0
  e.cdw11 = static_cast<std::uint32_t>(slba >> 32);            // SLBA bits 63:32
  e.cdw12 = nlb_zero_based;                                    // NLB, bits 15:0, zero-based
  return e;
}

}  // namespace detail

// Read (section 6.9): `nlb_zero_based + 1` logical blocks starting at `slba`.
GPUNVME_HD constexpr SubmissionEntry make_read(std::uint16_t cid, std::uint32_t nsid,
                                               std::uint64_t slba, std::uint16_t nlb_zero_based,
                                               std::uint64_t prp1, std::uint64_t prp2) {
  return detail::make_rw(NvmOpcode::Read, cid, nsid, slba, nlb_zero_based, prp1, prp2);
}

// Write `nlb_zero_based + 1` logical blocks starting at `slba`.
GPUNVME_HD constexpr SubmissionEntry make_write(std::uint16_t cid, std::uint32_t nsid,
                                                std::uint64_t slba, std::uint16_t nlb_zero_based,
                                                std::uint64_t prp1, std::uint64_t prp2) {
  return detail::make_rw(NvmOpcode::Write, cid, nsid, slba, nlb_zero_based, prp1, prp2);
}

GPUNVME_HD constexpr SubmissionEntry make_flush(std::uint16_t cid, std::uint32_t nsid) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(NvmOpcode::Flush));
  e.set_cid(cid);
  e.nsid = nsid;
  return e;
}

struct ReadWriteFields {
  std::uint64_t slba;
  std::uint32_t block_count;  // NLB + 1, 1..65536
  bool fua;
  bool limited_retry;
};

GPUNVME_HD constexpr ReadWriteFields decode_read_write(const SubmissionEntry& e) {
  ReadWriteFields f{};
  f.slba = static_cast<std::uint64_t>(e.cdw10) | (static_cast<std::uint64_t>(e.cdw11) << 32);
  f.block_count = (e.cdw12 & 0xFFFFu) + 1u;
  f.fua = (e.cdw12 & kRwForceUnitAccess) != 0;
  f.limited_retry = (e.cdw12 & kRwLimitedRetry) != 0;
  return f;
}

// ---------------------------------------------------------------------------
// Queue management: Create / Delete I/O Completion and Submission Queues
// ---------------------------------------------------------------------------

// Queue priority of an I/O SQ (Create I/O SQ CDW11 QPRIO, bits 2:1), used
// when CC.AMS selects weighted round robin with urgent priority class.
enum class QueuePriority : std::uint8_t {
  Urgent = 0x0,
  High = 0x1,
  Medium = 0x2,
  Low = 0x3,
};

// Create I/O Completion Queue. `queue_entries` is the number of entries
// (2..65536, at most CAP.MQES + 1); the command carries it zero-based in
// CDW10.QSIZE. PRP1 is the queue base when `physically_contiguous`, otherwise
// a PRP list.
//   CDW10: QSIZE 31:16, QID 15:0
//   CDW11: IV 31:16, ICQ bit 2, IEN bit 1, PC bit 0
// ICQ (indexed completion, a proposed extension: seed 003's "completion =
// &cq[my_sq_slot]"; bit 2 is reserved in NVMe 1.4): the controller writes
// each command's completion entry at the CQ slot with the index of the SQ
// slot the command was fetched from, its phase tag that of the SQ lap, and
// never holds one back for a full CQ; the CQ head doorbell is not used. The
// CQ must have the entries of the one SQ bound to it.
GPUNVME_HD constexpr SubmissionEntry make_create_io_cq(std::uint16_t cid, std::uint16_t qid,
                                                       std::uint32_t queue_entries,
                                                       std::uint64_t prp1,
                                                       bool physically_contiguous, bool irq_enabled,
                                                       std::uint16_t vector, bool indexed = false) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::CreateIoCq));
  e.set_cid(cid);
  e.prp1 = prp1;
  e.cdw10 = (((queue_entries - 1u) & 0xFFFFu) << 16) | qid;
  e.cdw11 = (static_cast<std::uint32_t>(vector) << 16) | (irq_enabled ? 1u << 1 : 0u) |
            (indexed ? 1u << 2 : 0u) | (physically_contiguous ? 1u : 0u);
  return e;
}

// Create I/O Submission Queue, bound to completion queue `cqid`.
//   CDW10: QSIZE 31:16, QID 15:0
//   CDW11: CQID 31:16, WCID bit 4, WDB bit 3, QPRIO 2:1, PC bit 0
// WDB (warp doorbells, a proposed extension; bit 3 is reserved in NVMe 1.4):
// the queue's tail doorbell also takes run announcements
// (sim/core/protocol/nvme_warp_doorbell.h).
// WCID (wide CIDs, a proposed extension; bit 4 is reserved in NVMe 1.4): the
// queue's commands carry 32-bit CIDs (sim/core/protocol/nvme_wide_cid.h).
GPUNVME_HD constexpr SubmissionEntry make_create_io_sq(
    std::uint16_t cid, std::uint16_t qid, std::uint32_t queue_entries, std::uint64_t prp1,
    std::uint16_t cqid, QueuePriority priority, bool physically_contiguous = true,
    bool warp_doorbells = false, bool wide_cids = false) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::CreateIoSq));
  e.set_cid(cid);
  e.prp1 = prp1;
  e.cdw10 = (((queue_entries - 1u) & 0xFFFFu) << 16) | qid;
  e.cdw11 = (static_cast<std::uint32_t>(cqid) << 16) |
            ((static_cast<std::uint32_t>(priority) & 0x3u) << 1) | (warp_doorbells ? 1u << 3 : 0u) |
            (wide_cids ? 1u << 4 : 0u) | (physically_contiguous ? 1u : 0u);
  return e;
}

// Delete I/O Submission Queue / Completion Queue: CDW10 QID 15:0. An SQ must
// be deleted before the CQ it posts to (otherwise Invalid Queue Deletion).
GPUNVME_HD constexpr SubmissionEntry make_delete_io_sq(std::uint16_t cid, std::uint16_t qid) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::DeleteIoSq));
  e.set_cid(cid);
  e.cdw10 = qid;
  return e;
}

GPUNVME_HD constexpr SubmissionEntry make_delete_io_cq(std::uint16_t cid, std::uint16_t qid) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::DeleteIoCq));
  e.set_cid(cid);
  e.cdw10 = qid;
  return e;
}

struct CreateIoCqFields {
  std::uint16_t qid;
  std::uint32_t queue_entries;  // QSIZE + 1
  std::uint64_t base;           // PRP1
  bool physically_contiguous;
  bool irq_enabled;
  std::uint16_t vector;
  bool indexed;  // ICQ
};

GPUNVME_HD constexpr CreateIoCqFields decode_create_io_cq(const SubmissionEntry& e) {
  CreateIoCqFields f{};
  f.qid = static_cast<std::uint16_t>(e.cdw10 & 0xFFFFu);
  f.queue_entries = (e.cdw10 >> 16) + 1u;
  f.base = e.prp1;
  f.physically_contiguous = (e.cdw11 & 0x1u) != 0;
  f.irq_enabled = (e.cdw11 & 0x2u) != 0;
  f.indexed = (e.cdw11 & 0x4u) != 0;
  f.vector = static_cast<std::uint16_t>(e.cdw11 >> 16);
  return f;
}

struct CreateIoSqFields {
  std::uint16_t qid;
  std::uint32_t queue_entries;  // QSIZE + 1
  std::uint64_t base;           // PRP1
  bool physically_contiguous;
  QueuePriority priority;
  std::uint16_t cqid;
  bool warp_doorbells;  // WDB
  bool wide_cids;       // WCID
};

GPUNVME_HD constexpr CreateIoSqFields decode_create_io_sq(const SubmissionEntry& e) {
  CreateIoSqFields f{};
  f.qid = static_cast<std::uint16_t>(e.cdw10 & 0xFFFFu);
  f.queue_entries = (e.cdw10 >> 16) + 1u;
  f.base = e.prp1;
  f.physically_contiguous = (e.cdw11 & 0x1u) != 0;
  f.priority = static_cast<QueuePriority>((e.cdw11 >> 1) & 0x3u);
  f.warp_doorbells = (e.cdw11 & 0x8u) != 0;
  f.wide_cids = (e.cdw11 & 0x10u) != 0;
  f.cqid = static_cast<std::uint16_t>(e.cdw11 >> 16);
  return f;
}

// Queue identifier of a Delete I/O SQ/CQ command.
GPUNVME_HD constexpr std::uint16_t decode_delete_queue_qid(const SubmissionEntry& e) {
  return static_cast<std::uint16_t>(e.cdw10 & 0xFFFFu);
}

// ---------------------------------------------------------------------------
// Abort and Identify
// ---------------------------------------------------------------------------

// Abort: CDW10 CID 31:16 (command to abort), SQID 15:0.
GPUNVME_HD constexpr SubmissionEntry make_abort(std::uint16_t cid, std::uint16_t sqid,
                                                std::uint16_t cid_to_abort) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::Abort));
  e.set_cid(cid);
  e.cdw10 = (static_cast<std::uint32_t>(cid_to_abort) << 16) | sqid;
  return e;
}

// Identify: CDW10 CNTID 31:16 (zero here), CNS 7:0. The 4 KiB data structure
// is returned through PRP1/PRP2 (PRP2 needed only when PRP1 has an offset).
GPUNVME_HD constexpr SubmissionEntry make_identify(std::uint16_t cid, IdentifyCns cns,
                                                   std::uint32_t nsid, std::uint64_t prp1,
                                                   std::uint64_t prp2 = 0) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::Identify));
  e.set_cid(cid);
  e.nsid = nsid;
  e.prp1 = prp1;
  e.prp2 = prp2;
  e.cdw10 = static_cast<std::uint32_t>(cns);
  return e;
}

// Byte offsets in the Identify Controller data structure used by the models.
constexpr std::uint32_t kIdentifyCtrlMdtsOffset = 77;   // MDTS: 2^n min pages
constexpr std::uint32_t kIdentifyCtrlSqesOffset = 512;  // SQES: max 7:4, required 3:0
constexpr std::uint32_t kIdentifyCtrlCqesOffset = 513;  // CQES: max 7:4, required 3:0
constexpr std::uint32_t kIdentifyCtrlSglsOffset = 536;  // SGLS, 4 bytes

// ---------------------------------------------------------------------------
// Get / Set Features
// ---------------------------------------------------------------------------

// Set Features (section 5.21): CDW10 SV bit 31 (save), FID 7:0; CDW11 feature
// specific.
GPUNVME_HD constexpr SubmissionEntry make_set_features(std::uint16_t cid, FeatureId fid,
                                                       std::uint32_t cdw11, bool save = false) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::SetFeatures));
  e.set_cid(cid);
  e.cdw10 = static_cast<std::uint32_t>(fid) | (save ? 1u << 31 : 0u);
  e.cdw11 = cdw11;
  return e;
}

// Get Features: CDW10 SEL 10:8 (0 = current value), FID 7:0.
GPUNVME_HD constexpr SubmissionEntry make_get_features(std::uint16_t cid, FeatureId fid) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::GetFeatures));
  e.set_cid(cid);
  e.cdw10 = static_cast<std::uint32_t>(fid);
  return e;
}

GPUNVME_HD constexpr FeatureId decode_feature_id(const SubmissionEntry& e) {
  return static_cast<FeatureId>(e.cdw10 & 0xFFu);
}

// Number of Queues (FID 07h, section 5.21.1.7). NSQR and NCQR are zero-based: the host asks for
// nsqr + 1 I/O SQs and ncqr + 1 I/O CQs, not counting the admin queues. 65535
// is not a valid request (Invalid Field in Command).
//   CDW11: NCQR 31:16, NSQR 15:0
GPUNVME_HD constexpr SubmissionEntry make_set_features_num_queues(std::uint16_t cid,
                                                                  std::uint16_t nsqr,
                                                                  std::uint16_t ncqr) {
  return make_set_features(cid, FeatureId::NumberOfQueues,
                           (static_cast<std::uint32_t>(ncqr) << 16) | nsqr);
}

// What the controller allocated, from completion DW0 (NCQA 31:16, NSQA 15:0),
// also zero-based. The same layout encodes the request in CDW11.
struct NumQueues {
  std::uint16_t nsq_zero_based;
  std::uint16_t ncq_zero_based;

  GPUNVME_HD constexpr std::uint32_t sq_count() const { return nsq_zero_based + 1u; }
  GPUNVME_HD constexpr std::uint32_t cq_count() const { return ncq_zero_based + 1u; }
  GPUNVME_HD constexpr std::uint32_t encode() const {
    return (static_cast<std::uint32_t>(ncq_zero_based) << 16) | nsq_zero_based;
  }
};

GPUNVME_HD constexpr NumQueues decode_num_queues(std::uint32_t dw) {
  return NumQueues{static_cast<std::uint16_t>(dw & 0xFFFFu), static_cast<std::uint16_t>(dw >> 16)};
}

// Arbitration (FID 01h, section 5.21.1.1).
//   CDW11: HPW 31:24, MPW 23:16, LPW 15:8, AB 2:0
// AB is the arbitration burst as a power of two (2^AB commands fetched per
// turn); 111b means no limit. The weights are zero-based: a queue of the
// high-priority class gets hpw + 1 bursts per weighted round.
constexpr std::uint8_t kArbitrationBurstUnlimited = 0x7;

struct Arbitration {
  std::uint8_t burst_log2;
  std::uint8_t low_weight_zero_based;
  std::uint8_t medium_weight_zero_based;
  std::uint8_t high_weight_zero_based;

  GPUNVME_HD constexpr std::uint32_t encode() const {
    return (static_cast<std::uint32_t>(high_weight_zero_based) << 24) |
           (static_cast<std::uint32_t>(medium_weight_zero_based) << 16) |
           (static_cast<std::uint32_t>(low_weight_zero_based) << 8) | (burst_log2 & 0x7u);
  }
  GPUNVME_HD constexpr bool burst_unlimited() const {
    return burst_log2 == kArbitrationBurstUnlimited;
  }
};

GPUNVME_HD constexpr Arbitration decode_arbitration(std::uint32_t dw) {
  return Arbitration{static_cast<std::uint8_t>(dw & 0x7u), static_cast<std::uint8_t>(dw >> 8),
                     static_cast<std::uint8_t>(dw >> 16), static_cast<std::uint8_t>(dw >> 24)};
}

GPUNVME_HD constexpr SubmissionEntry make_set_features_arbitration(std::uint16_t cid,
                                                                   std::uint8_t burst_log2,
                                                                   std::uint8_t lpw_zero_based,
                                                                   std::uint8_t mpw_zero_based,
                                                                   std::uint8_t hpw_zero_based) {
  return make_set_features(
      cid, FeatureId::Arbitration,
      Arbitration{burst_log2, lpw_zero_based, mpw_zero_based, hpw_zero_based}.encode());
}

// ---------------------------------------------------------------------------
// Doorbell Buffer Config (admin opcode 7Ch, NVMe 1.3 and later)
// ---------------------------------------------------------------------------

// PRP1: the Shadow Doorbell buffer, PRP2: the EventIdx buffer. Each is one
// memory page, memory-page aligned (otherwise Invalid Field in Command), laid
// out like the doorbell registers from 1000h on; see
// shadow_doorbell_offset() in nvme_registers.h and need_event() in
// nvme_queue.h.
GPUNVME_HD constexpr SubmissionEntry make_doorbell_buffer_config(std::uint16_t cid,
                                                                 std::uint64_t shadow_doorbells,
                                                                 std::uint64_t event_idx) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(AdminOpcode::DoorbellBufferConfig));
  e.set_cid(cid);
  e.prp1 = shadow_doorbells;
  e.prp2 = event_idx;
  return e;
}

}  // namespace gpunvme::nvme
