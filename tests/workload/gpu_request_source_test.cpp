// The GPU I/O path driven by a request source written here: the path asks
// it for batches and rounds, runs them through the strategy, hands every
// status back once the batch is in, and lets each warp leave once. The
// counts are worked out by hand from the script.
#include <gtest/gtest.h>

#include <vector>

#include "sim/kernel/simulation.h"
#include "sim/system/workload/gpu_io_path.h"
#include "workload_test_util.h"

namespace gpunvme {
namespace {

// Every warp runs `batches` batches of two rounds: all lanes in round 0, the
// lower half in round 1; one 4 KiB read per lane.
class ScriptedSource : public GpuRequestSource {
 public:
  struct Event {
    enum Kind { Fill, Completed, Exit } kind;
    std::uint32_t warp, batch, round;
    int lane;
    std::uint16_t status;
  };

  ScriptedSource(std::uint32_t batches, std::uint32_t lbas_per_io)
      : batches_(batches), lbas_per_io_(lbas_per_io) {}

  bool queues_first() const override { return false; }
  void lay_out(GpuIoPath& path, gpu::Gpu& gpu) override {
    path_ = &path;
    buffers_ = gpu.allocate(std::uint64_t{path.warps().size()} * 32 * 2 * 4096, 4096);
    shutdown_ = gpu.allocate(128, 128);
    batch_.assign(path.warps().size(), 0);
  }
  std::uint64_t shutdown_word() const override { return shutdown_; }
  bool next_batch(platform::SimWarp&, std::uint32_t w) override { return batch_[w] < batches_; }
  algo::LaneMask fill_round(std::uint32_t w, std::uint32_t round,
                            algo::Lanes<algo::IoRequest>& request) override {
    if (round >= 2) return 0;
    const GpuWarp& warp = path_->warps()[w];
    const algo::LaneMask mask = round == 0 ? 0xFFFFFFFFu : 0x0000FFFFu;
    algo::visit_lanes(mask, [&](int lane) {
      const std::uint32_t thread = warp.first_thread + static_cast<std::uint32_t>(lane);
      algo::IoRequest& r = request[lane];
      r.queue = path_->map_queue(w, thread, submitted_, 0);
      r.opcode = nvme::NvmOpcode::Read;
      r.slba = (std::uint64_t{thread} * 2 + round) * lbas_per_io_;
      r.nlb_zero_based = static_cast<std::uint16_t>(lbas_per_io_ - 1);
      r.bytes = 4096;
      r.pool_index = round;
      r.buffer = buffers_ + ((std::uint64_t{thread} * 2) + round) * 4096;
      ++submitted_;
    });
    events.push_back({Event::Fill, w, batch_[w], round, -1, 0});
    return mask;
  }
  void completed(std::uint32_t w, std::uint32_t round, int lane, std::uint16_t status) override {
    events.push_back({Event::Completed, w, batch_[w], round, lane, status});
    if (round == 1 && lane == 15) ++batch_[w];  // the batch's last request
  }
  void warp_exits(platform::SimWarp&, std::uint32_t w) override {
    events.push_back({Event::Exit, w, batch_[w], 0, -1, 0});
  }
  std::uint64_t submitted() const override { return submitted_; }

  std::vector<Event> events;

 private:
  std::uint32_t batches_;
  std::uint32_t lbas_per_io_;
  GpuIoPath* path_ = nullptr;
  std::uint64_t buffers_ = 0;
  std::uint64_t shutdown_ = 0;
  std::vector<std::uint32_t> batch_;
  std::uint64_t submitted_ = 0;
};

TEST(GpuRequestSource, ThePathRunsTheSourcesBatchesAndHandsEveryStatusBack) {
  // Two warps (64 threads), iodepth 2, three batches each: 2 x 3 x (32 + 16)
  // = 288 reads of 4 KiB.
  const RunConfig config = test::scenario(
      "randread-4k", {"scenario.threads=64", "scenario.iodepth=2", "scenario.queues=2"});
  Simulation simulation;
  Machine machine(config.topology);
  ScriptedSource source(3, 4096 / machine.ssd("ssd0").lba_bytes());
  GpuQueueOptions options;
  options.ssd_mapping = algo::SsdMapping::Interleave;
  GpuIoPath path("scripted", config, machine, 4096, source, options);
  bool ready = false;
  path.start([&] { ready = true; });
  simulation.run();

  ASSERT_TRUE(ready);
  EXPECT_EQ(path.submitted(), 288u);
  EXPECT_EQ(path.completed(), 288u);
  EXPECT_EQ(path.errors(), 0u);
  EXPECT_EQ(path.bytes(), 288u * 4096u);
  EXPECT_EQ(path.warps().size(), 2u);

  // Per warp: fill round 0, fill round 1, then the 48 statuses in round and
  // lane order; three times; then it leaves once.
  for (std::uint32_t w = 0; w < 2; ++w) {
    std::vector<ScriptedSource::Event> mine;
    for (const auto& e : source.events) {
      if (e.warp == w) mine.push_back(e);
    }
    ASSERT_EQ(mine.size(), 3u * (2 + 48) + 1) << w;
    std::size_t i = 0;
    for (std::uint32_t b = 0; b < 3; ++b) {
      for (std::uint32_t round = 0; round < 2; ++round, ++i) {
        EXPECT_EQ(mine[i].kind, ScriptedSource::Event::Fill);
        EXPECT_EQ(mine[i].batch, b);
        EXPECT_EQ(mine[i].round, round);
      }
      for (std::uint32_t round = 0; round < 2; ++round) {
        for (int lane = 0; lane < (round == 0 ? 32 : 16); ++lane, ++i) {
          EXPECT_EQ(mine[i].kind, ScriptedSource::Event::Completed) << i;
          EXPECT_EQ(mine[i].batch, b);
          EXPECT_EQ(mine[i].round, round);
          EXPECT_EQ(mine[i].lane, lane);
          EXPECT_EQ(mine[i].status, 0u);
        }
      }
    }
    EXPECT_EQ(mine[i].kind, ScriptedSource::Event::Exit);
    EXPECT_EQ(mine[i].batch, 3u);
  }
}

}  // namespace
}  // namespace gpunvme
