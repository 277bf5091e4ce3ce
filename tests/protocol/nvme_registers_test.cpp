// Controller registers and doorbell addressing, checked against the register
// map and bit positions of the NVMe Base Specification 1.4, section 3.1.
#include <gtest/gtest.h>

#include <cstdint>

#include "sim/core/protocol/nvme.h"

namespace gpunvme::nvme {
namespace {

TEST(NvmeRegisters, Offsets) {
  EXPECT_EQ(reg::kCap, 0x00u);
  EXPECT_EQ(reg::kVs, 0x08u);
  EXPECT_EQ(reg::kIntms, 0x0Cu);
  EXPECT_EQ(reg::kIntmc, 0x10u);
  EXPECT_EQ(reg::kCc, 0x14u);
  EXPECT_EQ(reg::kCsts, 0x1Cu);
  EXPECT_EQ(reg::kNssr, 0x20u);
  EXPECT_EQ(reg::kAqa, 0x24u);
  EXPECT_EQ(reg::kAsq, 0x28u);
  EXPECT_EQ(reg::kAcq, 0x30u);
  EXPECT_EQ(reg::kCmbloc, 0x38u);
  EXPECT_EQ(reg::kCmbsz, 0x3Cu);
  EXPECT_EQ(reg::kDoorbellBase, 0x1000u);
}

TEST(NvmeRegisters, CapDecodeOfHandBuiltValue) {
  // MQES 3FFh (1024 entries), CQR, AMS 01b (WRR with urgent), TO 14h (10 s),
  // DSTRD 2, NSSRS, CSS 01h (NVM), MPSMIN 0 (4 KiB), MPSMAX 4 (64 KiB), CMBS:
  //   0x3FF | 1<<16 | 1<<17 | 0x14<<24 | 2<<32 | 1<<36 | 1<<37 | 4<<52 | 1<<57
  const std::uint64_t raw = 0x02400032140303FFull;
  const Cap c = Cap::decode(raw);
  EXPECT_EQ(c.mqes, 0x3FF);
  EXPECT_TRUE(c.cqr);
  EXPECT_EQ(c.ams, 0x1);
  EXPECT_EQ(c.to, 0x14);
  EXPECT_EQ(c.dstrd, 2);
  EXPECT_TRUE(c.nssrs);
  EXPECT_EQ(c.css, 0x01);
  EXPECT_FALSE(c.bps);
  EXPECT_EQ(c.mpsmin, 0);
  EXPECT_EQ(c.mpsmax, 4);
  EXPECT_FALSE(c.pmrs);
  EXPECT_TRUE(c.cmbs);
  EXPECT_EQ(c.max_queue_entries(), 1024u);
  EXPECT_EQ(c.doorbell_stride_bytes(), 16u);
  EXPECT_EQ(c.min_page_size(), 4096u);
  EXPECT_EQ(c.max_page_size(), 65536u);
  EXPECT_EQ(c.timeout_ms(), 10000u);
  EXPECT_EQ(c.encode(), raw);
}

TEST(NvmeRegisters, CapFieldsLandInTheirBits) {
  struct Row {
    Cap cap;
    std::uint64_t mask;
  };
  const Row rows[] = {
      {Cap{0xFFFF, false, 0, 0, 0, false, 0, false, 0, 0, false, false}, 0xFFFFull},
      {Cap{0, true, 0, 0, 0, false, 0, false, 0, 0, false, false}, 1ull << 16},
      {Cap{0, false, 3, 0, 0, false, 0, false, 0, 0, false, false}, 3ull << 17},
      {Cap{0, false, 0, 0xFF, 0, false, 0, false, 0, 0, false, false}, 0xFFull << 24},
      {Cap{0, false, 0, 0, 0xF, false, 0, false, 0, 0, false, false}, 0xFull << 32},
      {Cap{0, false, 0, 0, 0, true, 0, false, 0, 0, false, false}, 1ull << 36},
      {Cap{0, false, 0, 0, 0, false, 0xFF, false, 0, 0, false, false}, 0xFFull << 37},
      {Cap{0, false, 0, 0, 0, false, 0, true, 0, 0, false, false}, 1ull << 45},
      {Cap{0, false, 0, 0, 0, false, 0, false, 0xF, 0, false, false}, 0xFull << 48},
      {Cap{0, false, 0, 0, 0, false, 0, false, 0, 0xF, false, false}, 0xFull << 52},
      {Cap{0, false, 0, 0, 0, false, 0, false, 0, 0, true, false}, 1ull << 56},
      {Cap{0, false, 0, 0, 0, false, 0, false, 0, 0, false, true}, 1ull << 57},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(r.cap.encode(), r.mask);
    EXPECT_EQ(Cap::decode(r.mask).encode(), r.mask);
  }
  // Reserved bits (23:19, 47:46, 63:58) are dropped by decode.
  EXPECT_EQ(Cap::decode(0xFC00C00000F80000ull).encode(), 0u);
}

TEST(NvmeRegisters, ControllerConfiguration) {
  // EN, CSS NVM, MPS 0 (4 KiB), AMS 001b, IOSQES 6 (64 B), IOCQES 4 (16 B):
  //   1 | 1<<11 | 6<<16 | 4<<20
  const Cc cc{true, 0, 0, kCcAmsWeightedRoundRobinUrgent, kCcShnNone, 6, 4};
  EXPECT_EQ(cc.encode(), 0x00460801u);
  const Cc back = Cc::decode(0x00460801u);
  EXPECT_TRUE(back.en);
  EXPECT_EQ(back.ams, 1);
  EXPECT_EQ(back.iosqes, 6);
  EXPECT_EQ(back.iocqes, 4);
  EXPECT_EQ(back.page_size(), 4096u);
  // MPS 10:7, SHN 15:14, CSS 6:4.
  EXPECT_EQ((Cc{false, 0, 0xF, 0, 0, 0, 0}).encode(), 0xFu << 7);
  EXPECT_EQ((Cc{false, 0, 0, 0, kCcShnNormal, 0, 0}).encode(), 1u << 14);
  EXPECT_EQ((Cc{false, 0x7, 0, 0, 0, 0, 0}).encode(), 0x7u << 4);
  EXPECT_EQ(Cc::decode(2u << 7).page_size(), 16384u);
}

TEST(NvmeRegisters, ControllerStatus) {
  // RDY bit 0, CFS bit 1, SHST 3:2, NSSRO bit 4, PP bit 5.
  const Csts ready = Csts::decode(0x1);
  EXPECT_TRUE(ready.rdy);
  EXPECT_FALSE(ready.cfs);
  const Csts shut = Csts::decode(0x9);
  EXPECT_TRUE(shut.rdy);
  EXPECT_EQ(shut.shst, kCstsShstComplete);
  EXPECT_TRUE(Csts::decode(0x2).cfs);
  EXPECT_TRUE(Csts::decode(0x10).nssro);
  EXPECT_TRUE(Csts::decode(0x20).pp);
  EXPECT_EQ((Csts{true, true, kCstsShstOccurring, true, true}).encode(), 0x37u);
}

TEST(NvmeRegisters, AdminQueueAttributesVersionCmb) {
  EXPECT_EQ((Aqa{32, 32}).encode(), 0x001F001Fu);
  EXPECT_EQ((Aqa{4096, 2}).encode(), 0x00010FFFu);
  const Aqa a = Aqa::decode(0x00FF003Fu);
  EXPECT_EQ(a.sq_entries, 64u);
  EXPECT_EQ(a.cq_entries, 256u);
  EXPECT_EQ(make_version(1, 4), 0x00010400u);
  EXPECT_EQ(make_version(2, 0, 1), 0x00020001u);
  // CMBSZ: SZ 31:12 = 16, SZU 11:8 = 2 (1 MiB units), SQS bit 0 -> 16 MiB.
  const Cmbsz sz = Cmbsz::decode(0x00010201u);
  EXPECT_TRUE(sz.sqs);
  EXPECT_FALSE(sz.cqs);
  EXPECT_EQ(sz.szu, 2);
  EXPECT_EQ(sz.sz, 16u);
  EXPECT_EQ(sz.size_bytes(), 16ull << 20);
  EXPECT_EQ(sz.encode(), 0x00010201u);
  const Cmbloc loc = Cmbloc::decode(0x00003002u);
  EXPECT_EQ(loc.bir, 2);
  EXPECT_EQ(loc.ofst, 3u);
}

TEST(NvmeRegisters, DoorbellOffsetsStrideZero) {
  EXPECT_EQ(sq_tail_doorbell_offset(0, 0), 0x1000u);
  EXPECT_EQ(cq_head_doorbell_offset(0, 0), 0x1004u);
  EXPECT_EQ(sq_tail_doorbell_offset(1, 0), 0x1008u);
  EXPECT_EQ(cq_head_doorbell_offset(1, 0), 0x100Cu);
  EXPECT_EQ(sq_tail_doorbell_offset(5, 0), 0x1028u);
  EXPECT_EQ(cq_head_doorbell_offset(5, 0), 0x102Cu);
  EXPECT_EQ(sq_tail_doorbell_offset(65535, 0), 0x80FF8u);
  EXPECT_EQ(cq_head_doorbell_offset(65535, 0), 0x80FFCu);
}

TEST(NvmeRegisters, DoorbellOffsetsStrideTwo) {
  // DSTRD 2: 16-byte stride.
  EXPECT_EQ(sq_tail_doorbell_offset(0, 2), 0x1000u);
  EXPECT_EQ(cq_head_doorbell_offset(0, 2), 0x1010u);
  EXPECT_EQ(sq_tail_doorbell_offset(1, 2), 0x1020u);
  EXPECT_EQ(cq_head_doorbell_offset(1, 2), 0x1030u);
  EXPECT_EQ(sq_tail_doorbell_offset(5, 2), 0x10A0u);
  EXPECT_EQ(cq_head_doorbell_offset(5, 2), 0x10B0u);
  EXPECT_EQ(cq_head_doorbell_offset(65535, 2), 0x1000u + 131071u * 16u);
  // DSTRD 15 with the highest qid lies past 4 GiB.
  EXPECT_EQ(cq_head_doorbell_offset(65535, 15), 0x1000ull + 131071ull * 131072ull);
}

TEST(NvmeRegisters, DoorbellInverse) {
  for (std::uint8_t dstrd : {0, 2}) {
    const std::uint64_t stride = 4ull << dstrd;
    for (std::uint32_t q = 0; q <= 0xFFFF; ++q) {
      const std::uint64_t sq = 0x1000 + 2ull * q * stride;
      const std::uint64_t cq = 0x1000 + (2ull * q + 1) * stride;
      const DoorbellTarget ts = decode_doorbell_offset(sq, dstrd);
      ASSERT_TRUE(ts.valid);
      ASSERT_EQ(ts.kind, DoorbellKind::SqTail);
      ASSERT_EQ(ts.qid, q);
      const DoorbellTarget tc = decode_doorbell_offset(cq, dstrd);
      ASSERT_TRUE(tc.valid);
      ASSERT_EQ(tc.kind, DoorbellKind::CqHead);
      ASSERT_EQ(tc.qid, q);
      ASSERT_EQ(doorbell_offset(DoorbellKind::CqHead, static_cast<std::uint16_t>(q), dstrd), cq);
    }
  }
  EXPECT_FALSE(decode_doorbell_offset(0x0FFC, 0).valid);  // below the doorbells
  EXPECT_FALSE(decode_doorbell_offset(0x0, 0).valid);
  EXPECT_FALSE(decode_doorbell_offset(0x1002, 0).valid);  // inside a doorbell
  EXPECT_FALSE(decode_doorbell_offset(0x1004, 2).valid);  // reserved gap, DSTRD 2
  EXPECT_FALSE(decode_doorbell_offset(0x100C, 2).valid);
  EXPECT_TRUE(decode_doorbell_offset(0x1004, 0).valid);
  // One past CQ 65535's head doorbell would be SQ 65536: no such queue.
  EXPECT_FALSE(decode_doorbell_offset(0x1000 + 131072ull * 4, 0).valid);
}

TEST(NvmeRegisters, ShadowDoorbellOffsets) {
  EXPECT_EQ(shadow_doorbell_offset(DoorbellKind::SqTail, 0, 0), 0u);
  EXPECT_EQ(shadow_doorbell_offset(DoorbellKind::CqHead, 0, 0), 4u);
  EXPECT_EQ(shadow_doorbell_offset(DoorbellKind::SqTail, 3, 0), 24u);
  EXPECT_EQ(shadow_doorbell_offset(DoorbellKind::CqHead, 3, 0), 28u);
  EXPECT_EQ(shadow_doorbell_offset(DoorbellKind::CqHead, 3, 2), 112u);
}

}  // namespace
}  // namespace gpunvme::nvme
