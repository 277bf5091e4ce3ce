#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/core/protocol/queue_invariants.h"
#include "sim/frontend/hardware/gpu_target.h"
#include "sim/frontend/hardware/target_extensions.h"

namespace gpunvme::hw {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// GPUNVME_HW_VERBOSE=1: the target says what it does on stderr.
void say(const char* what) {
  static const bool verbose = std::getenv("GPUNVME_HW_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "gpu target: %s\n", what);
}

constexpr unsigned kFullMask = 0xFFFFFFFFu;
// The pattern of the host-thread target's namespace file (gpunvme_hw.cu's
// make_pattern_file): the image is byte-identical to that file.
constexpr std::uint64_t kPatternKey = 0xC0FFEE5A5A5A5A5Aull;
constexpr std::uint64_t kPatternChunk = 1 << 20;
constexpr std::uint32_t kMaxViolations = 100;

// A queue as the serving warp that owns it keeps it (no other warp writes it).
struct DeviceQueue {
  std::uint64_t sq = 0;  // ring bases, device addresses
  std::uint64_t cq = 0;
  std::uint32_t entries = 0;
  std::uint32_t exists = 0;
  std::uint32_t sq_head = 0, sq_tail = 0, cq_tail = 0, cq_head = 0;
  std::uint32_t phase = 1;
  std::uint32_t sq_phase = 1;  // phase tag of the SQ lap being fetched (indexed completion)
  QueueExtensions ext{};
};

// What one serving warp did in a run.
struct WarpRecord {
  unsigned long long fetched, completed, errors, sq_updates, batches;
  unsigned long long busy_ns, first_batch_ns, last_batch_end_ns;
  unsigned long long sm_plus_one;  // the SM it ran on, plus one (0: the warp did not run)
};

// A protocol error by the host side: kind, queue and the two values.
enum ViolationKind : std::uint32_t {
  kCqHeadPastTail = 1,
  kSqTailBeyondRing,
  kSqOverrun,
  kCidRepeated
};
struct Violation {
  std::uint32_t kind, qid, before, after;
};

struct ServeArgs {
  DeviceQueue* queues;
  std::uint32_t max_qid;
  std::uint32_t serving_warps;
  const unsigned char* bar0;
  // Controller-polled shadow doorbells: the words read instead of the
  // doorbell registers, and the EventIdx words kept one behind each SQ tail
  // (null: the registers).
  const unsigned char* shadow;
  unsigned char* event_idx;
  std::uint8_t dstrd;
  const unsigned char* ns;
  std::uint64_t capacity_lbas;
  std::uint32_t lba_bytes;
  std::uint32_t max_transfer;
  std::uint64_t dma_base, dma_bytes;
  const volatile std::uint32_t* stop;
  WarpRecord* warps;
  // Per command: SQE fetched, data copied, CQE posted (%globaltimer ns).
  unsigned long long* commands;
  unsigned long long* command_count;
  unsigned long long command_capacity;
  // Per batch: commands, ns from fetch to the last CQE, and the gap since the
  // warp's previous batch when it found no idle pass in between (else 0).
  unsigned long long* batches;
  unsigned long long* batch_count;
  unsigned long long batch_capacity;
  Violation* violations;
  unsigned* violation_count;
};

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__device__ __forceinline__ std::uint32_t load_volatile(const void* p) {
  return *reinterpret_cast<const volatile std::uint32_t*>(p);
}

__device__ void report(const ServeArgs& a, std::uint32_t kind, std::uint32_t qid,
                       std::uint32_t before, std::uint32_t after) {
  const unsigned i = atomicAdd(a.violation_count, 1u);
  if (i < kMaxViolations) a.violations[i] = {kind, qid, before, after};
}

// Copies `bytes` from `src` (the namespace image) to `dst` (a PRP segment)
// with every lane of the warp. A lane loads all its pieces of a 4 KiB step
// before it stores any, so that one memory latency covers the step rather
// than one per 512 B.
__device__ void warp_copy(unsigned char* dst, const unsigned char* src, std::uint32_t bytes,
                          unsigned lane) {
  constexpr std::uint32_t kPieces = 8;
  if (((reinterpret_cast<std::uint64_t>(dst) | reinterpret_cast<std::uint64_t>(src) | bytes) &
       15u) == 0) {
    for (std::uint32_t base = 0; base < bytes; base += 32u * 16u * kPieces) {
      uint4 v[kPieces];
#pragma unroll
      for (std::uint32_t k = 0; k < kPieces; ++k) {
        const std::uint32_t off = base + (k * 32u + lane) * 16u;
        if (off < bytes) v[k] = __ldg(reinterpret_cast<const uint4*>(src + off));
      }
#pragma unroll
      for (std::uint32_t k = 0; k < kPieces; ++k) {
        const std::uint32_t off = base + (k * 32u + lane) * 16u;
        if (off < bytes) __stcg(reinterpret_cast<uint4*>(dst + off), v[k]);
      }
    }
  } else {
    // PRP entries are dword aligned (NVMe 2.0, 4.1.1).
    for (std::uint32_t off = lane * 4u; off < bytes; off += 32u * 4u) {
      __stcg(reinterpret_cast<std::uint32_t*>(dst + off),
             __ldg(reinterpret_cast<const std::uint32_t*>(src + off)));
    }
  }
}

// The GPU segment of page `index` of a transfer (0: PRP1's part), or an error.
__device__ nvme::Status segment(const ServeArgs& a, const nvme::SubmissionEntry& e,
                                std::uint32_t bytes, std::uint32_t index, std::uint64_t* address,
                                std::uint32_t* length, std::uint32_t* offset) {
  const std::uint64_t page = nvme::kMinPageSize;
  const std::uint64_t to_page_end = page - e.prp1 % page;
  const std::uint32_t first = bytes < to_page_end ? bytes : static_cast<std::uint32_t>(to_page_end);
  if (index == 0) {
    *address = e.prp1;
    *length = first;
    *offset = 0;
  } else {
    const std::uint32_t done = first + (index - 1) * static_cast<std::uint32_t>(page);
    const std::uint32_t left = bytes - done;
    std::uint64_t entry = e.prp2;
    if (bytes - first > page) {
      // PRP2 points to a PRP list in GPU memory; MDTS keeps it within a page.
      const std::uint64_t at = e.prp2 + std::uint64_t{index - 1} * 8;
      if (at < a.dma_base || at + 8 > a.dma_base + a.dma_bytes)
        return nvme::Status::DataTransferError;
      entry = __ldcg(reinterpret_cast<const unsigned long long*>(at));
    }
    if (entry % page != 0) return nvme::Status::PrpOffsetInvalid;
    *address = entry;
    *length = left < page ? left : static_cast<std::uint32_t>(page);
    *offset = done;
  }
  if (*address < a.dma_base || *length > a.dma_bytes ||
      *address - a.dma_base > a.dma_bytes - *length) {
    return nvme::Status::DataTransferError;
  }
  return nvme::Status::Success;
}

// One pass over queue `qid`: takes up to 32 new SQEs (bounded by CQ room),
// serves them and posts their CQEs. Returns whether it served any.
__device__ bool serve_queue(const ServeArgs& a, std::uint16_t qid, DeviceQueue& q, WarpRecord& rec,
                            bool& idle_since_batch, unsigned lane) {
  const std::uint32_t n = q.entries;
  std::uint32_t cq_head = q.cq_head, sq_tail = q.sq_tail;
  const std::uint32_t sq_head = q.sq_head, cq_tail = q.cq_tail, phase = q.phase;
  const QueueExtensions& ext = q.ext;
  std::uint32_t head_value = 0, tail_value = 0;
  if (lane == 0) {
    if (a.shadow != nullptr) {
      const std::uint64_t base = reinterpret_cast<std::uint64_t>(a.shadow);
      head_value = load_volatile(reinterpret_cast<const void*>(
          shadow_word(base, nvme::DoorbellKind::CqHead, qid, a.dstrd)));
      tail_value = load_volatile(reinterpret_cast<const void*>(
          shadow_word(base, nvme::DoorbellKind::SqTail, qid, a.dstrd)));
    } else {
      head_value = load_volatile(a.bar0 + nvme::cq_head_doorbell_offset(qid, a.dstrd));
      tail_value = load_volatile(a.bar0 + nvme::sq_tail_doorbell_offset(qid, a.dstrd));
    }
  }
  head_value = __shfl_sync(kFullMask, head_value, 0);
  tail_value = __shfl_sync(kFullMask, tail_value, 0);
  bool moved = false;
  if (head_value != cq_head) {
    if (lane == 0 &&
        nvme::check_cq_head(cq_head, cq_tail, head_value, n).error != nvme::QueueError::None) {
      report(a, kCqHeadPastTail, qid, cq_head, head_value);
    }
    cq_head = head_value % n;
    moved = true;
  }
  if (tail_value != sq_tail) {
    if (lane == 0) {
      ++rec.sq_updates;
      const nvme::SqTailCheck c = nvme::check_sq_tail(sq_head, sq_tail, tail_value, n);
      if (c.error == nvme::QueueError::ValueBeyondRing) {
        report(a, kSqTailBeyondRing, qid, sq_tail, tail_value);
      } else if (c.error == nvme::QueueError::SqOverrun) {
        report(a, kSqOverrun, qid, sq_tail, tail_value);
      }
    }
    sq_tail = tail_value % n;
    moved = true;
    if (lane == 0 && a.event_idx != nullptr) {
      // A polling controller keeps EventIdx one behind the tail: a host that
      // reads it rings no MMIO doorbell.
      const std::uint64_t at = shadow_word(reinterpret_cast<std::uint64_t>(a.event_idx),
                                           nvme::DoorbellKind::SqTail, qid, a.dstrd);
      *reinterpret_cast<volatile std::uint32_t*>(at) = (sq_tail + n - 1) % n;
    }
  }
  const std::uint32_t waiting = (sq_tail + n - sq_head) % n;
  const std::uint32_t room = completion_room(ext, cq_tail, cq_head, n);
  std::uint32_t count = waiting < room ? waiting : room;
  if (count > 32) count = 32;
  if (count == 0) {
    if (moved && lane == 0) {
      q.cq_head = cq_head;
      q.sq_tail = sq_tail;
    }
    __syncwarp();
    return false;
  }
  // The submitters wrote the SQEs before the doorbell, with a fence between.
  __threadfence();
  const unsigned long long fetched_at = now_ns();
  const bool mine = lane < count;
  nvme::SubmissionEntry e{};
  nvme::Status status = nvme::Status::Success;
  std::uint32_t bytes = 0;
  std::uint64_t slba = 0;
  if (mine) {
    // From L2: the submitters' stores were made on other SMs.
    const uint4* at = reinterpret_cast<const uint4*>(q.sq + std::uint64_t{(sq_head + lane) % n} *
                                                                nvme::kSqEntrySize);
    uint4 words[4];
    for (int k = 0; k < 4; ++k) words[k] = __ldcg(at + k);
    memcpy(&e, words, sizeof e);
    const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
    const auto opcode = static_cast<nvme::NvmOpcode>(e.opcode());
    slba = rw.slba;
    bytes = rw.block_count * a.lba_bytes;
    if (opcode == nvme::NvmOpcode::Write) {
      status = nvme::Status::NamespaceWriteProtected;  // the image is read-only
    } else if (opcode != nvme::NvmOpcode::Read) {
      status = nvme::Status::InvalidCommandOpcode;
    } else if (e.nsid != 1) {
      status = nvme::Status::InvalidNamespaceOrFormat;
    } else if (rw.slba + rw.block_count > a.capacity_lbas) {
      status = nvme::Status::LbaOutOfRange;
    } else if (bytes > a.max_transfer) {
      status = nvme::Status::InvalidFieldInCommand;
    }
  }
  const std::uint32_t cid = command_cid(e, ext);
  // A CID twice in one batch: both are outstanding at once.
  const unsigned same = __match_any_sync(
      kFullMask, mine ? static_cast<unsigned long long>(cid) : (1ull << 32) + lane);
  if (mine && __popc(same) > 1 && static_cast<unsigned>(__ffs(same) - 1) != lane) {
    report(a, kCidRepeated, qid, cid, cid);
  }
  // The data, one command after another, every lane streaming its bytes.
  for (std::uint32_t j = 0; j < count; ++j) {
    const auto sj = static_cast<nvme::Status>(
        __shfl_sync(kFullMask, static_cast<unsigned>(status), static_cast<int>(j)));
    if (sj != nvme::Status::Success) continue;
    nvme::SubmissionEntry ej{};
    ej.prp1 = __shfl_sync(kFullMask, e.prp1, static_cast<int>(j));
    ej.prp2 = __shfl_sync(kFullMask, e.prp2, static_cast<int>(j));
    const std::uint32_t bj = __shfl_sync(kFullMask, bytes, static_cast<int>(j));
    const std::uint64_t lj = __shfl_sync(kFullMask, slba, static_cast<int>(j));
    const unsigned char* src = a.ns + lj * a.lba_bytes;
    nvme::Status result = nvme::Status::Success;
    std::uint32_t copied = 0;
    for (std::uint32_t page = 0; copied < bj && result == nvme::Status::Success; ++page) {
      std::uint64_t address = 0;
      std::uint32_t length = 0, offset = 0;
      result = segment(a, ej, bj, page, &address, &length, &offset);
      if (result != nvme::Status::Success) break;
      warp_copy(reinterpret_cast<unsigned char*>(address), src + offset, length, lane);
      copied = offset + length;
    }
    if (lane == j) status = result;
  }
  // Every lane's data is visible before any CQE is.
  __threadfence();
  const unsigned long long data_at = now_ns();
  const std::uint32_t new_sq_head = (sq_head + count) % n;
  // Where each completion goes (target_extensions.h): its SQ slot's CQ slot
  // (indexed), a bit of the bitmap (batch-notified success), or the ring's
  // tail, in the order of the lanes that go there.
  const std::uint32_t sq_slot = (sq_head + lane) % n;
  const bool sq_phase = (q.sq_phase != 0) != (sq_head + lane >= n);
  const CompletionPlace place = place_completion(ext, cid, sq_slot, sq_phase, status);
  const unsigned to_ring = __ballot_sync(kFullMask, mine && place.kind == CompletionPlace::Ring);
  const std::uint32_t ring_entries = __popc(to_ring);
  if (mine) {
    if (place.kind == CompletionPlace::Bitmap) {
      // The target is the bitmap's only writer (one serving warp per
      // queue); lanes whose CIDs share a word flip their bits in it.
      atomicXor(reinterpret_cast<unsigned*>(ext.bitmap) + place.word, place.bit);
    } else {
      const bool indexed = place.kind == CompletionPlace::Slot;
      const std::uint32_t position = cq_tail + __popc(to_ring & ((1u << lane) - 1u));
      const std::uint32_t slot = indexed ? place.slot : position % n;
      const bool phase_tag = indexed ? place.phase : (phase != 0) != (position >= n);
      const nvme::CompletionEntry c = make_completion(
          ext, cid, static_cast<std::uint16_t>(new_sq_head), qid, status, phase_tag);
      uint4 v;
      memcpy(&v, &c, sizeof v);
      // One 16 B store: a poller that sees the new phase tag sees the rest.
      __stcg(reinterpret_cast<uint4*>(q.cq + std::uint64_t{slot} * nvme::kCqEntrySize), v);
    }
  }
  __threadfence();
  const unsigned long long posted_at = now_ns();
  const unsigned failed = __popc(__ballot_sync(kFullMask, mine && status != nvme::Status::Success));
  unsigned long long first = 0;
  if (lane == 0) first = atomicAdd(a.command_count, static_cast<unsigned long long>(count));
  first = __shfl_sync(kFullMask, first, 0);
  if (mine && first + lane < a.command_capacity) {
    unsigned long long* r = a.commands + (first + lane) * 3;
    r[0] = fetched_at;
    r[1] = data_at;
    r[2] = posted_at;
  }
  if (lane == 0) {
    const unsigned long long b = atomicAdd(a.batch_count, 1ull);
    if (b < a.batch_capacity) {
      unsigned long long* r = a.batches + b * 3;
      r[0] = count;
      r[1] = posted_at - fetched_at;
      r[2] =
          !idle_since_batch && rec.last_batch_end_ns != 0 ? fetched_at - rec.last_batch_end_ns : 0;
    }
    rec.fetched += count;
    rec.completed += count;
    rec.errors += failed;
    ++rec.batches;
    rec.busy_ns += posted_at - fetched_at;
    if (rec.first_batch_ns == 0) rec.first_batch_ns = fetched_at;
    rec.last_batch_end_ns = posted_at;
    q.sq_head = new_sq_head;
    q.sq_tail = sq_tail;
    q.cq_head = cq_head;
    q.cq_tail = (cq_tail + ring_entries) % n;
    q.phase = cq_tail + ring_entries >= n ? phase ^ 1u : phase;
    q.sq_phase = sq_head + count >= n ? q.sq_phase ^ 1u : q.sq_phase;
  }
  idle_since_batch = false;
  __syncwarp();
  return true;
}

__global__ void serve_queues(ServeArgs a) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  if (warp >= a.serving_warps) return;
  WarpRecord rec{};
  std::uint32_t sm = 0;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  rec.sm_plus_one = sm + 1ull;
  bool idle_since_batch = true;
  for (;;) {
    std::uint32_t stop = 0;
    if (lane == 0) stop = *a.stop;
    if (__shfl_sync(kFullMask, stop, 0) != 0) break;
    bool work = false;
    for (std::uint32_t qid = warp + 1; qid <= a.max_qid; qid += a.serving_warps) {
      DeviceQueue& q = a.queues[qid];
      if (q.exists == 0) continue;
      work =
          serve_queue(a, static_cast<std::uint16_t>(qid), q, rec, idle_since_batch, lane) || work;
    }
    if (!work) idle_since_batch = true;
  }
  if (lane == 0) a.warps[warp] = rec;
}

// The namespace image: every 8 B word as make_pattern_file writes it.
__global__ void fill_pattern(std::uint64_t* words, std::uint64_t count) {
  for (std::uint64_t w = blockIdx.x * std::uint64_t{blockDim.x} + threadIdx.x; w < count;
       w += std::uint64_t{gridDim.x} * blockDim.x) {
    const std::uint64_t byte = w * 8;
    const std::uint64_t lba = byte / 512;
    const std::uint64_t off = byte % kPatternChunk;
    words[w] = off % 512 == 0 ? lba ^ kPatternKey : lba * 0x9E3779B97F4A7C15ull + off;
  }
}

template <typename T>
T* device_alloc(std::uint64_t count, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, count * sizeof(T)), what);
  check(cudaMemset(p, 0, count * sizeof(T)), what);
  return static_cast<T*>(p);
}

}  // namespace

