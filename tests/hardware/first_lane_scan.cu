// What a ballot followed by first_lane costs by the lane it finds: the lane
// selection of the turn loops and of the request routing (submission.h,
// strategy.h, completion.h: mine = p.ballot(...); lane = first_lane(mine)).
// first_lane (sim/core/algo/lanes.h) scans the mask from lane 0 up to the
// lowest set lane, one pass per lane below it, so its time grows with the
// lane it finds. One warp alone (one block of 32 threads), no queue, no
// target, no strategy. For each chosen lane L (a kernel argument, so the
// compiler cannot fold it) the loop makes, per iteration:
//
// - bare: x += L ^ i: subtracted from the others;
// - ballot: mine = p.ballot(all, ticket[lane] == L ^ (i & 32)); x += mine
//   (ticket a Lanes<uint32_t> in the warp's shared scratch, ticket[lane] =
//   lane; i & 32 keeps half the iterations at no match): the vote and the
//   predicate's shared-memory read;
// - ballot_first_lane: the same with x += mine == 0 ? 1 : first_lane(mine);
// - ballot_first_lane_ticket: x += mine == 0 ? 1 : ticket[first_lane(mine)]
//   (submission_costs' ballot_register with the matching lane fixed).
//
// Figures are ns per iteration with the bare loop's time taken off, the
// median of five launches after a warm-up; a matching iteration is every
// other one, so a figure per scan is twice the difference over that half.
//
//   first_lane_scan OUT.json
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>

#include "hw_bench.cuh"
#include "sim/core/algo/lanes.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;
constexpr unsigned kIterations = 2048;

enum Pattern : int { kBare, kBallot, kBallotFirstLane, kBallotFirstLaneTicket, kPatterns };
const char* const kNames[kPatterns] = {"bare", "ballot", "ballot_first_lane",
                                       "ballot_first_lane_ticket"};
const char* const kDocs[kPatterns] = {
    "x += L ^ i: subtracted from the others",
    "mine = p.ballot(all, ticket[lane] == (L | (i & 32))); x += mine: lane L matches in every "
    "other iteration (i & 32 clear), none in the others",
    "as ballot, then x += mine == 0 ? 1 : first_lane(mine)",
    "as ballot, then x += mine == 0 ? 1 : ticket[first_lane(mine)] (submission_costs' "
    "ballot_register with the matching lane fixed)"};

__device__ unsigned lane_id() { return threadIdx.x % 32u; }

__global__ void k_scan(int pattern, std::uint32_t chosen, unsigned long long* out_ns,
                       unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::Lanes<std::uint32_t> ticket;
  ticket[lane_id()] = lane_id();
  __syncwarp();
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < kIterations; ++i) {
    const std::uint32_t v = chosen | (i & 32u);
    switch (pattern) {
      case kBare: x += chosen ^ i; break;
      case kBallot:
        x += p.ballot(algo::kAllLanes, [&](int lane) { return ticket[lane] == v; });
        break;
      case kBallotFirstLane: {
        const algo::LaneMask mine =
            p.ballot(algo::kAllLanes, [&](int lane) { return ticket[lane] == v; });
        x += mine == 0 ? 1u : static_cast<unsigned>(algo::first_lane(mine));
        break;
      }
      case kBallotFirstLaneTicket: {
        const algo::LaneMask mine =
            p.ballot(algo::kAllLanes, [&](int lane) { return ticket[lane] == v; });
        x += mine == 0 ? 1u : ticket[algo::first_lane(mine)];
        break;
      }
      default: break;
    }
  }
  __syncwarp();
  const unsigned long long t1 = globaltimer();
  if (threadIdx.x == 0) {
    *out_ns = t1 - t0;
    *sink = x;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "first_lane_scan.json";
  const cudaDeviceProp prop = device_or_skip("first_lane_scan");
  unsigned long long* d_ns = nullptr;
  unsigned* d_sink = nullptr;
  CK(cudaMalloc(&d_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d_sink, sizeof(unsigned)));
  const std::size_t scratch = GPUNVME_WARP_SCRATCH_BYTES;
  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.first_lane_scan/1\", \"program\": "
               "\"tests/hardware/first_lane_scan.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d, "
               "\"iterations\": %u,\n \"docs\": {",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches, kIterations);
  for (int k = 0; k < kPatterns; ++k) {
    std::fprintf(f, "%s\"%s\": \"%s\"", k == 0 ? "" : ", ", kNames[k], kDocs[k]);
  }
  std::fprintf(f, "},\n \"rows\": [\n");
  bool first_row = true;
  for (std::uint32_t chosen : {0u, 1u, 2u, 4u, 8u, 12u, 16u, 20u, 24u, 28u, 31u}) {
    double ns[kPatterns];
    for (int k = 0; k < kPatterns; ++k) {
      ns[k] = median_launch_ns([&] { k_scan<<<1, 32, scratch>>>(k, chosen, d_ns, d_sink); }, d_ns,
                               kIterations, kLaunches);
    }
    std::fprintf(f, "%s  {\"lane\": %u, \"bare_ns_per_iteration\": %.3f, \"ns_per_iteration\": {",
                 first_row ? "" : ",\n", chosen, ns[kBare]);
    first_row = false;
    for (int k = 1; k < kPatterns; ++k) {
      std::fprintf(f, "%s\"%s\": %.3f", k == 1 ? "" : ", ", kNames[k], ns[k] - ns[kBare]);
      std::printf("lane %2u %-26s %8.3f ns per iteration\n", chosen, kNames[k], ns[k] - ns[kBare]);
    }
    std::fprintf(f, "}}");
  }
  std::fprintf(f, "\n ]\n}\n");
  std::fclose(f);
  CK(cudaFree(d_ns));
  CK(cudaFree(d_sink));
  return 0;
}
