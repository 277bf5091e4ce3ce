// Host <-> device copy bandwidth against size, both directions, pinned and pageable host
// memory, plus GPU-initiated (zero-copy) loads from and stores to pinned host memory.
// No dependencies beyond the CUDA runtime. Prints one JSON document on stdout.
//
// Build: nvcc -O2 -arch=sm_90 -o pcie_copy_bandwidth pcie_copy_bandwidth.cu
//
// Per size and mode: `reps` timed repetitions after one warm-up, each repetition a batch of
// `batch` back-to-back copies on one stream (batch chosen so a repetition moves >= 64 MiB or is
// one copy for the largest sizes), timed by CUDA events around the batch and by the host's
// steady clock around the batch and its synchronisation. Medians over the repetitions are
// reported, with min and max. A single-copy latency (one copy, synchronised) is reported too.
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t err_ = (call);                                                                     \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

__global__ void load_kernel(const uint4* __restrict__ src, size_t n, unsigned long long* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    const uint4 v = src[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) atomicAdd(sink, 1ull);  // keeps the loads; practically never taken
}

__global__ void store_kernel(uint4* dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x) {
    dst[i] = make_uint4((uint32_t)i, 1u, 2u, 3u);
  }
}

struct Stat {
  double med, min, max;
};
Stat stat(const std::vector<double>& v) {
  return {median(v), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

bool first_row = true;
void row(const char* group, const char* dir, const char* host_mem, size_t bytes, int batch,
         int reps, const Stat& ev_us, const Stat& wall_us, double single_us) {
  std::printf(
      "%s    {\"test\": \"%s\", \"direction\": \"%s\", \"host_memory\": \"%s\", "
      "\"bytes\": %zu, \"batch\": %d, \"reps\": %d, "
      "\"event_us_per_copy_median\": %.4f, \"event_us_per_copy_min\": %.4f, "
      "\"event_us_per_copy_max\": %.4f, \"bandwidth_GBps_median\": %.4f, "
      "\"wall_us_per_copy_median\": %.4f, \"wall_bandwidth_GBps_median\": %.4f, "
      "\"single_copy_wall_us_median\": %.4f}",
      first_row ? "" : ",\n", group, dir, host_mem, bytes, batch, reps, ev_us.med, ev_us.min,
      ev_us.max, bytes / (ev_us.med * 1e3), wall_us.med, bytes / (wall_us.med * 1e3), single_us);
  first_row = false;
}

}  // namespace

int main() {
  const int reps = 7;
  const size_t max_bytes = size_t{256} << 20;
  std::vector<size_t> sizes;
  for (size_t s = 4096; s <= max_bytes; s *= 2) sizes.push_back(s);

  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int driver = 0, runtime = 0;
  CHECK(cudaDriverGetVersion(&driver));
  CHECK(cudaRuntimeGetVersion(&runtime));
  char bus[64];
  CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, dev));
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  char uuid[64];
  {
    const unsigned char* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    std::snprintf(uuid, sizeof uuid,
                  "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                  u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                  u[14], u[15]);
  }
  std::printf("{\n  \"program\": \"scripts/hw/pcie_copy_bandwidth.cu\",\n");
  std::printf(
      "  \"device\": {\"name\": \"%s\", \"uuid\": \"%s\", \"pci_bus_id\": \"%s\", "
      "\"sms\": %d, \"cuda_driver_api\": %d, \"cuda_runtime\": %d, \"hostname\": \"%s\", "
      "\"async_engines\": %d},\n",
      prop.name, uuid, bus, prop.multiProcessorCount, driver, runtime, host, prop.asyncEngineCount);
  std::printf(
      "  \"method\": \"per size: one warm-up then %d repetitions; a repetition is a batch "
      "of back-to-back copies (or kernel launches) on one stream so that it moves >= 64 "
      "MiB (at least one); event_us_per_copy = CUDA-event time of the batch / batch; "
      "wall = host steady clock around the batch and cudaStreamSynchronize; "
      "single_copy_wall_us = one copy (or one kernel) issued and synchronised, median; "
      "bandwidth = bytes / time (10^9 B/s)\",\n",
      reps);
  std::printf("  \"rows\": [\n");

  void* dbuf;
  CHECK(cudaMalloc(&dbuf, max_bytes));
  CHECK(cudaMemset(dbuf, 1, max_bytes));
  void* pinned;
  CHECK(cudaHostAlloc(&pinned, max_bytes, cudaHostAllocMapped));
  std::memset(pinned, 2, max_bytes);
  void* pageable = std::malloc(max_bytes);
  std::memset(pageable, 3, max_bytes);
  void* pinned_dev;
  CHECK(cudaHostGetDevicePointer(&pinned_dev, pinned, 0));
  unsigned long long* sink;
  CHECK(cudaMalloc(&sink, sizeof *sink));

  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));

  const int threads = 512;
  const int blocks = prop.multiProcessorCount * 4;

  // op(kind, bytes): 0 H2D copy, 1 D2H copy, 2 zero-copy load kernel, 3 zero-copy store kernel.
  auto issue = [&](int op, void* host_buf, size_t bytes) {
    switch (op) {
      case 0: CHECK(cudaMemcpyAsync(dbuf, host_buf, bytes, cudaMemcpyHostToDevice, stream)); break;
      case 1: CHECK(cudaMemcpyAsync(host_buf, dbuf, bytes, cudaMemcpyDeviceToHost, stream)); break;
      case 2: {
        const size_t n = bytes / sizeof(uint4);
        const int b = (int)std::min<size_t>(blocks, (n + threads - 1) / threads);
        load_kernel<<<b, threads, 0, stream>>>(static_cast<const uint4*>(host_buf), n, sink);
        break;
      }
      case 3: {
        const size_t n = bytes / sizeof(uint4);
        const int b = (int)std::min<size_t>(blocks, (n + threads - 1) / threads);
        store_kernel<<<b, threads, 0, stream>>>(static_cast<uint4*>(host_buf), n);
        break;
      }
    }
  };

  struct Mode {
    const char* group;
    const char* dir;
    const char* mem;
    int op;
    void* buf;
  };
  const Mode modes[] = {
      {"copy", "H2D", "pinned", 0, pinned},
      {"copy", "D2H", "pinned", 1, pinned},
      {"copy", "H2D", "pageable", 0, pageable},
      {"copy", "D2H", "pageable", 1, pageable},
      {"zero_copy_kernel", "load_host_to_gpu", "pinned_mapped", 2, pinned_dev},
      {"zero_copy_kernel", "store_gpu_to_host", "pinned_mapped", 3, pinned_dev},
  };
  for (const Mode& m : modes) {
    for (size_t bytes : sizes) {
      const int batch = (int)std::max<size_t>(1, std::min<size_t>(256, (size_t{64} << 20) / bytes));
      std::vector<double> ev, wall, single;
      issue(m.op, m.buf, bytes);  // warm-up
      CHECK(cudaStreamSynchronize(stream));
      for (int r = 0; r < reps; ++r) {
        const double t0 = now_us();
        CHECK(cudaEventRecord(e0, stream));
        for (int i = 0; i < batch; ++i) issue(m.op, m.buf, bytes);
        CHECK(cudaEventRecord(e1, stream));
        CHECK(cudaStreamSynchronize(stream));
        const double t1 = now_us();
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        ev.push_back(ms * 1e3 / batch);
        wall.push_back((t1 - t0) / batch);
        const double s0 = now_us();
        issue(m.op, m.buf, bytes);
        CHECK(cudaStreamSynchronize(stream));
        single.push_back(now_us() - s0);
      }
      row(m.group, m.dir, m.mem, bytes, batch, reps, stat(ev), stat(wall), median(single));
    }
  }

  // Both directions at once (pinned, 64 MiB each way, two streams): full-duplex throughput.
  {
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    const size_t bytes = size_t{64} << 20;
    void* dbuf2;
    CHECK(cudaMalloc(&dbuf2, bytes));
    std::vector<double> wall;
    for (int r = 0; r < reps + 1; ++r) {
      const double t0 = now_us();
      for (int i = 0; i < 4; ++i) {
        CHECK(cudaMemcpyAsync(dbuf, pinned, bytes, cudaMemcpyHostToDevice, stream));
        CHECK(cudaMemcpyAsync(static_cast<char*>(pinned) + bytes, dbuf2, bytes,
                              cudaMemcpyDeviceToHost, s2));
      }
      CHECK(cudaStreamSynchronize(stream));
      CHECK(cudaStreamSynchronize(s2));
      if (r > 0) wall.push_back((now_us() - t0) / 4);
    }
    const Stat w = stat(wall);
    std::printf(
        ",\n    {\"test\": \"bidirectional_copy\", \"direction\": \"H2D+D2H\", "
        "\"host_memory\": \"pinned\", \"bytes\": %zu, \"batch\": 4, \"reps\": %d, "
        "\"wall_us_per_pair_median\": %.4f, \"wall_us_per_pair_min\": %.4f, "
        "\"each_way_GBps_median\": %.4f}",
        bytes, reps, w.med, w.min, bytes / (w.med * 1e3));
    CHECK(cudaFree(dbuf2));
  }
  std::printf("\n  ]\n}\n");
  CHECK(cudaDeviceSynchronize());
  return 0;
}
