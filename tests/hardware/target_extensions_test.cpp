// The proposed NVMe extensions as the hardware backend's software targets
// implement them (sim/frontend/hardware/target_extensions.h, which the
// GPU-resident target's serving kernel calls): queue creation from the Create
// I/O CQ / SQ bits, the refusals, and where each completion goes, checked
// against cases worked by hand from the layouts in sim/core/protocol.
#include "sim/frontend/hardware/target_extensions.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace gpunvme::hw {
namespace {

// What the GPU-resident target offers (gpu_target.cu, GpuTarget::extensions).
ExtensionSupport gpu_target_offer() {
  ExtensionSupport offered;
  offered.indexed_completion = true;
  offered.batch_completion = true;
  offered.wide_cids = true;
  offered.shadow_doorbell_polling = true;
  return offered;
}

nvme::SubmissionEntry create_cq(std::uint16_t qid, std::uint32_t entries, bool indexed = false) {
  return nvme::make_create_io_cq(0, qid, entries, 0, true, false, 0, indexed);
}

nvme::SubmissionEntry create_sq(std::uint16_t qid, std::uint32_t entries, std::uint16_t cqid,
                                bool warp_doorbells = false, bool wide_cids = false) {
  return nvme::make_create_io_sq(0, qid, entries, 0, cqid, nvme::QueuePriority::Medium, true,
                                 warp_doorbells, wide_cids);
}

TEST(TargetExtensions, PlainQueuePairNeedsNoExtension) {
  const QueuePairCreation c = check_queue_pair(create_cq(3, 256), create_sq(3, 256, 3), {});
  EXPECT_EQ(c.status, nvme::Status::Success);
  EXPECT_EQ(c.qid, 3);
  EXPECT_EQ(c.entries, 256u);
  EXPECT_FALSE(c.ext.indexed || c.ext.batch || c.ext.wide_cids || c.ext.warp_doorbells);
}

TEST(TargetExtensions, QueuePairsOnly) {
  EXPECT_EQ(check_queue_pair(create_cq(3, 256), create_sq(3, 256, 4), {}).status,
            nvme::Status::CompletionQueueInvalid);
  EXPECT_EQ(check_queue_pair(create_cq(3, 128), create_sq(3, 256, 3), {}).status,
            nvme::Status::InvalidQueueSize);
}

// Each extension bit is refused by a target that does not offer it, with
// Invalid Field in Command, and taken by one that does.
TEST(TargetExtensions, EachBitNeedsTheOffer) {
  const ExtensionSupport none{};
  const ExtensionSupport gpu = gpu_target_offer();
  // ICQ: Create I/O CQ CDW11 bit 2.
  const nvme::SubmissionEntry indexed = create_cq(1, 64, true);
  EXPECT_EQ(indexed.cdw11 & 0x4u, 0x4u);
  EXPECT_EQ(check_queue_pair(indexed, create_sq(1, 64, 1), none).status,
            nvme::Status::InvalidFieldInCommand);
  const QueuePairCreation i = check_queue_pair(indexed, create_sq(1, 64, 1), gpu);
  EXPECT_EQ(i.status, nvme::Status::Success);
  EXPECT_TRUE(i.ext.indexed);
  // WCID: Create I/O SQ CDW11 bit 4.
  const nvme::SubmissionEntry wide = create_sq(1, 64, 1, false, true);
  EXPECT_EQ(wide.cdw11 & 0x10u, 0x10u);
  EXPECT_EQ(check_queue_pair(create_cq(1, 64), wide, none).status,
            nvme::Status::InvalidFieldInCommand);
  EXPECT_TRUE(check_queue_pair(create_cq(1, 64), wide, gpu).ext.wide_cids);
  // BCN: Create I/O CQ CDW11 bit 3, PRP2 the bitmap, CDW12 15:0 its words - 1.
  // 544 CIDs (17 warps of 32 lanes on one queue): 17 words.
  const nvme::SubmissionEntry batch = nvme::with_batch_completion(create_cq(1, 64), 0x10040, 544);
  EXPECT_EQ(batch.cdw11 & 0x8u, 0x8u);
  EXPECT_EQ(batch.cdw12, 16u);
  EXPECT_EQ(check_queue_pair(batch, create_sq(1, 64, 1), none).status,
            nvme::Status::InvalidFieldInCommand);
  const QueuePairCreation b = check_queue_pair(batch, create_sq(1, 64, 1), gpu);
  EXPECT_EQ(b.status, nvme::Status::Success);
  EXPECT_TRUE(b.ext.batch);
  EXPECT_EQ(b.ext.bitmap, 0x10040u);
  EXPECT_EQ(b.ext.bitmap_words, 17u);
}

// A target that samples doorbell words cannot serve warp doorbells: the
// GPU-resident one refuses them, saying why.
TEST(TargetExtensions, WarpDoorbellsRefusedBySamplingTarget) {
  const nvme::SubmissionEntry wdb = create_sq(2, 64, 2, true);
  EXPECT_EQ(wdb.cdw11 & 0x8u, 0x8u);
  const QueuePairCreation c = check_queue_pair(create_cq(2, 64), wdb, gpu_target_offer());
  EXPECT_EQ(c.status, nvme::Status::InvalidFieldInCommand);
  EXPECT_NE(std::string(c.reason).find("values, not writes"), std::string::npos);
  ExtensionSupport every = gpu_target_offer();
  every.warp_doorbells = true;
  EXPECT_TRUE(check_queue_pair(create_cq(2, 64), wdb, every).ext.warp_doorbells);
}

TEST(TargetExtensions, CombinationsTheSimulatorRefusesToo) {
  const ExtensionSupport gpu = gpu_target_offer();
  // Indexed and batch-notified at once.
  const nvme::SubmissionEntry both =
      nvme::with_batch_completion(create_cq(1, 64, true), 0x10040, 64);
  EXPECT_EQ(check_queue_pair(both, create_sq(1, 64, 1), gpu).status,
            nvme::Status::InvalidFieldInCommand);
  // A bitmap off its 64 B alignment, or none.
  EXPECT_EQ(check_queue_pair(nvme::with_batch_completion(create_cq(1, 64), 0x10020, 64),
                             create_sq(1, 64, 1), gpu)
                .status,
            nvme::Status::InvalidFieldInCommand);
  EXPECT_EQ(check_queue_pair(nvme::with_batch_completion(create_cq(1, 64), 0, 64),
                             create_sq(1, 64, 1), gpu)
                .status,
            nvme::Status::InvalidFieldInCommand);
  // The bitmap numbers 16-bit CIDs: not with a wide-CID SQ.
  EXPECT_EQ(check_queue_pair(nvme::with_batch_completion(create_cq(1, 64), 0x10040, 64),
                             create_sq(1, 64, 1, false, true), gpu)
                .status,
            nvme::Status::InvalidFieldInCommand);
}

// Doorbell Buffer Config: page-aligned buffers laid out like the doorbell
// registers from 1000h: SQ y tail at (2y) x (4 << DSTRD), CQ y head at
// (2y + 1) x (4 << DSTRD).
TEST(TargetExtensions, ShadowDoorbellBuffers) {
  EXPECT_EQ(check_doorbell_buffer_config(nvme::make_doorbell_buffer_config(0, 0x20000, 0x21000), {})
                .status,
            nvme::Status::InvalidCommandOpcode);
  EXPECT_EQ(check_doorbell_buffer_config(nvme::make_doorbell_buffer_config(0, 0x20010, 0x21000),
                                         gpu_target_offer())
                .status,
            nvme::Status::InvalidFieldInCommand);
  const ShadowBuffers b = check_doorbell_buffer_config(
      nvme::make_doorbell_buffer_config(0, 0x20000, 0x21000), gpu_target_offer());
  ASSERT_EQ(b.status, nvme::Status::Success);
  EXPECT_EQ(b.shadow, 0x20000u);
  EXPECT_EQ(b.event_idx, 0x21000u);
  EXPECT_EQ(shadow_word(b.shadow, nvme::DoorbellKind::SqTail, 3, 0), 0x20018u);
  EXPECT_EQ(shadow_word(b.shadow, nvme::DoorbellKind::CqHead, 3, 0), 0x2001Cu);
  EXPECT_EQ(shadow_word(b.event_idx, nvme::DoorbellKind::SqTail, 3, 2), 0x21060u);
}

TEST(TargetExtensions, CommandCidIsAllOfCdw2OnAWideSq) {
  nvme::SubmissionEntry e{};
  nvme::set_wide_cid(e, 0x00030007u);
  QueueExtensions wide;
  wide.wide_cids = true;
  EXPECT_EQ(command_cid(e, wide), 0x00030007u);
  EXPECT_EQ(command_cid(e, QueueExtensions{}), 7u);
}

TEST(TargetExtensions, LapPhase) {
  EXPECT_TRUE(lap_phase(0, 16));
  EXPECT_TRUE(lap_phase(15, 16));
  EXPECT_FALSE(lap_phase(16, 16));
  EXPECT_TRUE(lap_phase(33, 16));
}

// Indexed: the CQ slot of the SQ slot, with the SQ lap's phase, whatever the
// status. Batch-notified: a success whose CID the bitmap covers flips bit
// cid % 32 of word cid / 32 (CID 37: word 1, bit 5 = 0x20); CID 64 lies
// beyond a 2-word bitmap and a failure is never a bit: both go to the ring.
TEST(TargetExtensions, WhereACompletionGoes) {
  QueueExtensions indexed;
  indexed.indexed = true;
  const CompletionPlace s = place_completion(indexed, 9, 5, false, nvme::Status::LbaOutOfRange);
  EXPECT_EQ(s.kind, CompletionPlace::Slot);
  EXPECT_EQ(s.slot, 5u);
  EXPECT_FALSE(s.phase);

  QueueExtensions batch;
  batch.batch = true;
  batch.bitmap = 0x10040;
  batch.bitmap_words = 2;
  const CompletionPlace b = place_completion(batch, 37, 5, true, nvme::Status::Success);
  EXPECT_EQ(b.kind, CompletionPlace::Bitmap);
  EXPECT_EQ(b.word, 1u);
  EXPECT_EQ(b.bit, 0x20u);
  EXPECT_EQ(place_completion(batch, 64, 5, true, nvme::Status::Success).kind,
            CompletionPlace::Ring);
  EXPECT_EQ(place_completion(batch, 3, 5, true, nvme::Status::LbaOutOfRange).kind,
            CompletionPlace::Ring);
  EXPECT_EQ(place_completion(QueueExtensions{}, 3, 5, true, nvme::Status::Success).kind,
            CompletionPlace::Ring);
}

// A wide CID's entry: all 32 bits in DW1 (bytes 7:4), the low half in the CID
// field (bytes 13:12); the phase tag in bit 0 of bytes 15:14.
TEST(TargetExtensions, CompletionEntryBytes) {
  QueueExtensions wide;
  wide.wide_cids = true;
  const nvme::CompletionEntry c =
      make_completion(wide, 0x0012ABCDu, 17, 3, nvme::Status::Success, true);
  unsigned char bytes[16];
  std::memcpy(bytes, &c, sizeof bytes);
  EXPECT_EQ(bytes[4], 0xCD);
  EXPECT_EQ(bytes[5], 0xAB);
  EXPECT_EQ(bytes[6], 0x12);
  EXPECT_EQ(bytes[7], 0x00);
  EXPECT_EQ(bytes[8], 17);  // SQHD
  EXPECT_EQ(bytes[10], 3);  // SQID
  EXPECT_EQ(bytes[12], 0xCD);
  EXPECT_EQ(bytes[13], 0xAB);
  EXPECT_EQ(bytes[14], 0x01);  // phase 1, status 0
  const nvme::CompletionEntry plain =
      make_completion(QueueExtensions{}, 7, 0, 1, nvme::Status::LbaOutOfRange, false);
  EXPECT_EQ(plain.dw1, 0u);
  EXPECT_EQ(plain.cid, 7);
  EXPECT_EQ(plain.phase(), 0);
  EXPECT_EQ(plain.status(), nvme::Status::LbaOutOfRange);
}

// Room in the CQ: an indexed CQ always has it; otherwise the ring's free
// entries (16 entries, tail 10, head 3: 7 in use, one kept empty, 8 free).
TEST(TargetExtensions, CompletionRoom) {
  QueueExtensions indexed;
  indexed.indexed = true;
  EXPECT_EQ(completion_room(indexed, 10, 3, 16), 15u);
  EXPECT_EQ(completion_room(QueueExtensions{}, 10, 3, 16), 8u);
  QueueExtensions batch;
  batch.batch = true;
  EXPECT_EQ(completion_room(batch, 10, 3, 16), 8u);
}

}  // namespace
}  // namespace gpunvme::hw