struct GpuTarget::DeviceState {
  std::vector<DeviceQueue> queues;  // host copy, indexed by qid
  DeviceQueue* queues_device = nullptr;
  std::vector<void*> rings;  // SQ and CQ allocations of the live queues
  WarpRecord* warps = nullptr;
  unsigned long long* commands = nullptr;
  unsigned long long* batches = nullptr;
  unsigned long long* counts = nullptr;  // commands, batches
  Violation* violations = nullptr;
  unsigned* violation_count = nullptr;
  std::uint32_t* stop = nullptr;
  std::uint32_t* stop_value = nullptr;  // pinned host word copied into `stop`
  cudaStream_t stream = nullptr;
  cudaStream_t control = nullptr;
  std::uint32_t threads_per_block = 32;
  std::size_t shared_bytes = 0;
};

GpuTarget::GpuTarget(Options options) : options_(options), state_(new DeviceState) {
  if (options_.sms == 0 || options_.serving_warps == 0 || options_.max_queues == 0 ||
      options_.lba_bytes == 0 || options_.capacity_bytes < options_.lba_bytes) {
    throw std::invalid_argument("gpu target: sms, serving warps, queues and capacity must be > 0");
  }
  DeviceState& s = *state_;
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  if (options_.sms >= static_cast<std::uint32_t>(prop.multiProcessorCount)) {
    throw std::invalid_argument("gpu target: it may hold at most " +
                                std::to_string(prop.multiProcessorCount - 1) + " SMs");
  }
  const std::uint32_t warps_per_sm = (options_.serving_warps + options_.sms - 1) / options_.sms;
  s.threads_per_block = warps_per_sm * 32;
  if (s.threads_per_block > static_cast<std::uint32_t>(prop.maxThreadsPerBlock)) {
    throw std::invalid_argument("gpu target: too many serving warps per SM");
  }
  // A block takes all the shared memory a block may have, so that no other
  // block (the GPU code's blocks all use shared memory) lands on its SM.
  s.shared_bytes = prop.sharedMemPerBlockOptin;
  check(cudaFuncSetAttribute(serve_queues, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(s.shared_bytes)),
        "cudaFuncSetAttribute (gpu target)");

  capacity_lbas_ = options_.capacity_bytes / options_.lba_bytes;
  const std::uint64_t image_bytes = capacity_lbas_ * options_.lba_bytes;
  check(cudaMalloc(&namespace_, image_bytes), "cudaMalloc (namespace image)");
  fill_pattern<<<1024, 256>>>(reinterpret_cast<std::uint64_t*>(namespace_), image_bytes / 8);
  check(cudaGetLastError(), "fill_pattern");
  check(cudaDeviceSynchronize(), "fill_pattern");
  say("namespace image filled");

  cap_ = target_cap(options_.max_entries, options_.dstrd);
  const std::vector<unsigned char> image = bar0_image(cap_, options_.max_queues);
  bar0_bytes_ = image.size();
  unsigned char* bar0 = device_alloc<unsigned char>(bar0_bytes_, "cudaMalloc (BAR0 image)");
  check(cudaMemcpy(bar0, image.data(), bar0_bytes_, cudaMemcpyHostToDevice), "cudaMemcpy (BAR0)");
  bar0_ = reinterpret_cast<std::uint64_t>(bar0);

  s.queues.resize(options_.max_queues + 1);
  s.queues_device = device_alloc<DeviceQueue>(s.queues.size(), "cudaMalloc (queues)");
  s.warps = device_alloc<WarpRecord>(options_.serving_warps, "cudaMalloc (warp records)");
  s.commands = device_alloc<unsigned long long>(options_.command_log * 3, "cudaMalloc (log)");
  s.batches = device_alloc<unsigned long long>(options_.command_log * 3, "cudaMalloc (batches)");
  s.counts = device_alloc<unsigned long long>(2, "cudaMalloc (counts)");
  s.violations = device_alloc<Violation>(kMaxViolations, "cudaMalloc (violations)");
  s.violation_count = device_alloc<unsigned>(1, "cudaMalloc (violation count)");
  s.stop = device_alloc<std::uint32_t>(1, "cudaMalloc (stop)");
  check(cudaHostAlloc(&s.stop_value, sizeof(std::uint32_t), cudaHostAllocDefault),
        "cudaHostAlloc (stop)");
  check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaStreamCreateWithFlags(&s.control, cudaStreamNonBlocking), "cudaStreamCreate");
  say("ready");
}

