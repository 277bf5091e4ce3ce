// The error mailbox's byte layout, checked byte by byte against the offsets
// written down in sim/core/protocol/gpu_error_mailbox.h.
#include "sim/core/protocol/gpu_error_mailbox.h"

#include <gtest/gtest.h>

#include <cstring>

namespace gpunvme::nvme {
namespace {

TEST(GpuErrorMailbox, RecordBytesAreWhereTheLayoutSays) {
  GpuErrorRecord r{};
  r.sequence = 0x11223344u;
  r.sqid = 0x5566u;
  r.cid = 0x7788u;
  r.status = 0x4281u;  // DNR | SCT 2h | SC 81h: Unrecovered Read Error
  r.attempt = 0x0003u;
  r.thread = 0x99AABBCCu;
  r.slba = 0x0102030405060708ull;
  r.verdict_index = 0xDDEEFF00u;
  r.queue = 0x0A0B0C0Du;
  unsigned char b[32];
  std::memcpy(b, &r, sizeof b);
  // Little endian, fields at 0, 4, 6, 8, 10, 12, 16, 24, 28.
  const unsigned char want[32] = {0x44, 0x33, 0x22, 0x11, 0x66, 0x55, 0x88, 0x77, 0x81, 0x42, 0x03,
                                  0x00, 0xCC, 0xBB, 0xAA, 0x99, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03,
                                  0x02, 0x01, 0x00, 0xFF, 0xEE, 0xDD, 0x0D, 0x0C, 0x0B, 0x0A};
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b[i], want[i]) << "byte " << i;
  // The body the GPU writes before its fence is everything after the
  // sequence word.
  EXPECT_EQ(kGpuErrorBodyOffset, 4u);
}

TEST(GpuErrorMailbox, VerdictIsOneEightByteWord) {
  GpuErrorVerdict v{0x01020304u, static_cast<std::uint16_t>(GpuErrorAction::Retry), 0};
  unsigned char b[8];
  std::memcpy(b, &v, sizeof b);
  const unsigned char want[8] = {0x04, 0x03, 0x02, 0x01, 0x01, 0x00, 0x00, 0x00};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b[i], want[i]) << "byte " << i;
  EXPECT_EQ(static_cast<int>(GpuErrorAction::Fail), 2);
}

}  // namespace
}  // namespace gpunvme::nvme
