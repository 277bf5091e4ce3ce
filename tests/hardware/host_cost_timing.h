// What the host cost programs (host_software_costs.cu, cufile_costs.cu)
// share: the CUDA error check, the host clock, percentile summaries printed
// as one JSON line per figure, and the file they read.
#pragma once

#include <cuda_runtime.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define CK(x)                                                                            \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static double now_ns() {
  return std::chrono::duration<double, std::nano>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Stats {
  double p50, p10, p90, p99, mean;
};

static Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double s = 0;
  for (double x : v) s += x;
  auto q = [&](double p) { return v[std::min(v.size() - 1, (size_t)(p * v.size()))]; };
  return {q(0.5), q(0.1), q(0.9), q(0.99), s / v.size()};
}

static void print(const char* name, const char* param, double value, Stats s, size_t n) {
  printf(
      "{\"measurement\":\"%s\",\"%s\":%g,\"samples\":%zu,\"median_ns\":%.1f,\"p10_ns\":%.1f,"
      "\"p90_ns\":%.1f,\"p99_ns\":%.1f,\"mean_ns\":%.1f}\n",
      name, param, value, n, s.p50, s.p10, s.p90, s.p99, s.mean);
  fflush(stdout);
}

// Marsaglia's xorshift64: the random offsets the programs read at.
static unsigned long long xorshift64(unsigned long long& x) {
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return x;
}

// Creates `path` holding `bytes` bytes of `fill`, written through and synced,
// and returns its descriptor open for reading and writing (-1 on failure,
// with the reason printed).
static int write_test_file(const std::string& path, size_t bytes, char fill) {
  int fd = open(path.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0) {
    perror("open");
    return -1;
  }
  std::vector<char> buf(1 << 20, fill);
  for (size_t off = 0; off < bytes; off += buf.size()) {
    if (write(fd, buf.data(), buf.size()) < 0) {
      perror("write");
      close(fd);
      return -1;
    }
  }
  fsync(fd);
  return fd;
}