GpuTarget::~GpuTarget() {
  stop();
  delete_io_queues();
  DeviceState& s = *state_;
  cudaStreamDestroy(s.stream);
  cudaStreamDestroy(s.control);
  cudaFreeHost(s.stop_value);
  for (void* p : {static_cast<void*>(s.queues_device), static_cast<void*>(s.warps),
                  static_cast<void*>(s.commands), static_cast<void*>(s.batches),
                  static_cast<void*>(s.counts), static_cast<void*>(s.violations),
                  static_cast<void*>(s.violation_count), static_cast<void*>(s.stop),
                  static_cast<void*>(namespace_), reinterpret_cast<void*>(bar0_)}) {
    cudaFree(p);
  }
  delete state_;
}

std::string GpuTarget::description() const {
  return "\"rings\": \"gpu\", \"doorbells\": \"gpu\", \"data\": \"gpu\", \"sms\": " +
         std::to_string(options_.sms) +
         ", \"serving_warps\": " + std::to_string(options_.serving_warps) +
         ", \"doc\": \"SQs, CQs and the BAR0 image in GPU memory; a persistent kernel on SMs of "
         "its own polls the doorbells, fetches up to 32 SQEs per pass, copies each read from a "
         "namespace image in HBM into the buffer its PRPs name and posts the CQEs after a "
         "device-scope fence\", \"extensions\": [\"indexed_completion\", "
         "\"batch_completion\", \"wide_cids\", \"shadow_doorbell_polling\"]";
}

