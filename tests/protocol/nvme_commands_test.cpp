// Command builders checked against the dword layouts of the NVMe Base
// Specification 1.4 (sections 5 and 6), with expected values written out as
// literals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

std::uint64_t le_at(const SubmissionEntry& e, int offset, int width) {
  std::uint8_t b[64];
  std::memcpy(b, &e, sizeof(b));
  std::uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | b[offset + i];
  return v;
}

// Every byte not named by a command must stay zero (reserved).
void expect_zero_except(const SubmissionEntry& e, std::uint64_t used_mask) {
  std::uint8_t b[64];
  std::memcpy(b, &e, sizeof(b));
  for (int i = 0; i < 64; ++i) {
    if (!((used_mask >> i) & 1ull)) {
      EXPECT_EQ(b[i], 0) << "reserved byte " << i;
    }
  }
}

constexpr std::uint64_t bytes_mask(int first, int count) {
  return ((count == 64 ? ~0ull : ((1ull << count) - 1ull))) << first;
}

TEST(NvmeCommands, Read) {
  const SubmissionEntry e =
      make_read(0x1234, 1, 0x0000000A12345678ull, 7, 0x200000ull, 0x201000ull);
  EXPECT_EQ(le_at(e, 0, 1), 0x02u);            // opcode
  EXPECT_EQ(le_at(e, 2, 2), 0x1234u);          // CID
  EXPECT_EQ(le_at(e, 4, 4), 1u);               // NSID
  EXPECT_EQ(le_at(e, 24, 8), 0x200000u);       // PRP1
  EXPECT_EQ(le_at(e, 32, 8), 0x201000u);       // PRP2
  EXPECT_EQ(le_at(e, 40, 4), 0x12345678u);     // CDW10: SLBA 31:0
  EXPECT_EQ(le_at(e, 44, 4), 0x0000000Au);     // CDW11: SLBA 63:32
  EXPECT_EQ(le_at(e, 48, 2), 7u);              // CDW12: NLB, zero-based (8 blocks)
  EXPECT_EQ((le_at(e, 1, 1) >> 6) & 0x3, 0u);  // PSDT: PRP
  expect_zero_except(e, bytes_mask(0, 8) | bytes_mask(24, 26));
  const ReadWriteFields f = decode_read_write(e);
  EXPECT_EQ(f.slba, 0x0000000A12345678ull);
  EXPECT_EQ(f.block_count, 8u);
  EXPECT_FALSE(f.fua);
}

TEST(NvmeCommands, WriteAndFlush) {
  SubmissionEntry w = make_write(9, 2, 0xFFFFFFFFFFFFull, 0xFFFF, 0x3000, 0);
  EXPECT_EQ(le_at(w, 0, 1), 0x01u);
  EXPECT_EQ(le_at(w, 40, 8), 0xFFFFFFFFFFFFull);
  EXPECT_EQ(decode_read_write(w).block_count, 65536u);
  w.cdw12 |= kRwForceUnitAccess;
  EXPECT_EQ(le_at(w, 48, 4), 0x4000FFFFu);  // FUA is CDW12 bit 30
  EXPECT_TRUE(decode_read_write(w).fua);

  const SubmissionEntry f = make_flush(3, 0xFFFFFFFFu);
  EXPECT_EQ(le_at(f, 0, 1), 0x00u);
  EXPECT_EQ(le_at(f, 2, 2), 3u);
  EXPECT_EQ(le_at(f, 4, 4), 0xFFFFFFFFu);
  expect_zero_except(f, bytes_mask(0, 8));
}

TEST(NvmeCommands, CreateIoCompletionQueue) {
  const SubmissionEntry e = make_create_io_cq(7, 3, 1024, 0xABC000ull, true, true, 5);
  EXPECT_EQ(le_at(e, 0, 1), 0x05u);
  EXPECT_EQ(le_at(e, 2, 2), 7u);
  EXPECT_EQ(le_at(e, 24, 8), 0xABC000u);
  // CDW10: QSIZE 31:16 = 1023 (zero-based), QID 15:0 = 3.
  EXPECT_EQ(le_at(e, 40, 4), 0x03FF0003u);
  // CDW11: IV 31:16 = 5, IEN bit 1, PC bit 0.
  EXPECT_EQ(le_at(e, 44, 4), 0x00050003u);
  expect_zero_except(e, bytes_mask(0, 4) | bytes_mask(24, 8) | bytes_mask(40, 8));
  const CreateIoCqFields f = decode_create_io_cq(e);
  EXPECT_EQ(f.qid, 3);
  EXPECT_EQ(f.queue_entries, 1024u);
  EXPECT_EQ(f.base, 0xABC000u);
  EXPECT_TRUE(f.physically_contiguous);
  EXPECT_TRUE(f.irq_enabled);
  EXPECT_EQ(f.vector, 5);

  const SubmissionEntry polled = make_create_io_cq(8, 65535, 65536, 0x1000, false, false, 0);
  EXPECT_EQ(le_at(polled, 40, 4), 0xFFFFFFFFu);
  EXPECT_EQ(le_at(polled, 44, 4), 0u);
  EXPECT_EQ(decode_create_io_cq(polled).queue_entries, 65536u);
}

