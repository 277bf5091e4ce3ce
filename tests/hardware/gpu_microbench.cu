// GPU hardware microbenchmarks for calibrating the simulator's GPU model.
//
// Measures, on the GPU the program runs on: uncontended atomic latency, same-address atomic
// contention, fence costs, L1/L2/HBM load latency, zero-copy (pinned mapped host memory) latency
// and bandwidth, posted-store issue time to host memory, a GPU->CPU->GPU flag round trip, and
// pinned host<->device copy bandwidth and latency. Writes every figure, with its unit and method,
// as one JSON document, and prints a short table.
//
// Build:  nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o gpu_microbench gpu_microbench.cu
// Run:    ./gpu_microbench [out.json]          (default out: gpu_microbench.json)
//
// Timing: in-kernel regions are timed with %globaltimer (ns, a chip-wide clock) and clock64 (SM
// cycles) around long loops, so the timer resolution is a small fraction of the region; each
// figure is the median over repeated launches after warm-up launches. Host-side regions use CUDA
// events. Nothing here changes clocks, power limits or any other device setting.

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#define CK(call)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(e_),          \
                   cudaGetErrorString(e_), __FILE__, __LINE__, #call);                        \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

// A launch reports configuration errors at once and execution errors at the next sync; check both.
#define CK_LAUNCH() CK(cudaGetLastError())

static void fail(const char* msg) {
  std::fprintf(stderr, "FAILED: %s\n", msg);
  std::exit(3);
}

// ------------------------------------------------------------------------------------------------
// Device helpers. Inline PTX with "memory" clobbers keeps the compiler from moving or merging the
// accesses being timed; the cache operators pick the level a load is served from.

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ long long clk() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}
// Cache at all levels (L1 hit when resident).
__device__ __forceinline__ unsigned ld_ca(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.ca.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Cache in L2 only, bypassing L1.
__device__ __forceinline__ unsigned ld_cg(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Fetch again: cached system-memory lines are treated as stale, so each load crosses PCIe.
__device__ __forceinline__ unsigned ld_cv(const unsigned* p) {
  unsigned v;
  asm volatile("ld.global.cv.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_relaxed_sys(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned ld_relaxed_gpu(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_sys(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void st_volatile(unsigned* p, unsigned v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

struct Timing {
  unsigned long long ns;
  unsigned long long cycles;
  unsigned long long aux;  // a kernel-specific value (sink, end index, error flag)
};

// ------------------------------------------------------------------------------------------------
// Kernels

// Keeps every SM busy for dur_ns so that the clocks have ramped up before the first measurement.
__global__ void k_spin(unsigned long long dur_ns, unsigned* sink) {
  unsigned long long t0 = gtimer();
  unsigned x = threadIdx.x;
  while (gtimer() - t0 < dur_ns) x = x * 1664525u + 1013904223u;
  if (x == 0x12345678u) sink[0] = x;
}

// Ratio of clock64 to %globaltimer over dur_ns (the SM clock while one thread runs) and the
// smallest nonzero step of %globaltimer (its resolution).
__global__ void k_clock(unsigned long long dur_ns, Timing* out) {
  unsigned long long t0 = gtimer();
  long long c0 = clk();
  unsigned long long prev = t0, mind = ~0ull, t;
  do {
    t = gtimer();
    if (t != prev) {
      if (t - prev < mind) mind = t - prev;
      prev = t;
    }
  } while (t - t0 < dur_ns);
  long long c1 = clk();
  out->ns = t - t0;
  out->cycles = (unsigned long long)(c1 - c0);
  out->aux = mind;
}

// Dependent chain of atomics by one thread. The next address depends on the returned value through
// `zero` (a run-time 0), so each atomic waits for the previous one's result: the loop time over
// iters is the round-trip latency of one atomic. The used result also keeps it an ATOM (with
// return) rather than a fire-and-forget RED.
template <int OP>  // 0: atomicAdd, 1: atomicCAS
__global__ void k_atomic_chain(unsigned* p, unsigned zero, int iters, Timing* out) {
  unsigned v = 0;
  long long c0 = clk();
  unsigned long long t0 = gtimer();
  for (int i = 0; i < iters; ++i) {
    if (OP == 0)
      v = atomicAdd(p + (v & zero), 1u);
    else
      v = atomicCAS(p + (v & zero), v, v + 1u);
  }
  unsigned long long t1 = gtimer();
  long long c1 = clk();
  out->ns = t1 - t0;
  out->cycles = (unsigned long long)(c1 - c0);
  out->aux = v;
}

// Latency by SM and address: one block per SM, blocks take turns (turn counter) so that nothing
// contends. Block b, on its turn, runs on each of naddr lines a dependent chain of atomicAdd and
// then a dependent chain of ld.cg on a word of the same line (which holds its own index), and
// writes the mean ns per op. The spread shows how latency depends on where the SM and the line's
// L2 slice sit relative to each other.
__global__ void k_lat_map(unsigned* lines, int naddr, unsigned line_words, int iters, unsigned zero,
                          unsigned* turn, float* out_atom, float* out_load, unsigned* smid_out) {
  if (threadIdx.x != 0) return;
  const unsigned b = blockIdx.x;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  smid_out[b] = sm;
  while (ld_relaxed_gpu(turn) != b) {
  }
  for (int a = 0; a < naddr; ++a) {
    unsigned* p = lines + (size_t)a * line_words;
    unsigned v = atomicAdd(p, 1u);  // warm: line and translation present
    // Branching on the warm-up result makes the in-order warp wait for it before the timer read.
    if (v == 0xFFFFFFFFu) smid_out[b] = v;
    unsigned long long t0 = gtimer();
    for (int i = 0; i < iters; ++i) v = atomicAdd(p + (v & zero), 1u);
    unsigned long long t1 = gtimer();
    unsigned idx = (unsigned)a * line_words + 16u + (v & zero);
    idx = ld_cg(lines + idx);
    if (idx == 0xFFFFFFFFu) smid_out[b] = idx;
    unsigned long long t2 = gtimer();
    for (int i = 0; i < iters; ++i) idx = ld_cg(lines + idx);
    unsigned long long t3 = gtimer();
    out_atom[b * naddr + a] = (float)(t1 - t0) / iters;
    out_load[b * naddr + a] = (float)(t3 - t2) / iters + (float)(idx & zero);
  }
  __threadfence();
  atomicAdd(turn, 1u);
}

// Contention: one warp per block, `lanes` active lanes (1 or 32), each lane a dependent chain of
// iters atomicAdds. distinct == 0: every lane of every warp on one address. distinct == 1: each
// warp on its own 128 B line, lane l on word l of it. A start barrier (when all blocks are
// co-resident) lines the warps up so that they contend from the first operation.
__global__ void k_contend(unsigned* target, unsigned* arrive, unsigned nwarps, int iters,
                          int distinct, unsigned zero, int use_barrier,
                          unsigned long long* tstart, unsigned long long* tend, unsigned* sink) {
  const unsigned w = blockIdx.x;
  const unsigned lane = threadIdx.x;
  unsigned* p = distinct ? target + (size_t)w * 32 + lane : target;
  if (use_barrier) {
    if (lane == 0) {
      atomicAdd(arrive, 1u);
      while (ld_relaxed_gpu(arrive) < nwarps) {
      }
    }
    __syncthreads();
  }
  unsigned v = 0;
  unsigned long long t0 = gtimer();
  for (int i = 0; i < iters; ++i) v = atomicAdd(p + (v & zero), 1u);
  unsigned long long t1 = gtimer();
  if (lane == 0) {
    tstart[w] = t0;
    tend[w] = t1;
  }
  if (v == 0xFFFFFFFFu) sink[0] = v;
}

// Fence costs. F: 1 __threadfence_block, 2 __threadfence, 3 __threadfence_system, 0 none.
// S: 0 no store, 1 store to device memory, 2 store to pinned mapped host memory, before each fence.
// Stores rotate over 32 lines so that no two consecutive ones share a line.
template <int F, int S>
__global__ void k_fence(unsigned* gdst, unsigned* hdst, int iters, Timing* out) {
  unsigned* dst = (S == 1) ? gdst : hdst;
  long long c0 = clk();
  unsigned long long t0 = gtimer();
  for (int i = 0; i < iters; ++i) {
    if (S != 0) st_volatile(dst + ((i & 31) << 5), (unsigned)i);
    if (F == 1) __threadfence_block();
    if (F == 2) __threadfence();
    if (F == 3) __threadfence_system();
  }
  unsigned long long t1 = gtimer();
  long long c1 = clk();
  out->ns = t1 - t0;
  out->cycles = (unsigned long long)(c1 - c0);
  out->aux = 0;
}

// Independent stores by one thread, one per 128 B line, optionally each followed by
// __threadfence_system(): the time per store is its issue cost (posted) or its fenced cost.
template <bool FENCE>
__global__ void k_stores(unsigned* dst, int n, Timing* out) {
  long long c0 = clk();
  unsigned long long t0 = gtimer();
  for (int i = 0; i < n; ++i) {
    st_volatile(dst + (size_t)i * 32, (unsigned)i);
    if (FENCE) __threadfence_system();
  }
  unsigned long long t1 = gtimer();
  long long c1 = clk();
  out->ns = t1 - t0;
  out->cycles = (unsigned long long)(c1 - c0);
  out->aux = 0;
}

// Dependent pointer chase: each node holds the word index of the next node. M selects the load:
// 0 ld.ca (L1), 1 ld.cg (L2), 2 ld.cv (refetch; for host memory). warm steps run untimed first.
template <int M>
__global__ void k_chase(const unsigned* buf, unsigned start, int warm, int steps, Timing* out) {
  unsigned idx = start;
  for (int i = 0; i < warm; ++i) idx = (M == 0) ? ld_ca(buf + idx) : (M == 1) ? ld_cg(buf + idx) : ld_cv(buf + idx);
  long long c0 = clk();
  unsigned long long t0 = gtimer();
  for (int i = 0; i < steps; ++i) idx = (M == 0) ? ld_ca(buf + idx) : (M == 1) ? ld_cg(buf + idx) : ld_cv(buf + idx);
  unsigned long long t1 = gtimer();
  long long c1 = clk();
  out->ns = t1 - t0;
  out->cycles = (unsigned long long)(c1 - c0);
  out->aux = idx;  // where the next launch continues, so that it meets lines not yet touched
}

// Builds a pointer-chase cycle in device memory from a permutation: node i (at word i*stride)
// points at node perm[i].
__global__ void k_scatter(unsigned* buf, const unsigned* perm, unsigned n, unsigned stride) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    buf[i * stride] = perm[i] * stride;
}

// Overwrites a device buffer, evicting earlier lines from L2.
__global__ void k_fill(int4* buf, size_t n, int seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    buf[i] = make_int4((int)i ^ seed, (int)i + seed, seed, (int)i);
}

// Streaming read by a full grid, four independent 16 B loads in flight per thread.
__global__ void k_read_bw(const int4* __restrict__ src, size_t n, unsigned* sink) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  int acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) {
    int4 a = src[i];
    acc ^= a.x ^ a.y ^ a.z ^ a.w;
  }
  if (acc == 0x13572468) sink[0] = (unsigned)acc;
}

// Streaming write by a full grid.
__global__ void k_write_bw(int4* dst, size_t n) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = make_int4((int)i, 1, 2, 3);
}