ExtensionSupport GpuTarget::extensions() const {
  ExtensionSupport offered;
  offered.indexed_completion = true;
  offered.batch_completion = true;
  offered.wide_cids = true;
  offered.warp_doorbells = false;  // it samples doorbell words: see target_extensions.h
  offered.shadow_doorbell_polling = true;
  return offered;
}

void GpuTarget::use_shadow_doorbells(const ShadowBuffers& buffers) {
  if (running_) throw std::runtime_error("gpu target: Doorbell Buffer Config while stopped");
  shadow_ = buffers;
}

IoQueueRings GpuTarget::create_io_queue(std::uint16_t qid, std::uint32_t entries) {
  return create_extended_io_queue(qid, entries, QueueExtensions{});
}

IoQueueRings GpuTarget::create_extended_io_queue(std::uint16_t qid, std::uint32_t entries,
                                                 const QueueExtensions& extensions) {
  if (running_) throw std::runtime_error("gpu target: create a queue while stopped");
  if (nvme::check_queue_create(qid, options_.max_queues, false, entries, options_.max_entries) !=
      nvme::QueueError::None) {
    throw std::runtime_error("gpu target: Create I/O queue " + std::to_string(qid) + " of " +
                             std::to_string(entries) + " entries refused (Invalid Queue " +
                             "Identifier or Size)");
  }
  DeviceState& s = *state_;
  DeviceQueue& q = s.queues[qid];
  if (q.exists != 0)
    throw std::runtime_error("gpu target: queue " + std::to_string(qid) + " exists");
  auto* sq =
      device_alloc<unsigned char>(std::uint64_t{entries} * nvme::kSqEntrySize, "cudaMalloc (SQ)");
  auto* cq =
      device_alloc<unsigned char>(std::uint64_t{entries} * nvme::kCqEntrySize, "cudaMalloc (CQ)");
  s.rings.push_back(sq);
  s.rings.push_back(cq);
  q = DeviceQueue{};
  q.sq = reinterpret_cast<std::uint64_t>(sq);
  q.cq = reinterpret_cast<std::uint64_t>(cq);
  q.entries = entries;
  q.exists = 1;
  q.ext = extensions;
  const std::uint32_t zero = 0;
  check(cudaMemcpy(
            reinterpret_cast<void*>(bar0_ + nvme::sq_tail_doorbell_offset(qid, options_.dstrd)),
            &zero, 4, cudaMemcpyHostToDevice),
        "cudaMemcpy (doorbell)");
  check(cudaMemcpy(
            reinterpret_cast<void*>(bar0_ + nvme::cq_head_doorbell_offset(qid, options_.dstrd)),
            &zero, 4, cudaMemcpyHostToDevice),
        "cudaMemcpy (doorbell)");
  IoQueueRings r;
  r.qid = qid;
  r.entries = entries;
  r.sq_device = q.sq;
  r.cq_device = q.cq;
  r.sq_doorbell_device = bar0_ + nvme::sq_tail_doorbell_offset(qid, options_.dstrd);
  r.cq_doorbell_device = bar0_ + nvme::cq_head_doorbell_offset(qid, options_.dstrd);
  r.memory = RingMemory::gpu;
  return r;
}