TEST(NvmeCommands, CreateIoSubmissionQueue) {
  const SubmissionEntry e = make_create_io_sq(11, 3, 64, 0x7000ull, 3, QueuePriority::Medium);
  EXPECT_EQ(le_at(e, 0, 1), 0x01u);
  EXPECT_EQ(le_at(e, 24, 8), 0x7000u);
  EXPECT_EQ(le_at(e, 40, 4), 0x003F0003u);  // QSIZE 63, QID 3
  // CDW11: CQID 31:16 = 3, QPRIO 2:1 = 10b (medium), PC bit 0.
  EXPECT_EQ(le_at(e, 44, 4), 0x00030005u);
  const CreateIoSqFields f = decode_create_io_sq(e);
  EXPECT_EQ(f.qid, 3);
  EXPECT_EQ(f.queue_entries, 64u);
  EXPECT_EQ(f.cqid, 3);
  EXPECT_EQ(f.priority, QueuePriority::Medium);
  EXPECT_TRUE(f.physically_contiguous);
  EXPECT_EQ(le_at(make_create_io_sq(1, 2, 2, 0, 9, QueuePriority::Low, false), 44, 4), 0x00090006u);
}

TEST(NvmeCommands, DeleteQueues) {
  const SubmissionEntry sq = make_delete_io_sq(4, 17);
  EXPECT_EQ(le_at(sq, 0, 1), 0x00u);
  EXPECT_EQ(le_at(sq, 40, 4), 17u);
  EXPECT_EQ(decode_delete_queue_qid(sq), 17);
  const SubmissionEntry cq = make_delete_io_cq(5, 17);
  EXPECT_EQ(le_at(cq, 0, 1), 0x04u);
  EXPECT_EQ(le_at(cq, 2, 2), 5u);
  EXPECT_EQ(le_at(cq, 40, 4), 17u);
  expect_zero_except(cq, bytes_mask(0, 4) | bytes_mask(40, 4));
}

TEST(NvmeCommands, SetFeaturesNumberOfQueues) {
  const SubmissionEntry e = make_set_features_num_queues(2, 15, 7);
  EXPECT_EQ(le_at(e, 0, 1), 0x09u);
  EXPECT_EQ(le_at(e, 40, 4), 0x07u);        // FID 07h, SV clear
  EXPECT_EQ(le_at(e, 44, 4), 0x0007000Fu);  // NCQR 31:16, NSQR 15:0
  EXPECT_EQ(decode_feature_id(e), FeatureId::NumberOfQueues);
  // Completion DW0: NCQA 31:16, NSQA 15:0, both zero-based.
  const NumQueues granted = decode_num_queues(0x0003001Fu);
  EXPECT_EQ(granted.nsq_zero_based, 0x1F);
  EXPECT_EQ(granted.ncq_zero_based, 0x03);
  EXPECT_EQ(granted.sq_count(), 32u);
  EXPECT_EQ(granted.cq_count(), 4u);
  EXPECT_EQ(granted.encode(), 0x0003001Fu);
}

TEST(NvmeCommands, SetFeaturesArbitration) {
  const SubmissionEntry e = make_set_features_arbitration(3, 3, 1, 2, 4);
  EXPECT_EQ(le_at(e, 0, 1), 0x09u);
  EXPECT_EQ(le_at(e, 40, 4), 0x01u);
  // HPW 31:24, MPW 23:16, LPW 15:8, AB 2:0.
  EXPECT_EQ(le_at(e, 44, 4), 0x04020103u);
  const Arbitration a = decode_arbitration(0x04020107u);
  EXPECT_EQ(a.burst_log2, 7);
  EXPECT_TRUE(a.burst_unlimited());
  EXPECT_EQ(a.low_weight_zero_based, 1);
  EXPECT_EQ(a.medium_weight_zero_based, 2);
  EXPECT_EQ(a.high_weight_zero_based, 4);
  EXPECT_EQ(le_at(make_set_features(1, FeatureId::Arbitration, 0, true), 40, 4), 0x80000001u);
  EXPECT_EQ(le_at(make_get_features(1, FeatureId::NumberOfQueues), 0, 1), 0x0Au);
}

TEST(NvmeCommands, DoorbellBufferConfigAbortIdentify) {
  const SubmissionEntry d = make_doorbell_buffer_config(6, 0x100000ull, 0x101000ull);
  EXPECT_EQ(le_at(d, 0, 1), 0x7Cu);
  EXPECT_EQ(le_at(d, 24, 8), 0x100000u);  // PRP1: shadow doorbells
  EXPECT_EQ(le_at(d, 32, 8), 0x101000u);  // PRP2: EventIdx
  expect_zero_except(d, bytes_mask(0, 4) | bytes_mask(24, 16));

  const SubmissionEntry a = make_abort(1, 4, 0x0042);
  EXPECT_EQ(le_at(a, 0, 1), 0x08u);
  EXPECT_EQ(le_at(a, 40, 4), 0x00420004u);  // CID 31:16, SQID 15:0

  const SubmissionEntry i = make_identify(2, IdentifyCns::Controller, 0, 0x5000);
  EXPECT_EQ(le_at(i, 0, 1), 0x06u);
  EXPECT_EQ(le_at(i, 40, 4), 0x01u);
  EXPECT_EQ(le_at(i, 24, 8), 0x5000u);
}

}  // namespace
}  // namespace gpunvme::nvme