// GPU -> CPU -> GPU round trip. Iteration i: store i to the host-side flag (optionally followed by
// __threadfence_system()), then spin on the reply flag until the host thread has written i back.
// Per-iteration clock64 deltas go to cyc[]; a spin longer than ~1 s sets out->aux and stops.
// polls[] counts the reads of the reply flag per iteration: each is a dependent read of host memory,
// so the round trip moves in steps of one host-read latency.
__global__ void k_rtt(unsigned* to_host, const unsigned* from_host, int iters, int fence,
                      unsigned long long* cyc, unsigned* polls, Timing* out) {
  long long c_all = clk();
  unsigned long long t_all = gtimer();
  out->aux = 0;
  for (int i = 1; i <= iters; ++i) {
    long long c0 = clk();
    st_relaxed_sys(to_host, (unsigned)i);
    if (fence) __threadfence_system();
    unsigned np = 1;
    while (ld_relaxed_sys(from_host) != (unsigned)i) {
      ++np;
      if (clk() - c0 > 2000000000LL) {
        out->aux = (unsigned long long)i;
        return;
      }
    }
    cyc[i - 1] = (unsigned long long)(clk() - c0);
    polls[i - 1] = np;
  }
  out->ns = gtimer() - t_all;
  out->cycles = (unsigned long long)(clk() - c_all);
}

// ------------------------------------------------------------------------------------------------
// Host helpers: statistics, JSON, permutations

struct Stat {
  double med = NAN, min = NAN, max = NAN;
  int n = 0;
};
static Stat stat_of(std::vector<double> v) {
  Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = (int)v.size();
  s.min = v.front();
  s.max = v.back();
  s.med = (v.size() % 2) ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  return s;
}

static std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if ((unsigned char)c < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}
static std::string jnum(double x) {
  if (!std::isfinite(x)) return "null";
  char b[64];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

// An ordered JSON object built from already-serialized values.
struct Obj {
  std::vector<std::pair<std::string, std::string>> kv;
  Obj& s(const std::string& k, const std::string& v) { kv.emplace_back(k, jstr(v)); return *this; }
  Obj& n(const std::string& k, double v) { kv.emplace_back(k, jnum(v)); return *this; }
  Obj& i(const std::string& k, long long v) { kv.emplace_back(k, std::to_string(v)); return *this; }
  Obj& b(const std::string& k, bool v) { kv.emplace_back(k, v ? "true" : "false"); return *this; }
  Obj& raw(const std::string& k, const std::string& v) { kv.emplace_back(k, v); return *this; }
  std::string str() const {
    std::string o = "{";
    for (size_t j = 0; j < kv.size(); ++j) o += (j ? ", " : "") + jstr(kv[j].first) + ": " + kv[j].second;
    return o + "}";
  }
};
static std::string jarr(const std::vector<std::string>& items) {
  std::string o = "[";
  for (size_t j = 0; j < items.size(); ++j) o += (j ? ",\n  " : "") + items[j];
  return o + "]";
}

// A figure: median value with its unit, the spread over repetitions, and how it was measured.
static Obj figure(const Stat& s, const std::string& unit, const std::string& method) {
  Obj o;
  o.n("value", s.med).s("unit", unit).n("min", s.min).n("max", s.max).i("reps", s.n).s("method", method);
  return o;
}

// splitmix64: a fixed-seed generator, so that every run chases the same permutation.
struct Rng {
  uint64_t x;
  explicit Rng(uint64_t seed) : x(seed) {}
  uint64_t next() {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return (uint32_t)(((next() >> 32) * (uint64_t)n) >> 32); }
};

// Sattolo's algorithm: a uniformly random permutation that is a single cycle, so a chase from any
// node visits every node before it repeats.
static std::vector<unsigned> single_cycle(unsigned n, uint64_t seed) {
  std::vector<unsigned> a(n);
  for (unsigned i = 0; i < n; ++i) a[i] = i;
  Rng r(seed);
  for (unsigned i = n - 1; i > 0; --i) std::swap(a[i], a[r.below(i)]);
  return a;
}

static std::string shell(const char* cmd) {
  std::string out;
  FILE* f = popen(cmd, "r");
  if (!f) return "";
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) out += buf;
  int rc = pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == ' ')) out.pop_back();
  if (rc != 0) out = "unavailable (exit " + std::to_string(rc) + "): " + out;
  return out;
}