void GpuTarget::delete_io_queues() {
  if (running_) throw std::runtime_error("gpu target: delete queues while stopped");
  DeviceState& s = *state_;
  for (void* p : s.rings) cudaFree(p);
  s.rings.clear();
  std::fill(s.queues.begin(), s.queues.end(), DeviceQueue{});
  shadow_ = ShadowBuffers{};
}

void GpuTarget::start() {
  if (running_) return;
  DeviceState& s = *state_;
  // The rings, doorbells and records set up on the legacy stream are in
  // place before the serving kernel, on a stream of its own, looks at them.
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  // Everything the kernel reads is written on its own stream, ahead of it:
  // the legacy stream's copies do not order work on a non-blocking stream.
  check(cudaMemcpyAsync(s.queues_device, s.queues.data(), s.queues.size() * sizeof(DeviceQueue),
                        cudaMemcpyHostToDevice, s.stream),
        "cudaMemcpyAsync (queues)");
  check(cudaMemsetAsync(s.stop, 0, sizeof(std::uint32_t), s.stream), "cudaMemsetAsync (stop)");
  ServeArgs a{};
  a.queues = s.queues_device;
  a.max_qid = options_.max_queues;
  a.serving_warps = options_.serving_warps;
  a.bar0 = reinterpret_cast<const unsigned char*>(bar0_);
  a.shadow = reinterpret_cast<const unsigned char*>(shadow_.shadow);
  a.event_idx = reinterpret_cast<unsigned char*>(shadow_.event_idx);
  a.dstrd = options_.dstrd;
  a.ns = namespace_;
  a.capacity_lbas = capacity_lbas_;
  a.lba_bytes = options_.lba_bytes;
  a.max_transfer = options_.max_transfer;
  a.dma_base = options_.dma_base;
  a.dma_bytes = options_.dma_bytes;
  a.stop = s.stop;
  a.warps = s.warps;
  a.commands = s.commands;
  a.command_count = s.counts;
  a.command_capacity = options_.command_log;
  a.batches = s.batches;
  a.batch_count = s.counts + 1;
  a.batch_capacity = options_.command_log;
  a.violations = s.violations;
  a.violation_count = s.violation_count;
  say("launching the serving kernel");
  serve_queues<<<options_.sms, s.threads_per_block, s.shared_bytes, s.stream>>>(a);
  check(cudaGetLastError(), "gpu target launch");
  running_ = true;
  say("serving");
}

