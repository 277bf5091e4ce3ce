// Data pointers through the controller: PRP1/PRP2, PRP lists across page
// boundaries and chained list pages (read over PCIe as the walk reaches
// them), malformed PRPs, MDTS, SGL data blocks and segments, and both LBA
// formats. Each test computes the DMA it expects from the buffer layout and
// compares it with what the controller issued.
#include <gtest/gtest.h>

#include <vector>

#include "tests/nvme/nvme_bench.h"

namespace gpunvme::nvme::testing {
namespace {

constexpr std::uint64_t kPage = 4096;

struct Dma {
  std::uint64_t addr;
  std::uint64_t len;
  bool operator==(const Dma& o) const { return addr == o.addr && len == o.len; }
};
std::ostream& operator<<(std::ostream& out, const Dma& d) {
  return out << "{0x" << std::hex << d.addr << std::dec << ", " << d.len << "}";
}

// One command on a fresh controller; returns its status and the DMA bursts.
struct Outcome {
  CompletionEntry cqe{};
  std::vector<Dma> dma;
  std::uint64_t read_requests = 0;  // PCIe read requests the SSD issued
};

class DataBench {
 public:
  explicit DataBench(nlohmann::json params = nlohmann::json::object(),
                     std::string profile = "samsung-pm1743")
      : bench_({std::move(profile), std::move(params)}), host_("host", bench_) {
    host_.attach(bench_.bring_up_one(64));
    bench_.ssd().observe_dma([this](const Controller::DmaRecord& r) {
      if (r.qid != 0) dma_.push_back({r.addr, r.len});
    });
  }
  Bench& bench() { return bench_; }
  std::uint64_t host_pages(std::uint64_t pages) {
    return bench_.driver().allocate(host::QueuePlacement::host, pages * kPage);
  }
  void store(std::uint64_t addr, std::uint64_t value) { bench_.memory().store(addr, value); }

  Outcome run(const SubmissionEntry& sqe) {
    dma_.clear();
    const std::uint64_t requests_before = read_requests();
    Outcome out;
    host_.submit(sqe, [&](const CompletionEntry& cqe, Picoseconds) { out.cqe = cqe; });
    bench_.run();
    out.dma = dma_;
    out.read_requests = read_requests() - requests_before;
    EXPECT_EQ(host_.outstanding(), 0u);
    return out;
  }

