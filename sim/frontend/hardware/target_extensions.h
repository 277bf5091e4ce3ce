// The proposed NVMe extensions (README "Proposed NVMe extensions") as the
// hardware backend's software targets implement them: what a Create I/O CQ /
// SQ pair and a Doorbell Buffer Config ask for (decoded from the same
// sim/core/protocol layouts the simulated controller reads: CDW11 bits,
// PRP2 and CDW12 of a batch-notified CQ), whether a target that offers a
// given set accepts them, and where each command's completion goes. Header
// only and callable from host and device code, so that the GPU-resident
// target (gpu_target.cu) serves with these functions and the unit tests
// (tests/hardware) check them without a GPU.
//
// A target that polls doorbell words in memory sees values, not writes: two
// stores between two of its reads leave only the second. A tail value or a
// shadow word keeps its meaning under that (a later tail covers an earlier
// one), a warp doorbell does not (it names a run of slots, and a run that is
// overwritten before the target reads it is never fetched). Such a target
// therefore refuses warp doorbells (WDB); a physical controller, which sees
// every posted write, is not limited so.
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/nvme_wide_cid.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::hw {

// The extensions a target offers.
struct ExtensionSupport {
  bool indexed_completion = false;       // Create I/O CQ CDW11 bit 2 (ICQ)
  bool batch_completion = false;         // Create I/O CQ CDW11 bit 3 (BCN)
  bool wide_cids = false;                // Create I/O SQ CDW11 bit 4 (WCID)
  bool warp_doorbells = false;           // Create I/O SQ CDW11 bit 3 (WDB)
  bool shadow_doorbell_polling = false;  // Doorbell Buffer Config, shadow words polled
};

// The extensions of one I/O queue pair, as its Create commands set them.
struct QueueExtensions {
  bool indexed = false;            // ICQ: each CQE at its command's SQ slot
  bool batch = false;              // BCN: successes as bits of a bitmap
  std::uint64_t bitmap = 0;        // BCN: the bitmap's base (PRP2)
  std::uint32_t bitmap_words = 0;  // BCN: its 32-bit words (CDW12 15:0 + 1)
  bool wide_cids = false;          // WCID: 32-bit CIDs in SQE CDW2, echoed in CQE DW1
  bool warp_doorbells = false;     // WDB: run announcements on the SQ tail doorbell
};

// What a target answers to a Create I/O CQ / SQ pair: the queue and its
// extensions, or the status the Create command completes with and why.
struct QueuePairCreation {
  nvme::Status status = nvme::Status::Success;
  const char* reason = "";
  std::uint16_t qid = 0;
  std::uint32_t entries = 0;
  QueueExtensions ext;
};

// Decodes and checks the Create I/O CQ `create_cq` and Create I/O SQ
// `create_sq` of one queue pair (the SQ bound to the CQ of its own id, both of
// one size), against the extensions `offered` and the queue limits. The
// queue's id and size checks come first (check_queue_create covers them at
// the caller); here: the pairing and each extension.
GPUNVME_HD inline QueuePairCreation check_queue_pair(const nvme::SubmissionEntry& create_cq,
                                                     const nvme::SubmissionEntry& create_sq,
                                                     const ExtensionSupport& offered) {
  QueuePairCreation out;
  const nvme::CreateIoCqFields cq = nvme::decode_create_io_cq(create_cq);
  const nvme::CreateIoSqFields sq = nvme::decode_create_io_sq(create_sq);
  const nvme::BatchCompletionFields batch = nvme::decode_batch_completion(create_cq);
  out.qid = sq.qid;
  out.entries = sq.queue_entries;
  auto refuse = [&](nvme::Status status, const char* reason) {
    out.status = status;
    out.reason = reason;
    return out;
  };
  if (sq.cqid != cq.qid || sq.qid != cq.qid) {
    return refuse(nvme::Status::CompletionQueueInvalid,
                  "the target serves queue pairs: the SQ must post to the CQ of its own id");
  }
  if (sq.queue_entries != cq.queue_entries) {
    return refuse(nvme::Status::InvalidQueueSize,
                  "the target serves queue pairs: SQ and CQ must have the same entries");
  }
  if (cq.indexed && !offered.indexed_completion) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "indexed completion (Create I/O CQ CDW11 bit 2) is not offered");
  }
  if (batch.enabled && !offered.batch_completion) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "batch completion notification (Create I/O CQ CDW11 bit 3) is not offered");
  }
  if (sq.wide_cids && !offered.wide_cids) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "wide CIDs (Create I/O SQ CDW11 bit 4) are not offered");
  }
  if (sq.warp_doorbells && !offered.warp_doorbells) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "warp doorbells (Create I/O SQ CDW11 bit 3) are not offered: a target that "
                  "samples doorbell words in memory sees values, not writes, and would lose a "
                  "run announced between two of its reads");
  }
  if (cq.indexed && batch.enabled) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "a CQ is either indexed (CDW11 bit 2) or batch-notified (bit 3), not both");
  }
  if (batch.enabled && (batch.bitmap == 0 || batch.bitmap % nvme::kBatchBitmapAlignment != 0)) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "the completion bitmap (PRP2) must be a 64 B aligned address");
  }
  if (batch.enabled && sq.wide_cids) {
    return refuse(nvme::Status::InvalidFieldInCommand,
                  "the completion bitmap has one bit per 16-bit CID; a wide-CID SQ cannot post "
                  "to it");
  }
  out.ext.indexed = cq.indexed;
  out.ext.batch = batch.enabled;
  out.ext.bitmap = batch.enabled ? batch.bitmap : 0;
  out.ext.bitmap_words = batch.enabled ? batch.words : 0;
  out.ext.wide_cids = sq.wide_cids;
  out.ext.warp_doorbells = sq.warp_doorbells;
  return out;
}