void GpuTarget::stop() {
  if (!running_) return;
  DeviceState& s = *state_;
  say("stopping");
  *s.stop_value = 1;
  check(cudaMemcpyAsync(s.stop, s.stop_value, sizeof(std::uint32_t), cudaMemcpyHostToDevice,
                        s.control),
        "cudaMemcpyAsync (stop)");
  // The serving warps look at the flag on every pass; a kernel that does not
  // end within seconds is stuck, and a synchronisation would hang the run.
  const auto asked = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(s.stream);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) check(q, "gpu target");
    if (std::chrono::steady_clock::now() - asked > std::chrono::seconds(10)) {
      throw std::runtime_error("gpu target: the serving kernel did not stop within 10 s");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  running_ = false;
  say("stopped");
  // Keep the queues' positions for the next start.
  std::vector<DeviceQueue> live(s.queues.size());
  check(cudaMemcpyAsync(live.data(), s.queues_device, live.size() * sizeof(DeviceQueue),
                        cudaMemcpyDeviceToHost, s.control),
        "cudaMemcpyAsync (queues)");
  check(cudaStreamSynchronize(s.control), "cudaStreamSynchronize");
  s.queues = std::move(live);
}

void GpuTarget::reset_stats() {
  if (running_) throw std::runtime_error("gpu target: reset statistics while stopped");
  DeviceState& s = *state_;
  check(cudaMemsetAsync(s.warps, 0, std::size_t{options_.serving_warps} * sizeof(WarpRecord),
                        s.stream),
        "cudaMemsetAsync");
  check(cudaMemsetAsync(s.counts, 0, 2 * sizeof(unsigned long long), s.stream), "cudaMemsetAsync");
  check(cudaMemsetAsync(s.violation_count, 0, sizeof(unsigned), s.stream), "cudaMemsetAsync");
  check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
}

