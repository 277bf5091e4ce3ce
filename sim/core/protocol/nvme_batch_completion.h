// Batch completion notification: a bitmap of completed CIDs plus the failed
// ones, a proposed NVMe extension for GPU hosts (seed 003, enhancement 5:
// "struct batch_completion { uint64_t bitmap[16]; uint32_t error_cids[8]; }").
// Nothing here is in NVMe 1.4.
//
// Creation. An I/O CQ created with Create I/O CQ CDW11 bit 3 (BCN, reserved
// in 1.4; with_batch_completion() sets it) is a batch-notified CQ:
//   PRP1        its ring (QSIZE entries of 16 B, as any CQ): it receives the
//               full entries of failed commands only (status other than
//               Successful Completion), at the tail with the phase tag, and
//               is freed through the CQ head doorbell as any CQ. Errors keep
//               their status, DW0 and DNR.
//   PRP2        the base of the completion bitmap (64 B aligned; reserved in
//               Create I/O CQ in 1.4)
//   CDW12 15:0  bitmap words - 1: the bitmap covers (value + 1) x 32 CIDs,
//               32 to 65,536 (CDW12 is reserved in Create I/O CQ in 1.4)
//
// Bitmap. Little-endian 32-bit words; CID c is bit c % 32 of word c / 32
// (one word per warp of 32 consecutive CIDs, one load for all of them). A
// successful completion of CID c flips its bit; a command whose CID lies
// beyond the bitmap gets a full entry in the ring whatever its status.
//
// Flow control. The controller is the bitmap's only writer, so it always
// knows every word's value and writes whole words. The consumer keeps its
// own copy of the bits it has consumed (the "seen" bitmap, in its memory):
// CID c has an unconsumed completion while bitmap bit c differs from seen
// bit c, and consuming it flips seen bit c, which clears that difference.
// A CID is not resubmitted until its completion is consumed, so the
// controller never flips a bit whose previous flip is still unconsumed. (A
// consumer that cleared the controller's bits itself would race the
// controller's whole-word writes: a PCIe memory write has byte, not bit,
// enables, so a word rewritten by the controller would bring a cleared bit
// back or lose a new one.)
//
// Coalescing. The controller flips bits in its own copy as commands
// complete and posts them as one batch after `batch_completion_max`
// completions or `batch_completion_window_ns` after the first of the batch,
// whichever comes first: one posted memory write of the words from the
// lowest to the highest word the batch changed (4 B each, the words between
// with their current values), after `batch_completion_ns` of firmware time.
// Batches of one CQ land in the order they were posted.
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// Create I/O CQ CDW11 bit 3: the CQ is batch-notified.
constexpr std::uint32_t kCreateCqBatchCompletionBit = 1u << 3;
constexpr std::uint32_t kBatchBitmapWordBytes = 4;
constexpr std::uint32_t kBatchBitmapWordBits = 32;
constexpr std::uint32_t kBatchBitmapMaxWords = 65536 / kBatchBitmapWordBits;
constexpr std::uint64_t kBatchBitmapAlignment = 64;

struct BatchCompletionFields {
  bool enabled;
  std::uint64_t bitmap;  // PRP2
  std::uint32_t words;   // 1..2048
};

GPUNVME_HD constexpr std::uint32_t batch_bitmap_words(std::uint32_t cids) {
  return (cids + kBatchBitmapWordBits - 1) / kBatchBitmapWordBits;
}
GPUNVME_HD constexpr std::uint32_t batch_bitmap_word(std::uint32_t cid) {
  return cid / kBatchBitmapWordBits;
}
GPUNVME_HD constexpr std::uint32_t batch_bitmap_bit(std::uint32_t cid) {
  return 1u << (cid % kBatchBitmapWordBits);
}
// Bytes of the write that posts words `low`..`high` (inclusive).
GPUNVME_HD constexpr std::uint32_t batch_write_bytes(std::uint32_t low, std::uint32_t high) {
  return (high - low + 1) * kBatchBitmapWordBytes;
}

// Turns a Create I/O CQ `create` into one of a batch-notified CQ whose
// bitmap at `bitmap` covers `cids` CIDs (rounded up to whole words).
GPUNVME_HD constexpr SubmissionEntry with_batch_completion(SubmissionEntry create,
                                                           std::uint64_t bitmap,
                                                           std::uint32_t cids) {
  create.cdw11 |= kCreateCqBatchCompletionBit;
  create.prp2 = bitmap;
  create.cdw12 = (create.cdw12 & ~0xFFFFu) | ((batch_bitmap_words(cids) - 1u) & 0xFFFFu);
  return create;
}

GPUNVME_HD constexpr BatchCompletionFields decode_batch_completion(const SubmissionEntry& create) {
  return BatchCompletionFields{(create.cdw11 & kCreateCqBatchCompletionBit) != 0, create.prp2,
                               (create.cdw12 & 0xFFFFu) + 1u};
}

static_assert(batch_bitmap_words(1) == 1 && batch_bitmap_words(32) == 1 &&
                  batch_bitmap_words(33) == 2 && batch_bitmap_words(65536) == 2048,
              "one 32-bit word per 32 CIDs");
static_assert(batch_bitmap_word(31) == 0 && batch_bitmap_word(32) == 1 &&
                  batch_bitmap_word(65535) == 2047,
              "CID c lives in word c / 32");
static_assert(batch_bitmap_bit(0) == 0x1u && batch_bitmap_bit(37) == 0x20u &&
                  batch_bitmap_bit(63) == 0x80000000u,
              "CID c is bit c % 32 of its word");
static_assert(batch_write_bytes(3, 3) == 4 && batch_write_bytes(0, 15) == 64,
              "a batch writes its changed span of whole words");
static_assert(
    decode_batch_completion(with_batch_completion(SubmissionEntry{}, 0x1000, 1024)).words == 32,
    "CDW12 15:0 holds words - 1");
static_assert(with_batch_completion(SubmissionEntry{}, 0x1000, 65536).cdw12 == 0x7FFu,
              "65,536 CIDs: 2,048 words");
static_assert(with_batch_completion(SubmissionEntry{}, 0x1000, 32).cdw11 == 0x8u,
              "BCN is CDW11 bit 3");
static_assert(
    decode_batch_completion(with_batch_completion(SubmissionEntry{}, 0xABC0, 64)).bitmap == 0xABC0,
    "PRP2 holds the bitmap's base");

}  // namespace gpunvme::nvme