// What a Doorbell Buffer Config leaves: the shadow doorbell and EventIdx
// buffers (memory-page aligned, else Invalid Field in Command).
struct ShadowBuffers {
  nvme::Status status = nvme::Status::Success;
  const char* reason = "";
  std::uint64_t shadow = 0;     // PRP1
  std::uint64_t event_idx = 0;  // PRP2
};

GPUNVME_HD inline ShadowBuffers check_doorbell_buffer_config(const nvme::SubmissionEntry& e,
                                                             const ExtensionSupport& offered) {
  ShadowBuffers out;
  if (!offered.shadow_doorbell_polling) {
    out.status = nvme::Status::InvalidCommandOpcode;
    out.reason = "shadow doorbells (Doorbell Buffer Config) are not offered";
    return out;
  }
  if (e.prp1 == 0 || e.prp2 == 0 || e.prp1 % nvme::kMinPageSize != 0 ||
      e.prp2 % nvme::kMinPageSize != 0) {
    out.status = nvme::Status::InvalidFieldInCommand;
    out.reason = "the shadow doorbell (PRP1) and EventIdx (PRP2) buffers must be page aligned";
    return out;
  }
  out.shadow = e.prp1;
  out.event_idx = e.prp2;
  return out;
}

// Where a shadow doorbell or EventIdx word of queue `qid` lies in its buffer
// (laid out like the doorbell registers from 1000h on).
GPUNVME_HD constexpr std::uint64_t shadow_word(std::uint64_t buffer, nvme::DoorbellKind kind,
                                               std::uint16_t qid, std::uint8_t dstrd) {
  return buffer + nvme::shadow_doorbell_offset(kind, qid, dstrd);
}

// The CID a command of queue `ext` is known by: all of CDW2 on a wide-CID SQ,
// else the 16-bit field.
GPUNVME_HD constexpr std::uint32_t command_cid(const nvme::SubmissionEntry& e,
                                               const QueueExtensions& ext) {
  return ext.wide_cids ? nvme::wide_cid(e) : std::uint32_t{e.cid()};
}

// The phase tag of ring position `position` (a monotonic count of entries
// since the queue's creation, or a ring index plus whole laps): 1 on the
// first lap, as every CQ starts (NVMe 2.0, 4.2.4).
GPUNVME_HD constexpr bool lap_phase(std::uint64_t position, std::uint32_t entries) {
  return ((position / entries) & 1u) == 0;
}

// Where one completion goes.
struct CompletionPlace {
  enum Kind : std::uint8_t { Ring, Slot, Bitmap };
  Kind kind = Ring;
  std::uint32_t slot = 0;  // Slot: the CQ slot (= the SQ slot); Ring: the caller's tail
  bool phase = true;       // Slot: the phase tag of the SQ lap the command was fetched in
  std::uint32_t word = 0;  // Bitmap: the word index, and the bit to flip in it
  std::uint32_t bit = 0;
};

// The completion of a command with CID `cid`, fetched from SQ slot
// `sq_slot` in the SQ lap whose phase is `sq_phase`, with status `status`:
//  - on an indexed CQ, at the CQ slot of that SQ slot with that lap's phase;
//  - on a batch-notified CQ, a success whose CID the bitmap covers flips bit
//    cid % 32 of word cid / 32; a failure, or a CID beyond the bitmap, is a
//    full entry in the ring;
//  - otherwise a full entry at the ring's tail.
GPUNVME_HD constexpr CompletionPlace place_completion(const QueueExtensions& ext, std::uint32_t cid,
                                                      std::uint32_t sq_slot, bool sq_phase,
                                                      nvme::Status status) {
  CompletionPlace p;
  if (ext.indexed) {
    p.kind = CompletionPlace::Slot;
    p.slot = sq_slot;
    p.phase = sq_phase;
    return p;
  }
  if (ext.batch && status == nvme::Status::Success &&
      cid < std::uint64_t{ext.bitmap_words} * nvme::kBatchBitmapWordBits) {
    p.kind = CompletionPlace::Bitmap;
    p.word = nvme::batch_bitmap_word(cid);
    p.bit = nvme::batch_bitmap_bit(cid);
    return p;
  }
  p.kind = CompletionPlace::Ring;
  return p;
}

// A completion entry as the target posts it: SQ head, SQ id, the CID (all
// 32 bits echoed in DW1 on a wide-CID SQ), status and phase tag.
GPUNVME_HD constexpr nvme::CompletionEntry make_completion(const QueueExtensions& ext,
                                                           std::uint32_t cid, std::uint16_t sqhd,
                                                           std::uint16_t sqid, nvme::Status status,
                                                           bool phase) {
  nvme::CompletionEntry c{};
  c.sqhd = sqhd;
  c.sqid = sqid;
  if (ext.wide_cids) {
    nvme::set_wide_cid(c, cid);
  } else {
    c.cid = static_cast<std::uint16_t>(cid);
  }
  c.set_status(status, phase);
  return c;
}

// Whether an SQ's CQ has room for `count` more commands: an indexed CQ
// always has (a command's slot is free again once its submitter has read
// its entry, before it gives the SQ slot back); a batch-notified one needs
// room only for failures, and an ordinary one for every command, so both
// are bounded by the ring's free entries (one always stays empty).
GPUNVME_HD constexpr std::uint32_t completion_room(const QueueExtensions& ext,
                                                   std::uint32_t cq_tail, std::uint32_t cq_head,
                                                   std::uint32_t entries) {
  if (ext.indexed) return entries - 1;
  return entries - 1 - (cq_tail + entries - cq_head) % entries;
}

}  // namespace gpunvme::hw