TargetStats GpuTarget::stats() const {
  const DeviceState& s = *state_;
  TargetStats out;
  // On the control stream: the GPU code's kernel may still hold the legacy
  // stream (a run that timed out).
  auto fetch = [&](void* to, const void* from, std::size_t bytes) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToHost, s.control), "cudaMemcpyAsync");
    check(cudaStreamSynchronize(s.control), "cudaStreamSynchronize");
  };
  unsigned long long counts[2] = {0, 0};
  fetch(counts, s.counts, sizeof counts);
  const std::uint64_t commands = std::min<std::uint64_t>(counts[0], options_.command_log);
  const std::uint64_t batches = std::min<std::uint64_t>(counts[1], options_.command_log);
  std::vector<unsigned long long> log(commands * 3), blog(batches * 3);
  fetch(log.data(), s.commands, log.size() * 8);
  fetch(blog.data(), s.batches, blog.size() * 8);
  std::vector<WarpRecord> warps(options_.serving_warps);
  fetch(warps.data(), s.warps, warps.size() * sizeof(WarpRecord));
  unsigned violation_count = 0;
  fetch(&violation_count, s.violation_count, sizeof violation_count);
  std::vector<Violation> violations(std::min(violation_count, kMaxViolations));
  fetch(violations.data(), s.violations, violations.size() * sizeof(Violation));

  std::vector<double> service, data, gaps;
  for (std::uint64_t i = 0; i < commands; ++i) {
    service.push_back(static_cast<double>(log[i * 3 + 2] - log[i * 3]));
    data.push_back(static_cast<double>(log[i * 3 + 1] - log[i * 3]));
  }
  std::vector<std::pair<double, double>> batch_times;
  for (std::uint64_t b = 0; b < batches; ++b) {
    batch_times.emplace_back(static_cast<double>(blog[b * 3]),
                             static_cast<double>(blog[b * 3 + 1]));
    if (blog[b * 3 + 2] != 0) gaps.push_back(static_cast<double>(blog[b * 3 + 2]));
  }
  unsigned long long origin = 0;
  for (const WarpRecord& w : warps) {
    if (w.first_batch_ns != 0 && (origin == 0 || w.first_batch_ns < origin))
      origin = w.first_batch_ns;
  }
  for (const WarpRecord& w : warps) {
    out.fetched += w.fetched;
    out.completed += w.completed;
    out.errors += w.errors;
    out.sq_doorbell_updates += w.sq_updates;
    TargetStats::Thread t;
    t.completed = w.completed;
    t.batches = w.batches;
    t.busy_ns = static_cast<double>(w.busy_ns);
    if (w.first_batch_ns != 0) {
      t.first_batch_ns = static_cast<double>(w.first_batch_ns - origin);
      t.last_batch_end_ns = static_cast<double>(w.last_batch_end_ns - origin);
    }
    if (w.sm_plus_one != 0) t.sm = static_cast<int>(w.sm_plus_one - 1);
    out.threads.push_back(t);
  }
  static const char* const kinds[] = {"", "CQ head moved past the tail",
                                      "SQ tail doorbell value beyond the ring", "SQ overrun",
                                      "CID repeated within one batch"};
  for (const Violation& v : violations) {
    out.violations.push_back("queue " + std::to_string(v.qid) + ": " +
                             (v.kind < 5 ? kinds[v.kind] : "unknown") + " (" +
                             std::to_string(v.before) + " -> " + std::to_string(v.after) + ")");
  }
  if (violation_count > kMaxViolations) {
    out.violations.push_back(std::to_string(violation_count - kMaxViolations) + " more violations");
  }
  out.service_ns = summarize(std::move(service));
  out.data_ns = summarize(std::move(data));
  fit_batch_line(batch_times, out);
  out.batch_gap_ns = summarize(std::move(gaps));
  return out;
}

}  // namespace gpunvme::hw
