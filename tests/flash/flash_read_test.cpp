// Read path of the flash back end against closed-form oracles: unloaded
// latency, parallelism across dies and planes, serialization on one die,
// striping, and a closed-loop random-read driver checked against Little's law
// and the analytic saturation rate.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include "models/flash/flash_array.h"
#include "models/flash/timeline.h"

namespace gpunvme::flash {
namespace {

constexpr std::uint64_t kUs = 1'000'000;  // ps

// The oracle's own transfer time: bytes over channel_mts x bus_bytes, in ps.
double oracle_xfer_ps(const FlashParams& p, double bytes) {
  return bytes * 1e12 / (p.channel_mts * 1e6 * p.channel_bus_bytes);
}

FlashParams small_params() {
  FlashParams p;
  p.channels = 4;
  p.dies_per_channel = 2;
  p.planes_per_die = 2;
  p.page_bytes = 16384;
  p.stripe_bytes = 16384;
  p.independent_plane_reads = false;
  p.read_ps = 50 * kUs;
  p.channel_mts = 800;
  p.channel_bus_bytes = 1;
  p.capacity_bytes = 1ull << 30;
  return p;
}

TEST(FlashTimeline, FillsGapsAndMerges) {
  Timeline t;
  EXPECT_EQ(t.book(0, 100, 100), 100u);  // [100, 200)
  EXPECT_EQ(t.book(0, 0, 50), 0u);       // fits before: [0, 50)
  EXPECT_EQ(t.book(0, 0, 60), 200u);     // the 50-wide gap is too short
  EXPECT_EQ(t.book(0, 0, 50), 50u);      // exactly fills [50, 100)
  EXPECT_EQ(t.live_intervals(), 1u);     // [0, 260) merged
  EXPECT_EQ(t.last_end(), 260u);
  EXPECT_EQ(t.busy_ps(), 260u);
  // Bookings that ended before `now` are forgotten; work cannot start before
  // its ready time.
  EXPECT_EQ(t.book(1000, 1000, 10), 1000u);
  EXPECT_EQ(t.live_intervals(), 1u);
  EXPECT_EQ(t.book(1000, 1000, 0), 1000u);  // zero duration books nothing
  EXPECT_EQ(t.busy_ps(), 270u);
}

// Many bookings held at once, mostly at the frontier and sometimes far behind
// it (the timeline looks back from its last span before searching), against a
// linear first-fit over every booking that has not ended.
TEST(FlashTimeline, LongListMatchesFirstFit) {
  Timeline t;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;  // [start, end), sorted
  std::mt19937_64 rng(7);
  std::uint64_t now = 0;
  for (int i = 0; i < 5000; ++i) {
    now += rng() % 40;
    const std::uint64_t frontier = busy.empty() ? now : std::max(now, busy.back().second);
    std::uint64_t ready = frontier + rng() % 200;  // leaves a gap behind it
    if (rng() % 2 == 0) {
      // Before the frontier: mostly a span or two, sometimes far behind.
      const std::uint64_t back = rng() % 4 == 0 ? rng() % 20000 : rng() % 300;
      ready = std::max(now, frontier > back ? frontier - back : 0);
    }
    const std::uint64_t duration = 1 + rng() % 100;

    std::uint64_t start = ready;
    auto at = busy.begin();
    for (; at != busy.end(); ++at) {
      if (at->second <= start) continue;
      if (at->first >= start + duration) break;
      start = at->second;
    }
    busy.insert(at, {start, start + duration});
    busy.erase(
        std::remove_if(busy.begin(), busy.end(), [now](const auto& s) { return s.second <= now; }),
        busy.end());

    ASSERT_EQ(t.book(now, ready, duration), start) << "booking " << i;
  }
  EXPECT_GT(t.live_intervals(), 100u);  // the list was long enough to search
}

TEST(FlashRead, UnloadedLatencyIsReadTimePlusTransfer) {
  const FlashParams p = small_params();
  for (std::uint32_t bytes : {512u, 4096u, 16384u}) {
    FlashArray f(p);
    const double oracle = static_cast<double>(p.read_ps) + oracle_xfer_ps(p, bytes);
    EXPECT_NEAR(static_cast<double>(f.read(0, 0, bytes)), oracle, 1.0) << bytes;
    // Issued later on an idle array, the latency is the same.
    const std::uint64_t t0 = 1000 * kUs;
    EXPECT_NEAR(static_cast<double>(f.read(t0, 3 * 16384, bytes) - t0), oracle, 1.0);
  }
  // A 32 KiB read spans two stripe units on two channels: both pages sense in
  // parallel, each channel carries 16 KiB.
  FlashArray f(p);
  EXPECT_NEAR(static_cast<double>(f.read(0, 0, 32768)),
              static_cast<double>(p.read_ps) + oracle_xfer_ps(p, 16384), 1.0);
  EXPECT_EQ(f.stats().page_reads, 2u);
}

TEST(FlashRead, DistinctDiesOverlapSameDieSerializes) {
  const FlashParams p = small_params();
  const double tr = static_cast<double>(p.read_ps);
  const double x4k = oracle_xfer_ps(p, 4096);
  {
    // One read per die; the four dies on distinct channels finish together,
    // dies sharing a channel finish one transfer apart.
    FlashArray f(p);
    std::vector<std::uint64_t> done;
    for (std::uint32_t k = 0; k < p.dies(); ++k) done.push_back(f.read(0, k * 16384ull, 4096));
    for (std::uint32_t k = 0; k < p.dies(); ++k) {
      const std::uint32_t nth_on_channel = k / p.channels;  // 0 for die 0, 1 for die 1
      EXPECT_NEAR(static_cast<double>(done[k]), tr + (nth_on_channel + 1) * x4k, 2.0) << k;
    }
  }
  {
    // N reads to one plane of one die: k-th finishes after k read times.
    FlashArray f(p);
    const std::uint64_t same_plane = 16384ull * p.planes();  // next row, same location
    for (std::uint32_t k = 1; k <= 6; ++k) {
      const std::uint64_t off = (k - 1) * same_plane;
      EXPECT_EQ(f.locate(off).channel, 0u);
      EXPECT_EQ(f.locate(off).die, 0u);
      EXPECT_EQ(f.locate(off).plane, 0u);
      EXPECT_NEAR(static_cast<double>(f.read(0, off, 4096)), k * tr + x4k, 1.0) << k;
    }
    EXPECT_EQ(f.stats().die_busy_ps[0], 6 * p.read_ps);
  }
}

TEST(FlashRead, PlanesIndependentOrMultiPlane) {
  FlashParams p = small_params();
  p.channels = 1;
  p.dies_per_channel = 1;
  p.planes_per_die = 4;
  p.page_bytes = 4096;
  p.stripe_bytes = 4096;
  const double tr = static_cast<double>(p.read_ps);
  const double x = oracle_xfer_ps(p, 4096);
  {
    // Separate commands to the four planes of a die that runs one operation
    // at a time: serialized.
    p.independent_plane_reads = false;
    FlashArray f(p);
    for (std::uint32_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(static_cast<double>(f.read(0, k * 4096ull, 4096)), (k + 1) * tr + x, 1.0);
    }
  }
  {
    // One command over all four planes: one multi-plane read, then four
    // transfers on the shared channel.
    FlashArray f(p);
    EXPECT_NEAR(static_cast<double>(f.read(0, 0, 4 * 4096)), tr + 4 * x, 2.0);
    EXPECT_EQ(f.stats().page_reads, 4u);
    EXPECT_EQ(f.stats().die_busy_ps[0], p.read_ps);
  }
  {
    // Independent planes: separate commands sense at once and queue only for
    // the channel.
    p.independent_plane_reads = true;
    FlashArray f(p);
    for (std::uint32_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(static_cast<double>(f.read(0, k * 4096ull, 4096)), tr + (k + 1) * x, 2.0);
    }
    EXPECT_EQ(f.stats().die_busy_ps[0], 4 * p.read_ps);
  }
}

TEST(FlashRead, StripingIsChannelFirst) {
  const FlashParams p = small_params();
  FlashArray f(p);
  for (std::uint64_t u = 0; u < 4ull * p.planes(); ++u) {
    const Location loc = f.locate(u * p.stripe_bytes + 123);
    EXPECT_EQ(loc.channel, u % p.channels);
    EXPECT_EQ(loc.die, (u / p.channels) % p.dies_per_channel);
    EXPECT_EQ(loc.plane, (u / p.dies()) % p.planes_per_die);
    EXPECT_EQ(loc.page, u / p.planes());
  }
  // Any run of `channels` consecutive stripe units covers every channel once.
  for (std::uint64_t start = 0; start < 10; ++start) {
    std::vector<bool> seen(p.channels, false);
    for (std::uint64_t u = start; u < start + p.channels; ++u) {
      seen[f.locate(u * p.stripe_bytes).channel] = true;
    }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
  }
  // Stripe units smaller than a page share the page.
  FlashParams q = p;
  q.stripe_bytes = 4096;
  FlashArray g(q);
  EXPECT_EQ(g.locate(0).page, g.locate(q.planes() * 4096ull).page);
  EXPECT_EQ(g.locate(0).page + 1, g.locate(4ull * q.planes() * 4096ull).page);
}

TEST(FlashRead, IdleDieNotDelayedByQueueOnSameChannel) {
  const FlashParams p = small_params();
  FlashArray f(p);
  const std::uint64_t same_plane = 16384ull * p.planes();
  // Ten reads queue on die 0 of channel 0; their transfers are booked on the
  // channel at tR, 2 tR, ... 10 tR.
  for (int k = 0; k < 10; ++k) f.read(0, k * same_plane, 4096);
  // Once the first transfer is over, a read to idle die 1 of channel 0 (stripe
  // unit 4) fits between the bookings instead of queueing behind all of them.
  const std::uint64_t now = p.read_ps + f.transfer_ps(4096);
  const std::uint64_t off = 4ull * 16384;
  ASSERT_EQ(f.locate(off).channel, 0u);
  ASSERT_EQ(f.locate(off).die, 1u);
  EXPECT_NEAR(static_cast<double>(f.read(now, off, 4096) - now),
              static_cast<double>(p.read_ps) + oracle_xfer_ps(p, 4096), 1.0);
}

// A read booked now for later (a controller books a command's media read
// when it books the command's processing) holds its die from then on only:
// a read booked after it, ready at once, on another die or before the
// booking on the same die, is not pushed behind it.
TEST(FlashRead, ReadBookedAheadDoesNotDelayOneReadyEarlier) {
  const FlashParams p = small_params();
  FlashArray f(p);
  const double unloaded = static_cast<double>(p.read_ps) + oracle_xfer_ps(p, 4096);
  const std::uint64_t later = 100 * p.read_ps;
  EXPECT_NEAR(static_cast<double>(f.read(0, later, 0, 4096) - later), unloaded, 1.0);
  const std::uint64_t other_die = 4ull * 16384;
  ASSERT_NE(f.locate(other_die).die, f.locate(0).die);
  EXPECT_NEAR(static_cast<double>(f.read(0, 0, other_die, 4096)), unloaded, 1.0);
  // Die 0 is free before `later`; its transfer follows die 1's on their
  // shared channel.
  const std::uint64_t same_plane = 16384ull * p.planes();
  ASSERT_EQ(f.locate(same_plane).die, f.locate(0).die);
  ASSERT_EQ(f.locate(other_die).channel, f.locate(0).channel);
  EXPECT_NEAR(static_cast<double>(f.read(0, 0, same_plane, 4096)),
              unloaded + oracle_xfer_ps(p, 4096), 1.0);
  // Its own booking stands: a read of that die ready at `later` follows it.
  EXPECT_NEAR(static_cast<double>(f.read(0, later, 2 * same_plane, 4096) - later),
              static_cast<double>(2 * p.read_ps) + oracle_xfer_ps(p, 4096), 1.0);
}

TEST(FlashRead, RejectsAccessPastCapacity) {
  FlashParams p = small_params();
  FlashArray f(p);
  EXPECT_THROW(f.read(0, p.capacity_bytes - 4096, 8192), std::out_of_range);
  EXPECT_NO_THROW(f.read(0, p.capacity_bytes - 4096, 4096));
}

// Closed-loop driver: `qd` reads outstanding, each replaced by a new random
// aligned read the moment it completes.
struct LoopResult {
  double iops;
  double mean_latency_ps;
};

LoopResult closed_loop(const FlashParams& p, std::uint32_t qd, std::uint32_t bytes,
                       std::uint64_t warmup, std::uint64_t measured, std::uint64_t seed) {
  FlashArray f(p);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> block(0, p.capacity_bytes / bytes - 1);
  // (completion, issue) pairs, earliest completion first.
  using Op = std::pair<std::uint64_t, std::uint64_t>;
  std::priority_queue<Op, std::vector<Op>, std::greater<Op>> inflight;
  for (std::uint32_t i = 0; i < qd; ++i) inflight.push({f.read(0, block(rng) * bytes, bytes), 0});
  std::uint64_t completed = 0;
  std::uint64_t window_start = 0;
  double latency_sum = 0;
  std::uint64_t now = 0;
  while (completed < warmup + measured) {
    const Op op = inflight.top();
    inflight.pop();
    now = op.first;
    ++completed;
    if (completed == warmup) window_start = now;
    if (completed > warmup) latency_sum += static_cast<double>(op.first - op.second);
    inflight.push({f.read(now, block(rng) * bytes, bytes), now});
  }
  const double window_s = static_cast<double>(now - window_start) * 1e-12;
  return {static_cast<double>(measured) / window_s, latency_sum / static_cast<double>(measured)};
}

void check_closed_loop(const FlashParams& p) {
  FlashArray reference(p);
  const double saturated = reference.saturated_read_iops(4096);
  const double unloaded = static_cast<double>(p.read_ps) + oracle_xfer_ps(p, 4096);
  double previous = 0;
  for (std::uint32_t qd = 1; qd <= 512; qd *= 2) {
    const std::uint64_t warmup = std::max<std::uint64_t>(2000, 10ull * qd);
    const std::uint64_t measured = std::max<std::uint64_t>(20000, 100ull * qd);
    const LoopResult r = closed_loop(p, qd, 4096, warmup, measured, 42 + qd);
    // Little's law: outstanding = throughput x latency.
    EXPECT_NEAR(r.iops * r.mean_latency_ps * 1e-12, qd, 0.02 * qd) << "qd " << qd;
    if (qd == 1) {
      EXPECT_NEAR(r.mean_latency_ps, unloaded, 0.001 * unloaded);
      EXPECT_NEAR(r.iops, 1e12 / r.mean_latency_ps, 0.02 * r.iops);
    }
    // Throughput never drops as the queue deepens, and never beats the
    // analytic ceiling.
    EXPECT_GE(r.iops, 0.99 * previous) << "qd " << qd;
    EXPECT_LE(r.iops, 1.001 * saturated) << "qd " << qd;
    previous = r.iops;
    if (qd == 512) {
      EXPECT_NEAR(r.iops, saturated, 0.05 * saturated);
    }
  }
}

TEST(FlashRead, ClosedLoopArrayBound) {
  // 8 single-plane dies at tR 50 µs: 160 K IOPS from the array, 781 K from
  // the channels.
  FlashParams p = small_params();
  p.planes_per_die = 1;
  FlashArray f(p);
  EXPECT_NEAR(f.saturated_read_iops(4096), 8.0 / 50e-6, 1.0);
  check_closed_loop(p);
}

TEST(FlashRead, ClosedLoopChannelBound) {
  // 32 independent planes at tR 20 µs sense 1.6 M pages/s; two 400 MB/s
  // channels carry 195 K 4 KiB reads/s.
  FlashParams p = small_params();
  p.channels = 2;
  p.dies_per_channel = 8;
  p.planes_per_die = 2;
  p.independent_plane_reads = true;
  p.read_ps = 20 * kUs;
  p.channel_mts = 400;
  FlashArray f(p);
  EXPECT_NEAR(f.saturated_read_iops(4096), 2 * 400e6 / 4096, 1.0);
  check_closed_loop(p);
}

TEST(FlashRead, AnalyticCeilings) {
  FlashParams p = small_params();  // 4 ch x 2 dies x 2 planes, synchronous planes
  FlashArray f(p);
  const double tr_s = 50e-6;
  // 4 KiB: one page, one die operation.
  EXPECT_NEAR(f.saturated_read_iops(4096), std::min(8 / tr_s, 4 * 800e6 / 4096), 1e-6);
  // 256 KiB = 16 pages over 8 dies: two pages per die in different planes,
  // merged into one multi-plane read each.
  EXPECT_NEAR(f.saturated_read_iops(262144), std::min(8 / (8 * tr_s), 4 * 800e6 / 262144), 1e-6);
  // Sequential: every plane senses a page per tR; four 800 MB/s channels.
  EXPECT_NEAR(f.saturated_read_bandwidth_gbps(), std::min(16 * 16384 / tr_s, 4 * 800e6) / 1e9,
              1e-12);
}

TEST(FlashRead, DeterministicAcrossRuns) {
  const FlashParams p = small_params();
  const LoopResult a = closed_loop(p, 64, 4096, 1000, 5000, 7);
  const LoopResult b = closed_loop(p, 64, 4096, 1000, 5000, 7);
  EXPECT_EQ(a.iops, b.iops);
  EXPECT_EQ(a.mean_latency_ps, b.mean_latency_ps);
}

}  // namespace
}  // namespace gpunvme::flash