 private:
  std::uint64_t read_requests() {
    return bench_.machine().fabric().tlps(pcie::TlpClass::ReadRequest);
  }
  Bench bench_;
  TestHost host_;
  std::vector<Dma> dma_;
};

// The DMA a buffer of `bytes` at `addr` in the given pages needs, pages taken
// in order and merged where they are contiguous.
std::vector<Dma> expected_dma(const std::vector<std::uint64_t>& pages, std::uint64_t offset,
                              std::uint64_t bytes) {
  std::vector<Dma> out;
  std::uint64_t left = bytes;
  for (std::size_t i = 0; left > 0; ++i) {
    const std::uint64_t start = pages.at(i) + (i == 0 ? offset : 0);
    const std::uint64_t len = std::min(left, kPage - (i == 0 ? offset : 0));
    if (!out.empty() && out.back().addr + out.back().len == start) {
      out.back().len += len;
    } else {
      out.push_back({start, len});
    }
    left -= len;
  }
  return out;
}

std::uint16_t nlb(std::uint64_t bytes, std::uint32_t lba) {
  return static_cast<std::uint16_t>(bytes / lba - 1);
}

TEST(ControllerData, TwoPagesUsePrp2AsADataPointer) {
  DataBench t;
  const std::uint64_t a = t.host_pages(1), b = t.host_pages(1);
  // 4 KiB from the middle of page a: crosses into page b, no list.
  const Outcome o = t.run(make_read(0, 1, 0, nlb(4096, 512), a + 2048, b));
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  EXPECT_EQ(o.dma, (std::vector<Dma>{{a + 2048, 2048}, {b, 2048}}));
  EXPECT_EQ(o.read_requests, 1u);  // the SQE fetch only
}

TEST(ControllerData, PrpListAcrossPageBoundaries) {
  DataBench t;
  // 7 scattered data pages, a buffer starting 512 B into the first: 6 list
  // entries after PRP1.
  std::vector<std::uint64_t> pages;
  for (int i = 0; i < 7; ++i) {
    pages.push_back(t.host_pages(1));
    t.host_pages(1);  // a gap, so no two data pages are contiguous
  }
  const std::uint64_t list = t.host_pages(1);
  for (int i = 1; i < 7; ++i) t.store(list + 8 * (i - 1), pages[i]);
  const std::uint64_t bytes = 6 * kPage;
  const Outcome o = t.run(make_read(0, 1, 0, nlb(bytes, 512), pages[0] + 512, list));
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  EXPECT_EQ(o.dma, expected_dma(pages, 512, bytes));
  EXPECT_EQ(o.read_requests, 2u);  // SQE + one list read
}

TEST(ControllerData, ChainedPrpListPagesAreReadAsReached) {
  DataBench t;
  // A list starting 32 B before the end of its page holds 3 entries and a
  // chain pointer; the next list page holds the rest. 20 data pages.
  const int data_pages = 20;
  std::vector<std::uint64_t> pages;
  for (int i = 0; i < data_pages; ++i) {
    pages.push_back(t.host_pages(1));
    t.host_pages(1);
  }
  const std::uint64_t list0 = t.host_pages(1) + kPage - 32;
  const std::uint64_t list1 = t.host_pages(1);
  t.store(list0 + 0, pages[1]);
  t.store(list0 + 8, pages[2]);
  t.store(list0 + 16, pages[3]);
  t.store(list0 + 24, list1);  // chain
  for (int i = 4; i < data_pages; ++i) t.store(list1 + 8 * (i - 4), pages[i]);
  const std::uint64_t bytes = data_pages * kPage;
  const Outcome o = t.run(make_write(0, 1, 0, nlb(bytes, 512), pages[0], list0));
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  EXPECT_EQ(o.dma, expected_dma(pages, 0, bytes));
  // SQE, first list page, chained list page; then the write reads its data
  // (one request per 512 B MRRS chunk of each 4 KiB page).
  EXPECT_EQ(o.read_requests, 1u + 2u + data_pages * (kPage / 512));
}

TEST(ControllerData, ListBuiltByTheProtocolLibraryChainsThroughThreePages) {
  DataBench t(nlohmann::json{{"mdts", 0}});  // no transfer limit
  // 1100 contiguous pages from a list of three pages (511 + 511 + 77 entries).
  const std::uint64_t pages = 1100;
  const std::uint64_t buffer = t.host_pages(pages);
  const std::uint64_t lists[3] = {t.host_pages(1), t.host_pages(1), t.host_pages(1)};
  MemorySpace& memory = t.bench().memory();
  const PrpBuildResult prp =
      build_prp(buffer, pages * kPage, kPage, lists, 3,
                [&](std::uint64_t addr, std::uint64_t value) { memory.store(addr, value); });
  ASSERT_TRUE(prp.ok());
  ASSERT_EQ(prp.list_pages_used, 3u);
  const Outcome o = t.run(make_read(0, 1, 0, nlb(pages * kPage, 512), prp.prp1, prp.prp2));
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  // Contiguous pages travel as one burst.
  EXPECT_EQ(o.dma, (std::vector<Dma>{{buffer, pages * kPage}}));
  // SQE; two full list pages of 8 MRRS-sized requests each; 77 entries
  // (616 B) in two.
  EXPECT_EQ(o.read_requests, 1u + 8u + 8u + 2u);
}

TEST(ControllerData, MalformedPrpsGetPrpOffsetInvalid) {
  DataBench t;
  const std::uint64_t a = t.host_pages(1), b = t.host_pages(1), list = t.host_pages(1);
  // PRP1 not dword aligned.
  EXPECT_EQ(t.run(make_read(0, 1, 0, nlb(4096, 512), a + 2, 0)).cqe.status(),
            Status::PrpOffsetInvalid);
  // PRP2 as a second data page with an offset.
  EXPECT_EQ(t.run(make_read(0, 1, 0, nlb(4096, 512), a + 1024, b + 8)).cqe.status(),
            Status::PrpOffsetInvalid);
  // A list entry with an offset.
  t.store(list, b + 512);
  t.store(list + 8, b);
  const Outcome o = t.run(make_read(0, 1, 0, nlb(3 * 4096, 512), a, list));
  EXPECT_EQ(o.cqe.status(), Status::PrpOffsetInvalid);
  EXPECT_EQ(o.cqe.sct(), StatusCodeType::Generic);
  EXPECT_EQ(o.cqe.sc(), 0x13);
  EXPECT_TRUE(o.dma.empty());  // nothing moves for a failed command
  // A list pointer that is not qword aligned.
  EXPECT_EQ(t.run(make_read(0, 1, 0, nlb(3 * 4096, 512), a, list + 4)).cqe.status(),
            Status::PrpOffsetInvalid);
  // A chain pointer with an offset: a list 8 B before its page end.
  const std::uint64_t tail = t.host_pages(1) + kPage - 8;
  t.store(tail, b + 64);
  EXPECT_EQ(t.run(make_read(0, 1, 0, nlb(3 * 4096, 512), a, tail)).cqe.status(),
            Status::PrpOffsetInvalid);
}

TEST(ControllerData, MdtsIsEnforcedAndTheSubmitterSplits) {
  DataBench t;  // PM1743 profile: MDTS 9, 2 MiB
  const std::uint64_t mdts_bytes = t.bench().driver().info().max_transfer_bytes;
  ASSERT_EQ(mdts_bytes, 2ull << 20);
  const std::uint64_t total = 5ull << 20;  // 5 MiB: three commands of at most MDTS
  const std::uint64_t buffer = t.host_pages(total / kPage);
  const std::uint64_t lists = t.host_pages(16);
  MemorySpace& memory = t.bench().memory();
  auto command = [&](std::uint64_t offset, std::uint64_t bytes, int k) {
    std::uint64_t list = lists + k * kPage;
    const PrpBuildResult prp =
        build_prp(buffer + offset, bytes, kPage, &list, 1,
                  [&](std::uint64_t addr, std::uint64_t value) { memory.store(addr, value); });
    EXPECT_TRUE(prp.ok());
    return make_read(0, 1, offset / 512, nlb(bytes, 512), prp.prp1, prp.prp2);
  };
  // Beyond MDTS by one page: Invalid Field in Command, nothing moved.
  const std::uint64_t too_big = mdts_bytes + kPage;
  const std::uint64_t two_lists[2] = {lists, lists + kPage};  // 512 entries need a chain
  const PrpBuildResult prp =
      build_prp(buffer, too_big, kPage, two_lists, 2,
                [&](std::uint64_t addr, std::uint64_t value) { memory.store(addr, value); });
  ASSERT_TRUE(prp.ok());
  const Outcome big = t.run(make_read(0, 1, 0, nlb(too_big, 512), prp.prp1, prp.prp2));
  EXPECT_EQ(big.cqe.status(), Status::InvalidFieldInCommand);
  EXPECT_TRUE(big.dma.empty());
  // Split by the submitter: every piece at most MDTS; together the buffer.
  std::uint64_t moved = 0;
  int k = 0;
  for (std::uint64_t offset = 0; offset < total; offset += mdts_bytes, ++k) {
    const std::uint64_t bytes = std::min(mdts_bytes, total - offset);
    const Outcome o = t.run(command(offset, bytes, 2 + k));
    EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
    ASSERT_EQ(o.dma.size(), 1u);
    EXPECT_EQ(o.dma[0], (Dma{buffer + offset, bytes}));
    moved += bytes;
  }
  EXPECT_EQ(moved, total);
  EXPECT_EQ(k, 3);
}

TEST(ControllerData, SglsWhenOffered) {
  {
    DataBench t;  // the PM1743 profile offers no SGLs
    const std::uint64_t a = t.host_pages(1);
    SubmissionEntry sqe = make_read(0, 1, 0, nlb(4096, 512), 0, 0);
    sqe.set_sgl1(make_sgl_data_block(a, 4096));
    EXPECT_EQ(t.run(sqe).cqe.status(), Status::InvalidFieldInCommand);
  }
  DataBench t(nlohmann::json{{"sgl_supported", true}});
  EXPECT_TRUE(t.bench().driver().info().sgl_supported);
  const std::uint64_t a = t.host_pages(4), b = t.host_pages(4), c = t.host_pages(4);
  // One data block: no descriptor reads, any byte alignment.
  SubmissionEntry one = make_read(0, 1, 0, nlb(8192, 512), 0, 0);
  one.set_sgl1(make_sgl_data_block(a + 3, 8192));
  Outcome o = t.run(one);
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  EXPECT_EQ(o.dma, (std::vector<Dma>{{a + 3, 8192}}));
  EXPECT_EQ(o.read_requests, 1u);
  // A segment of two descriptors chaining to a last segment of two (one of
  // them a bit bucket, allowed for reads).
  const std::uint64_t seg0 = t.host_pages(1), seg1 = t.host_pages(1);
  auto put = [&](std::uint64_t at, const SglDescriptor& d) { t.bench().memory().store(at, d); };
  put(seg0, make_sgl_data_block(b, 1024));
  put(seg0 + 16, make_sgl_last_segment(seg1, 32));
  put(seg1, make_sgl_bit_bucket(512));
  put(seg1 + 16, make_sgl_data_block(c + 100, 2560));
  SubmissionEntry chained = make_read(0, 1, 0, nlb(4096, 512), 0, 0);
  chained.set_sgl1(make_sgl_segment(seg0, 32));
  o = t.run(chained);
  EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
  EXPECT_EQ(o.dma, (std::vector<Dma>{{b, 1024}, {c + 100, 2560}}));
  EXPECT_EQ(o.read_requests, 3u);  // SQE and two segments
  // Too few bytes described.
  SubmissionEntry short_sgl = make_read(0, 1, 0, nlb(4096, 512), 0, 0);
  short_sgl.set_sgl1(make_sgl_data_block(a, 2048));
  EXPECT_EQ(t.run(short_sgl).cqe.status(), Status::DataSglLengthInvalid);
  // A bit bucket is no source for a write.
  put(seg1, make_sgl_bit_bucket(512));
  SubmissionEntry write = make_write(0, 1, 0, nlb(4096, 512), 0, 0);
  write.set_sgl1(make_sgl_segment(seg0, 32));
  EXPECT_EQ(t.run(write).cqe.status(), Status::SglDescriptorTypeInvalid);
}

TEST(ControllerData, BothLbaFormats) {
  for (int lba : {512, 4096}) {
    SCOPED_TRACE(lba);
    DataBench t(nlohmann::json{{"lba_bytes", lba}});
    const std::uint64_t a = t.host_pages(2);
    EXPECT_EQ(t.bench().driver().info().lba_bytes, static_cast<std::uint32_t>(lba));
    const std::uint64_t capacity = t.bench().ssd().capacity_lbas();
    EXPECT_EQ(t.bench().driver().info().capacity_lbas, capacity);
    // 8 KiB = 16 or 2 LBAs at the end of the namespace.
    const std::uint64_t count = 8192 / lba;
    Outcome o = t.run(make_read(0, 1, capacity - count, nlb(8192, lba), a, a + kPage));
    EXPECT_TRUE(o.cqe.ok()) << status_name(o.cqe.status());
    EXPECT_EQ(o.dma, (std::vector<Dma>{{a, 8192}}));
    // One LBA past the end.
    o = t.run(make_read(0, 1, capacity - count + 1, nlb(8192, lba), a, a + kPage));
    EXPECT_EQ(o.cqe.status(), Status::LbaOutOfRange);
    // A single LBA.
    o = t.run(make_read(0, 1, 5, 0, a, 0));
    EXPECT_TRUE(o.cqe.ok());
    EXPECT_EQ(o.dma, (std::vector<Dma>{{a, static_cast<std::uint64_t>(lba)}}));
    // Another namespace.
    EXPECT_EQ(t.run(make_read(0, 2, 0, 0, a, 0)).cqe.status(), Status::InvalidNamespaceOrFormat);
  }
}

}  // namespace
}  // namespace gpunvme::nvme::testing
