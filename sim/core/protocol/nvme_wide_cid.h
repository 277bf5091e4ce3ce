// Wide command identifiers: thread-local CIDs wider than 16 bits, a proposed
// NVMe extension for GPU hosts (seed 003, enhancement 1: "cid = (thread_id
// << 16) | local_sequence" in place of "cid = atomic_inc(&queue->cid_counter)").
// Nothing here is in NVMe 1.4.
//
// An I/O SQ created with Create I/O SQ CDW11 bit 4 (WCID, reserved in 1.4;
// make_create_io_sq's `wide_cids`) identifies its commands by 32-bit CIDs:
//
//   SQE bytes 11:8  (CDW2)          the command's 32-bit CID (CDW2 is reserved
//                                   for Read, Write, Flush and Dataset
//                                   Management in NVMe 1.4)
//   SQE bytes  3:2  (CDW0 31:16)    its low 16 bits, as a 16-bit CID
//   CQE bytes  7:4  (DW1)           the 32-bit CID echoed (DW1 is reserved
//                                   for these commands in NVMe 1.4)
//   CQE bytes 13:12 (CID)           its low 16 bits
//
// The controller tells commands of such an SQ apart by the 32-bit CID: two
// outstanding commands may share the low 16 bits, never all 32 (a repeated
// 32-bit CID completes with Command ID Conflict, as a repeated 16-bit CID
// does). A host can so give each thread a CID range of its own (thread id <<
// k | its own I/O's index): no CID allocation, no shared counter or bitmap,
// and no 65,536-CID space per queue to share among its threads.
//
// Admin commands and SQs created without WCID keep 16-bit CIDs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// Create I/O SQ CDW11 bit 4: the queue's commands carry 32-bit CIDs.
constexpr std::uint32_t kCreateSqWideCidBit = 1u << 4;

// Sets the 32-bit CID of an entry bound for a WCID queue: CDW2 and, as a
// 16-bit CID, its low half.
GPUNVME_HD constexpr void set_wide_cid(SubmissionEntry& e, std::uint32_t cid) {
  e.cdw2 = cid;
  e.set_cid(static_cast<std::uint16_t>(cid & 0xFFFFu));
}

GPUNVME_HD constexpr std::uint32_t wide_cid(const SubmissionEntry& e) { return e.cdw2; }

// The completion entry of a WCID queue's command echoes its 32-bit CID.
GPUNVME_HD constexpr void set_wide_cid(CompletionEntry& e, std::uint32_t cid) {
  e.dw1 = cid;
  e.cid = static_cast<std::uint16_t>(cid & 0xFFFFu);
}

GPUNVME_HD constexpr std::uint32_t wide_cid(const CompletionEntry& e) { return e.dw1; }

// The CID a host matches a completion by: the echoed 32-bit CID on a WCID
// queue, otherwise the 16-bit field.
GPUNVME_HD constexpr std::uint32_t completion_cid(const CompletionEntry& e, bool wide) {
  return wide ? e.dw1 : std::uint32_t{e.cid};
}

namespace wide_cid_layout {
constexpr SubmissionEntry sample_sqe() {
  SubmissionEntry e{};
  set_wide_cid(e, 0x0012ABCDu);
  return e;
}
constexpr CompletionEntry sample_cqe() {
  CompletionEntry e{};
  set_wide_cid(e, 0x0012ABCDu);
  return e;
}
}  // namespace wide_cid_layout

static_assert(offsetof(SubmissionEntry, cdw2) == 8, "wide CID: SQE bytes 11:8 (CDW2)");
static_assert(offsetof(CompletionEntry, dw1) == 4, "wide CID echo: CQE bytes 7:4 (DW1)");
static_assert(wide_cid_layout::sample_sqe().cdw2 == 0x0012ABCDu, "CDW2 holds all 32 bits");
static_assert(wide_cid_layout::sample_sqe().cdw0 == 0xABCD0000u, "CDW0 31:16: the low half");
static_assert(wide_cid(wide_cid_layout::sample_sqe()) == 0x0012ABCDu, "read back from CDW2");
static_assert(wide_cid_layout::sample_cqe().dw1 == 0x0012ABCDu, "DW1 echoes all 32 bits");
static_assert(wide_cid_layout::sample_cqe().cid == 0xABCDu, "CQE CID: the low half");
static_assert(completion_cid(wide_cid_layout::sample_cqe(), true) == 0x0012ABCDu,
              "a WCID queue matches by DW1");
static_assert(completion_cid(wide_cid_layout::sample_cqe(), false) == 0xABCDu,
              "a 16-bit queue matches by the CID field");

}  // namespace gpunvme::nvme