static std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> f;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  for (auto& x : f) {
    size_t a = x.find_first_not_of(' '), b = x.find_last_not_of(' ');
    x = (a == std::string::npos) ? "" : x.substr(a, b - a + 1);
  }
  return f;
}

static const char* kSmiFields =
    "name,driver_version,pci.bus_id,pcie.link.gen.current,pcie.link.width.current,"
    "pcie.link.gen.max,pcie.link.width.max,clocks.sm,clocks.max.sm,clocks.mem";

static Obj smi_query() {
  std::string cmd = std::string("nvidia-smi --query-gpu=") + kSmiFields + " --format=csv,noheader 2>&1";
  std::string line = shell(cmd.c_str());
  Obj o;
  o.s("raw", line);
  std::vector<std::string> names = split_csv(kSmiFields), vals = split_csv(line.substr(0, line.find('\n')));
  if (vals.size() == names.size() && line.rfind("unavailable", 0) != 0)
    for (size_t j = 0; j < names.size(); ++j) o.s(names[j], vals[j]);
  return o;
}

// ------------------------------------------------------------------------------------------------

struct Ctx {
  cudaDeviceProp prop;
  int sms = 0;
  double ghz = NAN;         // SM cycles per ns while one thread runs (from k_clock)
  double gt_res_ns = NAN;   // %globaltimer step
  Timing* d_t = nullptr;    // one Timing slot for single-thread kernels
  unsigned* d_sink = nullptr;
};

static Timing fetch_timing(Ctx& c) {
  Timing h;
  CK(cudaMemcpy(&h, c.d_t, sizeof h, cudaMemcpyDeviceToHost));
  return h;
}

// Runs a single-thread timed kernel warm + reps times; returns per-op ns and cycles per rep.
template <typename Launch>
static void run_reps(Ctx& c, int warm, int reps, double ops, Launch launch, std::vector<double>& ns,
                     std::vector<double>& cyc) {
  for (int r = 0; r < warm + reps; ++r) {
    launch();
    CK_LAUNCH();
    CK(cudaDeviceSynchronize());
    Timing h = fetch_timing(c);
    if (r >= warm) {
      ns.push_back(h.ns / ops);
      cyc.push_back(h.cycles / ops);
    }
  }
}

// A latency figure in ns with its cycle count beside it.
static Obj lat_figure(const std::vector<double>& ns, const std::vector<double>& cyc, const std::string& method) {
  Stat sn = stat_of(ns), sc = stat_of(cyc);
  Obj o = figure(sn, "ns", method);
  o.n("cycles", sc.med).n("cycles_min", sc.min).n("cycles_max", sc.max);
  return o;
}

struct Row {  // the printed table
  std::string name, unit;
  double value;
};

