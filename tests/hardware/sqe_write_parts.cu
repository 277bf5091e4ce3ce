// Where the GPU's SQE write (submission_costs' sqe_store: about 205 ns per
// warp on the H100 at 1, 8 and 32 lanes) spends its time: the same
// for_lanes of detail::write_sqe (sim/core/algo/io_common.h, as build_sqes
// makes it), then the same loop with one part of it at a time, so that the
// parts' figures add up to the whole or show which part holds it. One warp
// alone (one block of 32 threads), no queue shared with a target, no target,
// no strategy; the ring is 64 entries of GPU memory. Each figure is the
// loop's time per iteration (%globaltimer) with the bare loop's taken off:
//
// - write_sqe: p.for_lanes(first L lanes) { write_sqe(p, q, ticket % entries,
//   cid, request[lane]) }, request a Lanes<IoRequest> in the warp's shared
//   scratch (submission_costs' sqe_store);
// - write_sqe_masked_slot: the same with the slot ticket & 63 (no division
//   by the descriptor's entry count);
// - build_only: the lanes build the same entry (make_read from request[lane])
//   and fold its words into a register: no store;
// - store_prebuilt: p.store_bytes of an entry built before the loop (in
//   registers) into the same slot: CudaWarp's four 16 B volatile stores;
// - store_raw_volatile: the four st.volatile.global.v4 of store_bytes
//   written out, no platform call, in the same for_lanes;
// - store_raw_plain: four plain 16 B stores (st.global.v4) instead;
// - store_one_volatile: one st.volatile.global.v4 (the first 16 B);
// - for_lanes_empty: the for_lanes with an empty body.
//
//   sqe_write_parts OUT.json
//
// Each figure is the median over five launches after a warm-up.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "hw_bench.cuh"
#include "sim/core/algo/io_common.h"
#include "sim/core/platform/cuda_warp.cuh"

namespace {

namespace algo = gpunvme::algo;
namespace nvme = gpunvme::nvme;
using gpunvme::platform::CudaWarp;

constexpr int kLaunches = 5;
constexpr unsigned kIterations = 512;
constexpr std::uint32_t kRingEntries = 64;

enum Part : int {
  kBare,
  kWriteSqe,
  kWriteSqeMaskedSlot,
  kBuildOnly,
  kStorePrebuilt,
  kStoreRawVolatile,
  kStoreRawPlain,
  kStoreOneVolatile,
  kForLanesEmpty,
  kParts
};
const char* const kNames[kParts] = {"bare",
                                    "write_sqe",
                                    "write_sqe_masked_slot",
                                    "build_only",
                                    "store_prebuilt",
                                    "store_raw_volatile",
                                    "store_raw_plain",
                                    "store_one_volatile",
                                    "for_lanes_empty"};
const char* const kDocs[kParts] = {
    "x += i: subtracted from the others",
    "p.for_lanes(L lanes) { write_sqe(p, q, ticket % q.entries, cid, request[lane]) } "
    "(submission_costs' sqe_store)",
    "as write_sqe with the slot ticket & 63",
    "p.for_lanes(L lanes) { sqe = make_read(cid, q.nsid, request[lane]...); x ^= its words }: "
    "no store",
    "p.for_lanes(L lanes) { p.store_bytes(slot, &sqe, 64) }, sqe built before the loop",
    "p.for_lanes(L lanes) { four st.volatile.global.v4 of registers }",
    "p.for_lanes(L lanes) { four st.global.v4 of registers }",
    "p.for_lanes(L lanes) { one st.volatile.global.v4 }",
    "p.for_lanes(L lanes) {}"};

__device__ unsigned lane_id() { return threadIdx.x % 32u; }

__device__ void store_v4_volatile(std::uint64_t addr, unsigned a, unsigned b, unsigned c,
                                  unsigned d) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(a), "r"(b),
               "r"(c), "r"(d)
               : "memory");
}
__device__ void store_v4_plain(std::uint64_t addr, unsigned a, unsigned b, unsigned c,
                               unsigned d) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

