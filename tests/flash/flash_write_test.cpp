// Write buffer of the flash back end: writes complete at the buffer's fill
// rate until it is full, then at the rate programs free space; flush waits for
// the last program. Oracles are closed forms computed here.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "models/flash/flash_array.h"

namespace gpunvme::flash {
namespace {

constexpr std::uint64_t kMicrosecondPs = 1'000'000;  // ps

// 2 channels x 2 dies x 1 plane = 4 program units of 16 KiB at tPROG 100 µs:
// the array drains 4 x 16 KiB / 100 µs = 655 MB/s. The buffer (1 MiB) fills
// at 1 GB/s; channels carry 8 GB/s, so they never limit.
FlashParams write_params() {
  FlashParams p;
  p.channels = 2;
  p.dies_per_channel = 2;
  p.planes_per_die = 1;
  p.page_bytes = 16384;
  p.stripe_bytes = 16384;
  p.independent_plane_reads = true;
  p.read_ps = 50 * kMicrosecondPs;
  p.program_ps = 100 * kMicrosecondPs;
  p.channel_mts = 1000;
  p.channel_bus_bytes = 8;
  p.write_buffer_bytes = 1 << 20;
  p.write_buffer_gbps = 1.0;
  p.capacity_bytes = 1ull << 30;
  return p;
}

double admit_oracle_ps(const FlashParams& p, double bytes) {
  return bytes * 1e12 / (p.write_buffer_gbps * 1e9);
}
double xfer_oracle_ps(const FlashParams& p, double bytes) {
  return bytes * 1e12 / (p.channel_mts * 1e6 * p.channel_bus_bytes);
}

TEST(FlashWrite, BufferSpeedUntilFullThenProgramSpeed) {
  const FlashParams p = write_params();
  FlashArray f(p);
  const std::uint32_t bytes = 65536;
  const double buffer_interval = admit_oracle_ps(p, bytes);
  const double drain_bps = 4.0 * p.page_bytes / (static_cast<double>(p.program_ps) * 1e-12);
  const double program_interval = bytes / drain_bps * 1e12;
  EXPECT_NEAR(f.saturated_program_bandwidth_gbps(), drain_bps / 1e9, 1e-9);

  // Closed loop at queue depth 1: each write issued when the last completes.
  std::vector<std::uint64_t> done;
  std::uint64_t now = 0;
  for (int i = 0; i < 400; ++i) {
    now = f.write(now, static_cast<std::uint64_t>(i) * bytes, bytes);
    done.push_back(now);
  }
  // The buffer has room for the first 16 writes outright (1 MiB): each takes
  // exactly its admission time.
  EXPECT_NEAR(static_cast<double>(done[0]), buffer_interval, 1.0);
  for (int i = 1; i < 16; ++i) {
    EXPECT_NEAR(static_cast<double>(done[i] - done[i - 1]), buffer_interval, 2.0) << i;
  }
  // Once full, writes complete as programs free space.
  const double steady = static_cast<double>(done[399] - done[199]) / 200.0;
  EXPECT_NEAR(steady, program_interval, 0.02 * program_interval);
  EXPECT_GT(f.stats().buffer_full_waits, 0u);
  EXPECT_LE(f.stats().buffer_high_water_bytes, p.write_buffer_bytes);
  EXPECT_GE(f.stats().buffer_high_water_bytes, p.write_buffer_bytes - p.page_bytes);
  EXPECT_EQ(f.stats().bytes_written, 400ull * bytes);
}

TEST(FlashWrite, FlushWaitsForDrain) {
  const FlashParams p = write_params();
  FlashArray f(p);
  // 3 chunks per unit, admitted in one command well inside the buffer.
  const std::uint64_t chunk = p.program_chunk_bytes();
  const std::uint32_t units = p.array_units();
  const std::uint32_t rounds = 3;
  const std::uint64_t total = chunk * units * rounds;
  const std::uint64_t admitted = f.write(0, 0, static_cast<std::uint32_t>(total));
  EXPECT_NEAR(static_cast<double>(admitted), admit_oracle_ps(p, total), 1.0);
  // The last unit gets its first chunk after `units` chunks are admitted and
  // moved over the channel, then programs its chunks back to back, since
  // tPROG is longer than the admission of a whole round.
  const double oracle = admit_oracle_ps(p, static_cast<double>(units * chunk)) +
                        xfer_oracle_ps(p, chunk) + rounds * static_cast<double>(p.program_ps);
  EXPECT_NEAR(static_cast<double>(f.flush(admitted)), oracle, 2.0);
  EXPECT_EQ(f.stats().page_programs, units * rounds);
  // Nothing left: flush returns its own time.
  EXPECT_EQ(f.flush(10'000 * kMicrosecondPs), 10'000 * kMicrosecondPs);
}

TEST(FlashWrite, FlushProgramsPartialChunk) {
  const FlashParams p = write_params();
  FlashArray f(p);
  const std::uint64_t admitted = f.write(0, 0, 4096);
  EXPECT_NEAR(static_cast<double>(admitted), admit_oracle_ps(p, 4096), 1.0);
  EXPECT_EQ(f.stats().page_programs, 0u);  // waits in the open chunk
  const std::uint64_t t = 10 * kMicrosecondPs;
  EXPECT_NEAR(static_cast<double>(f.flush(t)),
              static_cast<double>(t) + xfer_oracle_ps(p, 4096) + static_cast<double>(p.program_ps),
              1.0);
  EXPECT_EQ(f.stats().page_programs, 1u);
}

TEST(FlashWrite, ReadWaitsForProgramOnItsUnit) {
  const FlashParams p = write_params();
  FlashArray f(p);
  // One full chunk goes to the first unit in program order: channel 0, die 0.
  const std::uint64_t admitted = f.write(0, 0, 16384);
  const std::uint64_t prog_end = f.flush(admitted);
  EXPECT_NEAR(static_cast<double>(prog_end),
              static_cast<double>(admitted) + xfer_oracle_ps(p, 16384) + p.program_ps, 1.0);
  // A read of that die issued during the program starts when it ends:
  // stripe unit 4 (2 channels x 2 dies) is never written and lies on
  // channel 0, die 0. The data being programmed is read from the buffer.
  const std::uint64_t now = admitted + 50 * kMicrosecondPs;
  EXPECT_NEAR(static_cast<double>(f.read(now, 4 * 16384, 4096)),
              static_cast<double>(prog_end + p.read_ps) + xfer_oracle_ps(p, 4096), 1.0);
  EXPECT_EQ(f.read(now, 0, 4096), now);
  EXPECT_EQ(f.stats().buffer_read_hits, 1u);
  // A read of another die is not held up.
  EXPECT_NEAR(static_cast<double>(f.read(now, 16384, 4096) - now),
              static_cast<double>(p.read_ps) + xfer_oracle_ps(p, 4096), 1.0);
}

TEST(FlashWrite, MultiPlaneProgramChunk) {
  FlashParams p = write_params();
  p.planes_per_die = 2;
  p.independent_plane_reads = false;
  FlashArray f(p);
  EXPECT_EQ(p.program_chunk_bytes(), 2 * p.page_bytes);
  // Four dies programming two pages each per tPROG: twice the single-plane
  // drain rate.
  EXPECT_NEAR(f.saturated_program_bandwidth_gbps(),
              4.0 * 2 * p.page_bytes / (static_cast<double>(p.program_ps) * 1e-12) / 1e9, 1e-9);
  f.write(0, 0, 4 * 32768);
  EXPECT_EQ(f.stats().page_programs, 8u);
}

}  // namespace
}  // namespace gpunvme::flash