int main(int argc, char** argv) {
  const char* out_path = argc > 1 ? argv[1] : "gpu_microbench.json";
  auto wall0 = std::chrono::steady_clock::now();
  Ctx c;
  std::vector<Row> table;
  Obj figs;

  // ---- 8. Device properties -------------------------------------------------------------------
  int dev = 0, ndev = 0;
  CK(cudaGetDeviceCount(&ndev));
  if (ndev < 1) fail("no CUDA device");
  CK(cudaSetDevice(dev));
  CK(cudaGetDeviceProperties(&c.prop, dev));
  c.sms = c.prop.multiProcessorCount;
  int clock_khz = 0, mem_khz = 0, bus_width = 0, host_atomics = 0, can_map = 0, cc_major = 0, cc_minor = 0;
  CK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  CK(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev));
  CK(cudaDeviceGetAttribute(&bus_width, cudaDevAttrGlobalMemoryBusWidth, dev));
  CK(cudaDeviceGetAttribute(&host_atomics, cudaDevAttrHostNativeAtomicSupported, dev));
  CK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, dev));
  CK(cudaDeviceGetAttribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev));
  CK(cudaDeviceGetAttribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (!can_map) fail("device cannot map host memory; zero-copy figures need it");
  int drv = 0, rt = 0;
  CK(cudaDriverGetVersion(&drv));
  CK(cudaRuntimeGetVersion(&rt));
  Obj smi_idle = smi_query();

  CK(cudaMalloc(&c.d_t, sizeof(Timing)));
  CK(cudaMalloc(&c.d_sink, 64));
  CK(cudaMemset(c.d_sink, 0, 64));

  // Clocks ramp up under load: keep every SM busy for 300 ms before measuring anything.
  k_spin<<<c.sms * 4, 256>>>(300000000ull, c.d_sink);
  CK_LAUNCH();
  CK(cudaDeviceSynchronize());

  // ---- timers ---------------------------------------------------------------------------------
  {
    std::vector<double> ratio, res;
    for (int r = 0; r < 5; ++r) {
      k_clock<<<1, 1>>>(20000000ull, c.d_t);
      CK_LAUNCH();
      CK(cudaDeviceSynchronize());
      Timing h = fetch_timing(c);
      ratio.push_back((double)h.cycles / (double)h.ns);
      res.push_back((double)h.aux);
    }
    c.ghz = stat_of(ratio).med;
    c.gt_res_ns = stat_of(res).min;
    figs.raw("sm_clock_effective", figure(stat_of(ratio), "GHz",
              "clock64 cycles / %globaltimer ns over 20 ms, one thread, after a 300 ms full-chip "
              "warm-up; the SM clock the single-thread figures ran at").str());
    figs.raw("globaltimer_resolution", figure(stat_of(res), "ns",
              "smallest nonzero step of %globaltimer seen while polling it for 20 ms").str());
    table.push_back({"SM clock (effective, 1 thread)", "GHz", c.ghz});
  }

  const unsigned zero = 0;

  // ---- 1. uncontended atomic latency ----------------------------------------------------------
  unsigned* d_atom = nullptr;
  CK(cudaMalloc(&d_atom, 4096));
  CK(cudaMemset(d_atom, 0, 4096));
  {
    const int iters = 4096;
    std::vector<double> ns, cyc;
    run_reps(c, 2, 11, iters, [&] { k_atomic_chain<0><<<1, 1>>>(d_atom, zero, iters, c.d_t); }, ns, cyc);
    Obj f = lat_figure(ns, cyc,
        "one thread, dependent chain of 4096 atomicAdd (with return) on one device-memory word; the "
        "next address depends on the returned value; the word is L2-resident after 2 warm-up "
        "launches; %globaltimer/clock64 around the loop / 4096; median of 11 launches; includes "
        "~2 integer ops per step for the address dependency");
    figs.raw("atomic_add_uncontended_latency", f.str());
    table.push_back({"atomicAdd uncontended latency", "ns", stat_of(ns).med});
    table.push_back({"atomicAdd uncontended latency", "cycles", stat_of(cyc).med});
    ns.clear();
    cyc.clear();
    run_reps(c, 2, 11, iters, [&] { k_atomic_chain<1><<<1, 1>>>(d_atom + 32, zero, iters, c.d_t); }, ns, cyc);
    figs.raw("atomic_cas_uncontended_latency", lat_figure(ns, cyc,
        "as atomic_add_uncontended_latency, with atomicCAS(p, v, v+1) (always succeeds)").str());
    table.push_back({"atomicCAS uncontended latency", "ns", stat_of(ns).med});
  }
  {
    const int naddr = 32, iters = 128;
    const unsigned line_words = 1056;  // 4224 B apart: lines spread over L2 slices
    const unsigned nb = (unsigned)c.sms;
    std::vector<unsigned> init((size_t)naddr * line_words, 0);
    for (int a = 0; a < naddr; ++a) init[(size_t)a * line_words + 16] = (unsigned)a * line_words + 16;
    unsigned *d_lines = nullptr, *d_turn = nullptr, *d_smid = nullptr;
    float *d_la = nullptr, *d_ll = nullptr;
    CK(cudaMalloc(&d_lines, init.size() * 4));
    CK(cudaMalloc(&d_turn, 256));
    CK(cudaMalloc(&d_smid, nb * 4));
    CK(cudaMalloc(&d_la, nb * naddr * 4));
    CK(cudaMalloc(&d_ll, nb * naddr * 4));
    CK(cudaMemcpy(d_lines, init.data(), init.size() * 4, cudaMemcpyHostToDevice));
    std::vector<float> la(nb * naddr), ll(nb * naddr);
    std::vector<unsigned> smid(nb);
    for (int r = 0; r < 2; ++r) {  // the first launch warms; the second is kept
      CK(cudaMemset(d_turn, 0, 256));
      k_lat_map<<<nb, 32>>>(d_lines, naddr, line_words, iters, zero, d_turn, d_la, d_ll, d_smid);
      CK_LAUNCH();
      CK(cudaDeviceSynchronize());
    }
    CK(cudaMemcpy(la.data(), d_la, la.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ll.data(), d_ll, ll.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(smid.data(), d_smid, nb * 4, cudaMemcpyDeviceToHost));
    std::vector<unsigned> sorted_sm(smid);
    std::sort(sorted_sm.begin(), sorted_sm.end());
    const long long distinct_sms = std::unique(sorted_sm.begin(), sorted_sm.end()) - sorted_sm.begin();
    auto dist = [&](const std::vector<float>& v, const char* desc) {
      std::vector<double> x(v.begin(), v.end());
      std::sort(x.begin(), x.end());
      auto pct = [&](double q) { return x[std::min(x.size() - 1, (size_t)(q * (x.size() - 1) + 0.5))]; };
      // 10 ns histogram bins: a two-humped shape means near and far L2 partitions.
      std::string hist = "{";
      int lo = (int)(x.front() / 10) * 10, hi = (int)(x.back() / 10) * 10;
      for (int bin = lo; bin <= hi; bin += 10) {
        long long cnt = std::count_if(x.begin(), x.end(), [&](double y) { return y >= bin && y < bin + 10; });
        if (cnt) hist += std::string(hist.size() > 1 ? ", " : "") + "\"" + std::to_string(bin) + "\": " + std::to_string(cnt);
      }
      hist += "}";
      Obj o;
      o.n("value", pct(0.5)).s("unit", "ns").n("min", x.front()).n("p10", pct(0.1)).n("p90", pct(0.9))
       .n("max", x.back()).n("mean", std::accumulate(x.begin(), x.end(), 0.0) / x.size())
       .i("pairs", (long long)x.size()).i("distinct_sms", distinct_sms).raw("histogram_10ns_bins", hist)
       .s("method", desc);
      return o;
    };
    figs.raw("atomic_add_latency_by_sm_and_address", dist(la,
        "one block per SM, taking turns (no contention); each runs a dependent chain of 128 atomicAdd "
        "on each of 32 lines 4224 B apart; value = median over (SM, line) pairs of ns per op "
        "(%globaltimer); second of two launches").str());
    figs.raw("l2_load_latency_by_sm_and_address", dist(ll,
        "as atomic_add_latency_by_sm_and_address with a dependent chain of 128 ld.global.cg of one "
        "word of each line (which holds its own index)").str());
    Stat sa = stat_of(std::vector<double>(la.begin(), la.end())), sl = stat_of(std::vector<double>(ll.begin(), ll.end()));
    table.push_back({"atomicAdd latency over SMs x lines: median", "ns", sa.med});
    table.push_back({"atomicAdd latency over SMs x lines: min", "ns", sa.min});
    table.push_back({"atomicAdd latency over SMs x lines: max", "ns", sa.max});
    table.push_back({"L2 ld.cg latency over SMs x lines: median", "ns", sl.med});
    table.push_back({"L2 ld.cg latency over SMs x lines: min", "ns", sl.min});
    table.push_back({"L2 ld.cg latency over SMs x lines: max", "ns", sl.max});
    CK(cudaFree(d_lines));
    CK(cudaFree(d_turn));
    CK(cudaFree(d_smid));
    CK(cudaFree(d_la));
    CK(cudaFree(d_ll));
  }

  // ---- 2. same-address contention -------------------------------------------------------------
  {
    const std::vector<unsigned> warps_list = {1, 2, 4, 8, 16, 32, 64, 132, 264, 528, 1056};
    const unsigned max_w = 1056;
    unsigned *d_target = nullptr, *d_arrive = nullptr;
    unsigned long long *d_ts = nullptr, *d_te = nullptr;
    CK(cudaMalloc(&d_target, (size_t)max_w * 32 * 4));
    CK(cudaMalloc(&d_arrive, 256));
    CK(cudaMalloc(&d_ts, max_w * 8));
    CK(cudaMalloc(&d_te, max_w * 8));
    std::vector<unsigned long long> ts(max_w), te(max_w);
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k_contend, 32, 0));
    std::vector<std::string> rows;
    // Same-address throughput per contender count, per lanes mode: the plateau gives the interval.
    std::vector<std::pair<unsigned, double>> thr1, thr32;
    for (int distinct = 0; distinct <= 1; ++distinct) {
      for (int lanes : {1, 32}) {
        const int iters = lanes == 1 ? 1000 : 256;
        for (unsigned nw : warps_list) {
          const int barrier = (unsigned long long)per_sm * c.sms >= nw ? 1 : 0;
          const double ops = (double)nw * lanes * iters;
          std::vector<double> thr, lat, span_v;
          bool count_ok = true;
          for (int r = 0; r < 2 + 5; ++r) {
            CK(cudaMemset(d_target, 0, (size_t)max_w * 32 * 4));
            CK(cudaMemset(d_arrive, 0, 256));
            k_contend<<<nw, lanes>>>(d_target, d_arrive, nw, iters, distinct, zero, barrier, d_ts, d_te, c.d_sink);
            CK_LAUNCH();
            CK(cudaDeviceSynchronize());
            CK(cudaMemcpy(ts.data(), d_ts, nw * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(te.data(), d_te, nw * 8, cudaMemcpyDeviceToHost));
            if (!distinct) {
              unsigned final_count = 0;
              CK(cudaMemcpy(&final_count, d_target, 4, cudaMemcpyDeviceToHost));
              if (final_count != (unsigned)ops) count_ok = false;
            }
            if (r < 2) continue;
            unsigned long long lo = ~0ull, hi = 0;
            double lat_sum = 0;
            for (unsigned w = 0; w < nw; ++w) {
              lo = std::min(lo, ts[w]);
              hi = std::max(hi, te[w]);
              lat_sum += (double)(te[w] - ts[w]) / iters;
            }
            double span = (double)(hi - lo);
            span_v.push_back(span);
            thr.push_back(ops / (span * 1e-9));
            lat.push_back(lat_sum / nw);
          }
          if (!count_ok) fail("same-address counter ended at the wrong value");
          Stat st = stat_of(thr), sl = stat_of(lat);
          double interval = 1e9 / st.med;
          rows.push_back(Obj()
                             .s("addresses", distinct ? "distinct_per_warp" : "same")
                             .i("lanes_per_warp", lanes)
                             .i("warps", nw)
                             .i("iters_per_lane", iters)
                             .b("start_barrier", barrier)
                             .n("throughput_ops_per_s", st.med)
                             .n("throughput_min", st.min)
                             .n("throughput_max", st.max)
                             .n("ns_per_op", interval)
                             .n("mean_op_latency_ns", sl.med)
                             .n("mean_op_latency_cycles", sl.med * c.ghz)
                             .n("span_ns", stat_of(span_v).med)
                             .str());
          if (!distinct) (lanes == 1 ? thr1 : thr32).emplace_back(nw, st.med);
          if (nw == 1 || nw == 32 || nw == 132 || nw == 1056) {
            char nm[96];
            std::snprintf(nm, sizeof nm, "%s, %d lane%s, %u warps", distinct ? "distinct" : "same addr",
                          lanes, lanes == 1 ? "" : "s", nw);
            table.push_back({std::string(nm) + ": throughput", "Gop/s", st.med * 1e-9});
            table.push_back({std::string(nm) + ": op latency", "ns", sl.med});
          }
        }
      }
    }
    figs.raw("atomic_contention", Obj()
        .s("method",
           "k_contend: `warps` blocks of one warp, `lanes_per_warp` active lanes, each lane a dependent "
           "chain of atomicAdd (with return); same: all on one 32-bit word; distinct_per_warp: each "
           "warp its own 128 B line, lane l on word l. All warps pass a start barrier, then time their "
           "loop with %globaltimer. throughput = total lane-ops / (last end - first start); "
           "mean_op_latency = mean over warps of (own loop time / iters), i.e. the latency of one "
           "warp-wide atomic instruction. Median of 5 launches after 2 warm-ups; the same-address "
           "counter is checked to equal the op count.")
        .raw("rows", jarr(rows)).str());
    // Service interval = 1 / the highest same-address throughput over all contender counts; the
    // plateau starts at the smallest count within 5% of it.
    auto plateau = [&](const std::vector<std::pair<unsigned, double>>& t, const char* unit, const char* desc) {
      double best = 0;
      for (auto& x : t) best = std::max(best, x.second);
      unsigned from = 0;
      std::vector<double> on;
      for (auto& x : t)
        if (x.second >= 0.95 * best) {
          if (!from) from = x.first;
          on.push_back(1e9 / x.second);
        }
      Obj o;
      o.n("value", 1e9 / best).s("unit", unit).n("throughput_ops_per_s", best)
       .i("saturated_from_warps", from).n("plateau_min", stat_of(on).min).n("plateau_max", stat_of(on).max)
       .n("cycles_at_sm_clock", 1e9 / best * c.ghz).s("method", desc);
      return o;
    };
    Obj f1 = plateau(thr1, "ns/op",
        "L2 same-address service interval: 1 / the highest throughput of same-address atomicAdd "
        "(with return), one lane per warp, over 1..1056 contending warps; plateau_min/max: range of "
        "1/throughput over the counts within 5% of the best");
    Obj f32 = plateau(thr32, "ns/lane-op",
        "as l2_same_address_atomic_interval, all 32 lanes of each warp on the same address "
        "(per lane-op)");
    figs.raw("l2_same_address_atomic_interval", f1.str());
    figs.raw("l2_same_address_atomic_interval_32_lanes", f32.str());
    table.push_back({"L2 same-address interval (1 lane/warp)", "ns/op", 1e9 / [&] { double b = 0; for (auto& x : thr1) b = std::max(b, x.second); return b; }()});
    table.push_back({"L2 same-address interval (32 lanes/warp)", "ns/lane-op", 1e9 / [&] { double b = 0; for (auto& x : thr32) b = std::max(b, x.second); return b; }()});
    CK(cudaFree(d_target));
    CK(cudaFree(d_arrive));
    CK(cudaFree(d_ts));
    CK(cudaFree(d_te));
  }

  // Pinned mapped host memory used by the fence, store, round-trip and zero-copy figures.
  unsigned *h_small = nullptr, *hd_small = nullptr;  // 1 MiB scratch
  CK(cudaHostAlloc((void**)&h_small, 1 << 20, cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer((void**)&hd_small, h_small, 0));
  std::memset(h_small, 0x5a, 1 << 20);
  unsigned* d_scratch = nullptr;  // 1 MiB device scratch
  CK(cudaMalloc(&d_scratch, 1 << 20));
  CK(cudaMemset(d_scratch, 0, 1 << 20));

  // ---- 3. fences ------------------------------------------------------------------------------
  {
    const int iters = 2000;
    struct V {
      const char* name;
      void (*launch)(unsigned*, unsigned*, int, Timing*);
      const char* desc;
    };
    const V vs[] = {
        {"fence_block_idle", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<1, 0><<<1, 1>>>(g, h, n, t); },
         "__threadfence_block() with nothing outstanding"},
        {"fence_gpu_idle", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<2, 0><<<1, 1>>>(g, h, n, t); },
         "__threadfence() with nothing outstanding"},
        {"fence_system_idle", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<3, 0><<<1, 1>>>(g, h, n, t); },
         "__threadfence_system() with nothing outstanding"},
        {"store_global_only", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<0, 1><<<1, 1>>>(g, h, n, t); },
         "store to device memory, no fence (baseline)"},
        {"fence_block_after_global_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<1, 1><<<1, 1>>>(g, h, n, t); },
         "store to device memory then __threadfence_block()"},
        {"fence_gpu_after_global_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<2, 1><<<1, 1>>>(g, h, n, t); },
         "store to device memory then __threadfence()"},
        {"fence_system_after_global_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<3, 1><<<1, 1>>>(g, h, n, t); },
         "store to device memory then __threadfence_system()"},
        {"store_host_only", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<0, 2><<<1, 1>>>(g, h, n, t); },
         "store to pinned mapped host memory, no fence (baseline)"},
        {"fence_block_after_host_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<1, 2><<<1, 1>>>(g, h, n, t); },
         "store to pinned mapped host memory then __threadfence_block()"},
        {"fence_gpu_after_host_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<2, 2><<<1, 1>>>(g, h, n, t); },
         "store to pinned mapped host memory then __threadfence()"},
        {"fence_system_after_host_store", [](unsigned* g, unsigned* h, int n, Timing* t) { k_fence<3, 2><<<1, 1>>>(g, h, n, t); },
         "store to pinned mapped host memory then __threadfence_system()"},
    };
    Obj fo;
    fo.s("method",
         "one thread, loop of 2000 iterations of {optional volatile 32-bit store (rotating over 32 lines), "
         "fence}; value = loop time / 2000 per iteration (store + fence); median of 9 launches after 2 "
         "warm-ups. Fence cost after a store = row minus its store_*_only baseline.");
    for (const V& v : vs) {
      std::vector<double> ns, cyc;
      run_reps(c, 2, 9, iters, [&] { v.launch(d_scratch, hd_small, iters, c.d_t); }, ns, cyc);
      fo.raw(v.name, lat_figure(ns, cyc, v.desc).str());
      table.push_back({v.name, "ns", stat_of(ns).med});
    }
    figs.raw("fences", fo.str());
  }

  // ---- 4. load latency: L1, L2, HBM -----------------------------------------------------------
  {
    const unsigned stride = 32;  // one node per 128 B line
    Obj lo;
    lo.s("method",
         "one thread, dependent pointer chase over a single random cycle (Sattolo) with one node per "
         "128 B line; value = loop time / steps; median of 7 launches after a warm-up. Each launch "
         "continues from where the last stopped.");
    auto small_chase = [&](size_t bytes, int mode, int steps, const char* name, const char* desc, bool to_table) {
      unsigned n = (unsigned)(bytes / 128);
      std::vector<unsigned> perm = single_cycle(n, 0xC0FFEE + bytes);
      std::vector<unsigned> words((size_t)n * stride, 0xA5A5A5A5u);
      for (unsigned i = 0; i < n; ++i) words[(size_t)i * stride] = perm[i] * stride;
      unsigned* d = nullptr;
      CK(cudaMalloc(&d, bytes));
      CK(cudaMemcpy(d, words.data(), bytes, cudaMemcpyHostToDevice));
      unsigned start = 0;
      std::vector<double> ns, cyc;
      for (int r = 0; r < 1 + 7; ++r) {
        // L1 does not survive a launch: re-warm the whole cycle in every launch. L2 does: warm once.
        int warm = (mode == 0 || r == 0) ? (int)n : 0;
        if (mode == 0) k_chase<0><<<1, 1>>>(d, start, warm, steps, c.d_t);
        else k_chase<1><<<1, 1>>>(d, start, warm, steps, c.d_t);
        CK_LAUNCH();
        CK(cudaDeviceSynchronize());
        Timing h = fetch_timing(c);
        start = (unsigned)h.aux;
        if (r >= 1) {
          ns.push_back((double)h.ns / steps);
          cyc.push_back((double)h.cycles / steps);
        }
      }
      CK(cudaFree(d));
      lo.raw(name, lat_figure(ns, cyc, desc).str());
      if (to_table) table.push_back({name, "ns", stat_of(ns).med});
    };
    small_chase(16 << 10, 0, 32768, "l1_hit_load_latency", "ld.global.ca chase in 16 KiB (128 nodes), L1-resident", true);
    small_chase(1 << 20, 1, 32768, "l2_hit_load_latency_1MiB", "ld.global.cg (L1 bypass) chase in 1 MiB, L2-resident", false);
    small_chase(4 << 20, 1, 32768, "l2_hit_load_latency", "ld.global.cg (L1 bypass) chase in 4 MiB, L2-resident after one full warm pass", true);
    small_chase(16 << 20, 1, 32768, "l2_hit_load_latency_16MiB", "ld.global.cg (L1 bypass) chase in 16 MiB, L2-resident", false);

    // HBM: 1 GiB, far beyond L2. The cycle is built on the GPU from a host permutation, then a
    // 256 MiB overwrite evicts the lines that building left in L2.
    const size_t bytes = 1ull << 30;
    const unsigned n = (unsigned)(bytes / 128);
    std::vector<unsigned> perm = single_cycle(n, 0xBADC0DE);
    unsigned *d_perm = nullptr, *d_big = nullptr;
    CK(cudaMalloc(&d_perm, (size_t)n * 4));
    CK(cudaMalloc(&d_big, bytes));
    CK(cudaMemcpy(d_perm, perm.data(), (size_t)n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_big, 0xA5, bytes));
    k_scatter<<<c.sms * 8, 256>>>(d_big, d_perm, n, stride);
    CK_LAUNCH();
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d_perm));
    int4* d_flush = nullptr;
    const size_t flush_bytes = 256ull << 20;
    CK(cudaMalloc(&d_flush, flush_bytes));
    k_fill<<<c.sms * 8, 256>>>(d_flush, flush_bytes / 16, 7);
    CK_LAUNCH();
    CK(cudaDeviceSynchronize());
    CK(cudaFree(d_flush));
    const int steps = 32768;
    unsigned start = 0;
    std::vector<double> ns, cyc;
    for (int r = 0; r < 1 + 7; ++r) {
      k_chase<1><<<1, 1>>>(d_big, start, 0, r == 0 ? 4096 : steps, c.d_t);
      CK_LAUNCH();
      CK(cudaDeviceSynchronize());
      Timing h = fetch_timing(c);
      start = (unsigned)h.aux;
      if (r >= 1) {
        ns.push_back((double)h.ns / steps);
        cyc.push_back((double)h.cycles / steps);
      }
    }
    CK(cudaFree(d_big));
    lo.raw("hbm_load_latency", lat_figure(ns, cyc,
        "ld.global.cg chase over 1 GiB (8 Mi nodes, random single cycle), L2 flushed by a 256 MiB "
        "overwrite first; each launch visits 32768 nodes not visited before; includes GPU TLB "
        "misses as random 1 GiB access incurs them").str());
    table.push_back({"hbm_load_latency (1 GiB random)", "ns", stat_of(ns).med});
    figs.raw("load_latency", lo.str());
  }

  // ---- 5. zero-copy ---------------------------------------------------------------------------
  {
    Obj zo;
    // Dependent reads of host memory, in a 64 KiB and a 64 MiB region.
    const unsigned stride = 32;
    auto host_chase = [&](size_t bytes, const char* name, const char* desc) {
      unsigned n = (unsigned)(bytes / 128);
      unsigned *h = nullptr, *hd = nullptr;
      CK(cudaHostAlloc((void**)&h, bytes, cudaHostAllocMapped));
      CK(cudaHostGetDevicePointer((void**)&hd, h, 0));
      std::vector<unsigned> perm = single_cycle(n, 0xFEED + bytes);
      for (size_t w = 0; w < bytes / 4; ++w) h[w] = 0xA5A5A5A5u;
      for (unsigned i = 0; i < n; ++i) h[(size_t)i * stride] = perm[i] * stride;
      const int steps = 2000;
      unsigned start = 0;
      std::vector<double> ns, cyc;
      for (int r = 0; r < 1 + 7; ++r) {
        k_chase<2><<<1, 1>>>(hd, start, 100, steps, c.d_t);
        CK_LAUNCH();
        CK(cudaDeviceSynchronize());
        Timing t = fetch_timing(c);
        start = (unsigned)t.aux;
        if (r >= 1) {
          ns.push_back((double)t.ns / steps);
          cyc.push_back((double)t.cycles / steps);
        }
      }
      CK(cudaFreeHost(h));
      zo.raw(name, lat_figure(ns, cyc, desc).str());
      table.push_back({name, "ns", stat_of(ns).med});
    };
    host_chase(64 << 10, "host_read_latency_64KiB",
               "one thread, ld.global.cv dependent chase in 64 KiB of pinned mapped host memory (512 "
               "nodes, 128 B apart, random cycle): each load crosses PCIe; 2000 steps after 100 warm, "
               "median of 7 launches");
    host_chase(64 << 20, "host_read_latency_64MiB",
               "as host_read_latency_64KiB over 64 MiB (random lines across many pages; includes "
               "address-translation misses as they occur)");

    // Streaming bandwidth over 256 MiB of pinned host memory by a full grid.
    const size_t bytes = 256ull << 20;
    int4 *h_big = nullptr, *hd_big = nullptr;
    CK(cudaHostAlloc((void**)&h_big, bytes, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void**)&hd_big, h_big, 0));
    std::memset(h_big, 0x3c, bytes);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int blocks = c.sms * 4, threads = 512;
    for (int wr = 0; wr <= 1; ++wr) {
      std::vector<double> gbs;
      for (int r = 0; r < 2 + 7; ++r) {
        CK(cudaEventRecord(e0));
        if (wr) k_write_bw<<<blocks, threads>>>(hd_big, bytes / 16);
        else k_read_bw<<<blocks, threads>>>(hd_big, bytes / 16, c.d_sink);
        CK_LAUNCH();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (r >= 2) gbs.push_back(bytes / (ms * 1e-3) / 1e9);
      }
      const char* name = wr ? "host_write_bandwidth" : "host_read_bandwidth";
      zo.raw(name, figure(stat_of(gbs), "GB/s",
          wr ? "grid of 4 blocks/SM x 512 threads storing 16 B per thread-iteration over 256 MiB of "
               "pinned mapped host memory; CUDA events around the kernel; 1 GB = 1e9 B; median of 7"
             : "grid of 4 blocks/SM x 512 threads, four independent 16 B loads in flight per thread, "
               "reading 256 MiB of pinned mapped host memory once; CUDA events around the kernel; "
               "1 GB = 1e9 B; median of 7").str());
      table.push_back({name, "GB/s", stat_of(gbs).med});
    }
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaFreeHost(h_big));

    // Store issue cost, one thread, one store per 128 B line: posted, and fenced.
    auto stores = [&](bool host, bool fence, int n, bool burst, const char* name, const char* desc) {
      unsigned* dst = host ? hd_small : d_scratch;  // both 1 MiB: up to 8192 lines
      std::vector<double> ns, cyc;
      run_reps(c, 2, 9, n, [&] {
        if (fence) k_stores<true><<<1, 1>>>(dst, n, c.d_t);
        else k_stores<false><<<1, 1>>>(dst, n, c.d_t);
      }, ns, cyc);
      Obj f;
      if (burst) {
        // Too short for %globaltimer: report cycles, converted to ns at the measured SM clock.
        std::vector<double> conv;
        for (double x : cyc) conv.push_back(x / c.ghz);
        f = figure(stat_of(conv), "ns", std::string(desc) + "; ns = clock64 cycles / effective SM clock");
        f.n("cycles", stat_of(cyc).med);
        table.push_back({name, "ns", stat_of(conv).med});
      } else {
        f = lat_figure(ns, cyc, desc);
        table.push_back({name, "ns", stat_of(ns).med});
      }
      zo.raw(name, f.str());
    };
    stores(true, false, 16, true, "host_store_issue_burst16",
           "one thread, 16 independent volatile 32-bit stores to pinned mapped host memory, one per "
           "line, no fence; time per store (issue cost of a posted store)");
    stores(true, false, 4096, false, "host_store_issue_sustained",
           "one thread, 4096 independent volatile stores to host memory, one per line, no fence; time "
           "per store over the loop (sustained rate; back-pressure shows here)");
    stores(true, true, 1024, false, "host_store_with_fence_system",
           "one thread, 1024 x {volatile store to host memory, __threadfence_system()}; time per pair");
    stores(false, false, 4096, false, "global_store_issue_sustained",
           "one thread, 4096 independent volatile stores to device memory, one per line, no fence "
           "(comparison for host_store_issue_sustained)");
    figs.raw("zero_copy", zo.str());
  }

  // ---- 6. GPU -> CPU -> GPU round trip --------------------------------------------------------
  {
    Obj ro;
    const int iters = 2000, skip = 50;
    unsigned long long* d_cyc = nullptr;
    unsigned* d_polls = nullptr;
    CK(cudaMalloc(&d_cyc, iters * 8));
    CK(cudaMalloc(&d_polls, iters * 4));
    std::vector<unsigned long long> cyc(iters);
    std::vector<unsigned> polls(iters);
    volatile unsigned* to_host = h_small;          // GPU -> host flag
    volatile unsigned* from_host = h_small + 64;   // host -> GPU flag, another line
    for (int fence = 0; fence <= 1; ++fence) {
      std::vector<double> med_ns_reps, med_cyc_reps, all_ns, all_polls;
      bool ok = true;
      for (int r = 0; r < 1 + 5 && ok; ++r) {
        *to_host = 0;
        *from_host = 0;
        k_rtt<<<1, 1>>>(hd_small, hd_small + 64, iters, fence, d_cyc, d_polls, c.d_t);
        CK_LAUNCH();
        // Make sure the launch has been handed to the GPU before this thread stops calling CUDA;
        // the query's "not ready" answer is expected.
        (void)cudaStreamQuery(0);
        // This thread is the CPU side: spin on the GPU's flag, answer with the same value.
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        for (unsigned i = 1; i <= (unsigned)iters && ok; ++i) {
          unsigned spins = 0;
          while (*to_host != i) {
            if ((++spins & 0xFFFFu) == 0 && std::chrono::steady_clock::now() > deadline) {
              ok = false;
              break;
            }
          }
          *from_host = i;
        }
        CK(cudaDeviceSynchronize());
        Timing h = fetch_timing(c);
        if (!ok || h.aux != 0) {
          ok = false;
          break;
        }
        if (r == 0) continue;
        CK(cudaMemcpy(cyc.data(), d_cyc, iters * 8, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(polls.data(), d_polls, iters * 4, cudaMemcpyDeviceToHost));
        for (int i = skip; i < iters; ++i) all_polls.push_back(polls[i]);
        double ghz = (double)h.cycles / (double)h.ns;  // this kernel's own clock ratio
        std::vector<double> c_v, n_v;
        for (int i = skip; i < iters; ++i) {
          c_v.push_back((double)cyc[i]);
          n_v.push_back(cyc[i] / ghz);
          all_ns.push_back(cyc[i] / ghz);
        }
        med_cyc_reps.push_back(stat_of(c_v).med);
        med_ns_reps.push_back(stat_of(n_v).med);
      }
      const char* name = fence ? "gpu_cpu_gpu_round_trip_fenced" : "gpu_cpu_gpu_round_trip";
      if (!ok) {
        ro.s(name, "FAILED: timed out waiting for a flag");
        std::fprintf(stderr, "round trip (fence=%d) timed out\n", fence);
        continue;
      }
      std::sort(all_ns.begin(), all_ns.end());
      Obj f = figure(stat_of(med_ns_reps), "ns",
          std::string("one GPU thread stores i to a flag in pinned mapped host memory (st.relaxed.sys") +
          (fence ? " then __threadfence_system()" : ", no fence") +
          "), a host thread spinning on it writes i to a reply flag on another line, the GPU spins "
          "(ld.relaxed.sys) until it reads i; clock64 per iteration converted at the kernel's own "
          "cycles/ns; median over 1950 iterations (first 50 dropped) per launch, median of 5 launches");
      f.n("cycles", stat_of(med_cyc_reps).med)
          .n("p10_ns", all_ns[all_ns.size() / 10])
          .n("p90_ns", all_ns[all_ns.size() * 9 / 10])
          .n("p99_ns", all_ns[all_ns.size() * 99 / 100])
          .n("median_reply_reads", stat_of(all_polls).med)
          .n("mean_reply_reads", std::accumulate(all_polls.begin(), all_polls.end(), 0.0) / all_polls.size());
      ro.raw(name, f.str());
      table.push_back({name, "ns", stat_of(med_ns_reps).med});
    }
    CK(cudaFree(d_cyc));
    CK(cudaFree(d_polls));
    figs.raw("round_trip", ro.str());
  }

  // ---- 7. host <-> device copies --------------------------------------------------------------
  Obj smi_load;
  {
    const size_t maxb = 256ull << 20;
    void *h = nullptr, *d = nullptr;
    CK(cudaHostAlloc(&h, maxb, cudaHostAllocDefault));
    CK(cudaMalloc(&d, maxb));
    std::memset(h, 0x77, maxb);
    CK(cudaMemset(d, 0x11, maxb));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<std::string> rows;
    const size_t sizes[] = {4ull << 10, 64ull << 10, 1ull << 20, 16ull << 20, 256ull << 20};
    for (size_t sz : sizes) {
      for (int h2d = 1; h2d >= 0; --h2d) {
        const int reps = sz <= (1u << 20) ? 50 : sz <= (16u << 20) ? 20 : 8;
        std::vector<double> ev_us, wall_us;
        for (int r = 0; r < 3 + reps; ++r) {
          auto w0 = std::chrono::steady_clock::now();
          CK(cudaEventRecord(e0, s));
          if (h2d) CK(cudaMemcpyAsync(d, h, sz, cudaMemcpyHostToDevice, s));
          else CK(cudaMemcpyAsync(h, d, sz, cudaMemcpyDeviceToHost, s));
          CK(cudaEventRecord(e1, s));
          CK(cudaStreamSynchronize(s));
          auto w1 = std::chrono::steady_clock::now();
          float ms = 0;
          CK(cudaEventElapsedTime(&ms, e0, e1));
          if (r >= 3) {
            ev_us.push_back(ms * 1e3);
            wall_us.push_back(std::chrono::duration<double, std::micro>(w1 - w0).count());
          }
        }
        Stat se = stat_of(ev_us), sw = stat_of(wall_us);
        rows.push_back(Obj()
                           .s("direction", h2d ? "H2D" : "D2H")
                           .i("bytes", (long long)sz)
                           .i("reps", se.n)
                           .n("event_time_us", se.med)
                           .n("event_time_min_us", se.min)
                           .n("bandwidth_GBps", sz / (se.med * 1e-6) / 1e9)
                           .n("host_wall_time_us", sw.med)
                           .n("host_wall_bandwidth_GBps", sz / (sw.med * 1e-6) / 1e9)
                           .str());
        char nm[64];
        std::snprintf(nm, sizeof nm, "memcpy %s %zu KiB", h2d ? "H2D" : "D2H", sz >> 10);
        table.push_back({std::string(nm) + " time", "us", se.med});
        table.push_back({std::string(nm) + " bw", "GB/s", sz / (se.med * 1e-6) / 1e9});
      }
    }
    figs.raw("memcpy", Obj()
        .s("method",
           "cudaMemcpyAsync between cudaHostAlloc'd (pinned) host memory and cudaMalloc'd device "
           "memory on one non-blocking stream; event_time = CUDA events recorded around the copy on "
           "the stream (device-side duration); host_wall_time = steady_clock around enqueue + "
           "cudaStreamSynchronize (what a host caller waits); median after 3 warm-ups; 1 GB = 1e9 B")
        .raw("rows", jarr(rows)).str());

    // The link drops to a low-power generation when idle: read it again while copies run.
    for (int r = 0; r < 300; ++r) CK(cudaMemcpyAsync(d, h, maxb, cudaMemcpyHostToDevice, s));
    smi_load = smi_query();
    CK(cudaStreamSynchronize(s));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(h));
    CK(cudaFree(d));
  }

  CK(cudaFreeHost(h_small));
  CK(cudaFree(d_scratch));
  CK(cudaFree(d_atom));
  CK(cudaFree(c.d_t));
  CK(cudaFree(c.d_sink));
  CK(cudaDeviceSynchronize());

  // ---- JSON ------------------------------------------------------------------------------------
  char uuid[64];
  {
    const unsigned char* u = (const unsigned char*)c.prop.uuid.bytes;
    std::snprintf(uuid, sizeof uuid, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                  u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  }
  Obj devo;
  devo.s("name", c.prop.name)
      .s("compute_capability", std::to_string(cc_major) + "." + std::to_string(cc_minor))
      .i("sm_count", c.sms)
      .n("sm_clock_max_mhz_attr", clock_khz / 1000.0)
      .n("memory_clock_mhz_attr", mem_khz / 1000.0)
      .i("memory_bus_width_bits", bus_width)
      .i("l2_cache_bytes", c.prop.l2CacheSize)
      .i("persisting_l2_max_bytes", c.prop.persistingL2CacheMaxSize)
      .i("global_memory_bytes", (long long)c.prop.totalGlobalMem)
      .i("shared_memory_per_sm_bytes", (long long)c.prop.sharedMemPerMultiprocessor)
      .i("max_threads_per_sm", c.prop.maxThreadsPerMultiProcessor)
      .b("host_native_atomics", host_atomics != 0)
      .s("pci_bus_id", [&] { char b[32]; std::snprintf(b, sizeof b, "%04x:%02x:%02x", c.prop.pciDomainID, c.prop.pciBusID, c.prop.pciDeviceID); return std::string(b); }())
      .s("uuid", uuid)
      .raw("nvidia_smi_idle", smi_idle.str())
      .raw("nvidia_smi_under_copy_load", smi_load.str());
  Obj sw;
  sw.i("cuda_driver_api_version", drv)
      .i("cuda_runtime_version", rt)
      .s("nvcc_version", std::to_string(__CUDACC_VER_MAJOR__) + "." + std::to_string(__CUDACC_VER_MINOR__) + "." +
                             std::to_string(__CUDACC_VER_BUILD__));
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  Obj root;
  root.s("schema", "gpunvme.gpu_microbench/1")
      .s("program", "tests/hardware/gpu_microbench.cu")
      .raw("device", devo.str())
      .raw("software", sw.str())
      .n("program_wall_time_s", wall_s)
      .raw("figures", figs.str());
  std::string json = root.str() + "\n";
  FILE* f = std::fopen(out_path, "w");
  if (!f) fail("cannot open the output file");
  std::fputs(json.c_str(), f);
  std::fclose(f);

  std::printf("\n%-52s %-11s %s\n", "figure", "unit", "value");
  for (const Row& r : table) std::printf("%-52s %-11s %.4g\n", r.name.c_str(), r.unit.c_str(), r.value);
  std::printf("\ndevice %s, %d SMs, L2 %d B, driver API %d, runtime %d; PCIe (under load): %s\n", c.prop.name,
              c.sms, c.prop.l2CacheSize, drv, rt, smi_load.str().c_str());
  std::printf("wrote %s in %.1f s\n", out_path, wall_s);
  return 0;
}