__global__ void k_part(int part, std::uint32_t lanes, algo::QueuePair q,
                       unsigned long long* out_ns, unsigned* sink) {
  algo::init_warp_scratch();
  CudaWarp p;
  algo::Lanes<algo::IoRequest> request;
  {
    algo::IoRequest r;
    r.opcode = nvme::NvmOpcode::Read;
    r.slba = std::uint64_t{lane_id()} * 8u;
    r.nlb_zero_based = 7;
    r.buffer = 0x10000000ull + std::uint64_t{lane_id()} * 4096u;
    r.bytes = 4096;
    request[lane_id()] = r;
  }
  __syncwarp();
  const nvme::SubmissionEntry prebuilt =
      nvme::make_read(static_cast<std::uint16_t>(lane_id()), q.nsid, lane_id() * 8u, 7,
                      0x10000000ull + lane_id() * 4096u, 0);
  unsigned words[16];
  std::memcpy(words, &prebuilt, sizeof words);
  const algo::LaneMask mask = algo::lanes_below(lanes);
  unsigned x = 0;
  const unsigned long long t0 = globaltimer();
  for (unsigned i = 0; i < kIterations; ++i) {
    x += i;
    switch (part) {
      case kWriteSqe:
        p.for_lanes(mask, [&](int lane) {
          const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
          algo::detail::write_sqe(p, q, ticket % q.entries, (x + ticket) & 0xFFFFu, request[lane]);
        });
        break;
      case kWriteSqeMaskedSlot:
        p.for_lanes(mask, [&](int lane) {
          const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
          algo::detail::write_sqe(p, q, ticket & (kRingEntries - 1u), (x + ticket) & 0xFFFFu,
                                  request[lane]);
        });
        break;
      case kBuildOnly:
        p.for_lanes(mask, [&](int lane) {
          const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
          const algo::IoRequest& r = request[lane];
          const nvme::SubmissionEntry e =
              nvme::make_read(static_cast<std::uint16_t>((x + ticket) & 0xFFFFu), q.nsid, r.slba,
                              r.nlb_zero_based, r.buffer, 0);
          unsigned w[16];
          std::memcpy(w, &e, sizeof w);
          unsigned fold = 0;
          for (unsigned k = 0; k < 16; ++k) fold ^= w[k];
          x ^= fold & 1u;
        });
        break;
      case kStorePrebuilt:
        p.for_lanes(mask, [&](int lane) {
          const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
          p.store_bytes(q.sq_base + std::uint64_t{ticket % q.entries} * nvme::kSqEntrySize,
                        &prebuilt, sizeof prebuilt);
        });
        break;
      case kStoreRawVolatile:
      case kStoreRawPlain:
      case kStoreOneVolatile:
        p.for_lanes(mask, [&](int lane) {
          const std::uint32_t ticket = i * lanes + static_cast<std::uint32_t>(lane);
          const std::uint64_t at =
              q.sq_base + std::uint64_t{ticket & (kRingEntries - 1u)} * nvme::kSqEntrySize;
          if (part == kStoreOneVolatile) {
            store_v4_volatile(at, words[0] ^ i, words[1], words[2], words[3]);
            return;
          }
          for (unsigned k = 0; k < 4; ++k) {
            if (part == kStoreRawVolatile) {
              store_v4_volatile(at + 16u * k, words[4 * k] ^ i, words[4 * k + 1], words[4 * k + 2],
                                words[4 * k + 3]);
            } else {
              store_v4_plain(at + 16u * k, words[4 * k] ^ i, words[4 * k + 1], words[4 * k + 2],
                             words[4 * k + 3]);
            }
          }
        });
        break;
      case kForLanesEmpty: p.for_lanes(mask, [&](int) {}); break;
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
  const char* out_path = argc > 1 ? argv[1] : "sqe_write_parts.json";
  const cudaDeviceProp prop = device_or_skip("sqe_write_parts");
  unsigned long long* d_ns = nullptr;
  unsigned* d_sink = nullptr;
  void* ring = nullptr;
  CK(cudaMalloc(&d_ns, sizeof(unsigned long long)));
  CK(cudaMalloc(&d_sink, sizeof(unsigned)));
  CK(cudaMalloc(&ring, std::size_t{kRingEntries} * nvme::kSqEntrySize));
  CK(cudaMemset(ring, 0, std::size_t{kRingEntries} * nvme::kSqEntrySize));
  algo::QueuePair q;
  q.sq_base = reinterpret_cast<std::uint64_t>(ring);
  q.entries = kRingEntries;
  const std::size_t scratch = GPUNVME_WARP_SCRATCH_BYTES;

  FILE* f = std::fopen(out_path, "w");
  if (f == nullptr) {
    std::perror(out_path);
    return 1;
  }
  std::fprintf(f,
               "{\"schema\": \"gpunvme.sqe_write_parts/1\", \"program\": "
               "\"tests/hardware/sqe_write_parts.cu\",\n \"device\": {\"name\": \"%s\", "
               "\"sm_count\": %d, \"compute_capability\": \"%d.%d\"},\n \"launches\": %d, "
               "\"iterations\": %u, \"ring_entries\": %u,\n \"docs\": {",
               prop.name, prop.multiProcessorCount, prop.major, prop.minor, kLaunches, kIterations,
               kRingEntries);
  for (int k = 0; k < kParts; ++k) {
    std::fprintf(f, "%s\"%s\": \"%s\"", k == 0 ? "" : ", ", kNames[k], kDocs[k]);
  }
  std::fprintf(f, "},\n \"rows\": [\n");
  bool first_row = true;
  for (std::uint32_t lanes : {1u, 8u, 32u}) {
    double ns[kParts];
    for (int k = 0; k < kParts; ++k) {
      ns[k] = median_launch_ns([&] { k_part<<<1, 32, scratch>>>(k, lanes, q, d_ns, d_sink); }, d_ns,
                               kIterations, kLaunches);
    }
    std::fprintf(f, "%s  {\"lanes\": %u, \"bare_ns_per_iteration\": %.2f, \"ns_per_warp\": {",
                 first_row ? "" : ",\n", lanes, ns[kBare]);
    first_row = false;
    for (int k = 1; k < kParts; ++k) {
      std::fprintf(f, "%s\"%s\": %.2f", k == 1 ? "" : ", ", kNames[k], ns[k] - ns[kBare]);
      std::printf("lanes %2u %-24s %8.2f ns per warp\n", lanes, kNames[k], ns[k] - ns[kBare]);
    }
    std::fprintf(f, "}}");
  }
  std::fprintf(f, "\n ]\n}\n");
  std::fclose(f);
  CK(cudaFree(ring));
  CK(cudaFree(d_ns));
  CK(cudaFree(d_sink));
  return 0;
}
