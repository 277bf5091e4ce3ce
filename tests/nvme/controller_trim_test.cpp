// Dataset Management through the controller: the range list is read from
// the host's buffer and each range deallocated in the FTL, which unmaps the
// 4 KiB units a range covers wholly; a range past the namespace fails.
// Expected maps are worked out from the LBA arithmetic (512 B LBAs, 4 KiB
// mapping units: LBAs 8k .. 8k+7 form unit k).
#include <gtest/gtest.h>

#include "models/flash/ftl.h"
#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

constexpr std::uint64_t kTrimPage = 4096;

class TrimBench {
 public:
  TrimBench() : bench_({"samsung-pm1743", nlohmann::json::object()}), host_("host", bench_) {
    host_.attach(bench_.bring_up_one(64));
  }
  Bench& bench() { return bench_; }
  std::uint64_t host_page() { return bench_.driver().allocate(host::QueuePlacement::host, kTrimPage); }
  CompletionEntry run(const SubmissionEntry& sqe) {
    CompletionEntry out{};
    host_.submit(sqe, [&](const CompletionEntry& cqe, Picoseconds) { out = cqe; });
    bench_.run();
    return out;
  }
  const flash::Ftl& ftl() { return *bench_.ssd().flash().ftl(); }

 private:
  Bench bench_;
  TestHost host_;
};

SubmissionEntry make_deallocate(std::uint16_t cid, std::uint32_t ranges, std::uint64_t list) {
  SubmissionEntry e{};
  e.set_opcode(static_cast<std::uint8_t>(NvmOpcode::DatasetManagement));
  e.set_cid(cid);
  e.nsid = 1;
  e.prp1 = list;
  e.cdw10 = ranges - 1;
  e.cdw11 = 1u << 2;  // AD: deallocate
  return e;
}

TEST(ControllerTrim, DeallocateUnmapsWholeUnits) {
  TrimBench t;
  const std::uint64_t data = t.host_page();
  // 4 KiB writes at LBAs 0, 8 and 16: units 0, 1 and 2.
  for (std::uint16_t k = 0; k < 3; ++k) {
    const CompletionEntry c = t.run(make_write(k, 1, k * 8ull, 7, data, 0));
    ASSERT_TRUE(c.ok()) << status_name(c.status());
  }
  for (std::uint64_t unit = 0; unit < 3; ++unit) {
    EXPECT_NE(t.ftl().lookup(unit), flash::Ftl::kUnmapped) << unit;
  }
  // Two ranges: LBAs 4..11 (covers no unit wholly) and LBAs 16..23 (unit 2).
  const std::uint64_t list = t.host_page();
  t.bench().memory().store(list, std::uint64_t{8} << 32);       // context 0, 8 LBAs
  t.bench().memory().store(list + 8, std::uint64_t{4});         // from LBA 4
  t.bench().memory().store(list + 16, std::uint64_t{8} << 32);  // 8 LBAs
  t.bench().memory().store(list + 24, std::uint64_t{16});       // from LBA 16
  const CompletionEntry c = t.run(make_deallocate(9, 2, list));
  EXPECT_TRUE(c.ok()) << status_name(c.status());
  EXPECT_NE(t.ftl().lookup(0), flash::Ftl::kUnmapped);
  EXPECT_NE(t.ftl().lookup(1), flash::Ftl::kUnmapped);
  EXPECT_EQ(t.ftl().lookup(2), flash::Ftl::kUnmapped);
  EXPECT_EQ(t.ftl().stats().trimmed_slots, 1u);

  // A range past the namespace's end.
  const std::uint64_t capacity = t.bench().ssd().capacity_lbas();
  t.bench().memory().store(list, std::uint64_t{16} << 32);
  t.bench().memory().store(list + 8, capacity - 8);
  EXPECT_EQ(t.run(make_deallocate(10, 1, list)).status(), Status::LbaOutOfRange);
}

}  // namespace
}  // namespace gpunvme::nvme::testing
