// libcufile's host-side cost per call, in compatibility mode over a local
// file: cuFileDriverOpen, cuFileHandleRegister, cuFileBufRegister and
// cuFileRead (registered and unregistered GPU buffers) of 4 KiB .. 1 MiB,
// and the batch API (cuFileBatchIOSubmit / GetStatus) for 4 KiB reads.
// Each figure is the median (and percentiles) over many calls.
#include <cuda_runtime.h>
#include <cufile.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "host_cost_timing.h"

#define FK(x)                                                                                   \
  do {                                                                                          \
    CUfileError_t e_ = (x);                                                                     \
    if (e_.err != CU_FILE_SUCCESS) {                                                            \
      fprintf(stderr, "%s:%d %s: cufile err %d cuda %d\n", __FILE__, __LINE__, #x, (int)e_.err, \
              (int)e_.cu_err);                                                                  \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

static void print(const char* name, const char* param, double value, const std::vector<double>& v) {
  print(name, param, value, stats(v), v.size());
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "/tmp";
  const bool direct = argc > 2 ? atoi(argv[2]) != 0 : true;
  CK(cudaSetDevice(0));
  CK(cudaFree(0));
  std::string path = std::string(dir) + "/gpunvme_cufile.bin";
  const size_t file_bytes = 256ul << 20;
  {
    int fd = write_test_file(path, file_bytes, 5);
    if (fd < 0) return 1;
    close(fd);
  }
  double t0 = now_ns();
  FK(cuFileDriverOpen());
  double t1 = now_ns();
  print("cuFileDriverOpen", "calls", 1, {t1 - t0});
  int fd = open(path.c_str(), direct ? O_RDONLY | O_DIRECT : O_RDONLY);
  printf("{\"measurement\":\"setup\",\"file\":\"%s\",\"o_direct\":%d}\n", path.c_str(),
         direct ? 1 : 0);
  if (fd < 0) {
    perror("open O_DIRECT");
    return 1;
  }
  std::vector<double> hreg;
  CUfileHandle_t fh;
  for (int i = 0; i < 200; ++i) {
    CUfileDescr_t d{};
    d.handle.fd = fd;
    d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    double a = now_ns();
    CUfileError_t e = cuFileHandleRegister(&fh, &d);
    if (e.err != CU_FILE_SUCCESS) {
      printf("{\"measurement\":\"cuFileHandleRegister\",\"error\":%d}\n", (int)e.err);
      return 3;
    }
    double b = now_ns();
    hreg.push_back(b - a);
    if (i + 1 < 200) cuFileHandleDeregister(fh);
  }
  print("cuFileHandleRegister", "calls", hreg.size(), hreg);
  const size_t maxb = 1 << 20;
  std::vector<double> breg, bdereg;
  for (size_t bytes : {4096ul, 65536ul, 1048576ul}) {
    breg.clear();
    bdereg.clear();
    for (int i = 0; i < 100; ++i) {
      void* p;
      CK(cudaMalloc(&p, bytes));
      double a = now_ns();
      FK(cuFileBufRegister(p, bytes, 0));
      double b = now_ns();
      FK(cuFileBufDeregister(p));
      double c = now_ns();
      breg.push_back(b - a);
      bdereg.push_back(c - b);
      CK(cudaFree(p));
    }
    print("cuFileBufRegister", "bytes", bytes, breg);
    print("cuFileBufDeregister", "bytes", bytes, bdereg);
  }
  void* reg;
  CK(cudaMalloc(&reg, maxb));
  FK(cuFileBufRegister(reg, maxb, 0));
  void* unreg;
  CK(cudaMalloc(&unreg, maxb));
  unsigned long long x = 88172645463325252ull;
  auto rnd = [&] { return xorshift64(x); };
  for (int registered = 1; registered >= 0; --registered) {
    for (size_t bytes : {4096ul, 16384ul, 65536ul, 262144ul, 1048576ul}) {
      std::vector<double> v;
      const int n = bytes >= 262144 ? 400 : 2000;
      for (int i = 0; i < n; ++i) {
        off_t off = (off_t)((rnd() % (file_bytes / bytes)) * bytes);
        double a = now_ns();
        ssize_t got = cuFileRead(fh, registered ? reg : unreg, bytes, off, 0);
        double b = now_ns();
        if (got != (ssize_t)bytes) {
          fprintf(stderr, "cuFileRead returned %zd\n", got);
          return 1;
        }
        if (i >= n / 10) v.push_back(b - a);
      }
      print(registered ? "cuFileRead_registered_buffer" : "cuFileRead_unregistered_buffer", "bytes",
            bytes, v);
    }
  }
  // Batch API: 16 reads of 4 KiB per batch.
  {
    const unsigned nr = 16;
    CUfileBatchHandle_t batch;
    CUfileError_t e = cuFileBatchIOSetUp(&batch, nr);
    if (e.err != CU_FILE_SUCCESS) {
      printf("{\"measurement\":\"cuFileBatchIOSetUp\",\"error\":%d}\n", (int)e.err);
    } else {
      std::vector<CUfileIOParams_t> params(nr);
      std::vector<CUfileIOEvents_t> events(nr);
      std::vector<double> submit, complete;
      for (int rep = 0; rep < 300; ++rep) {
        for (unsigned k = 0; k < nr; ++k) {
          params[k] = CUfileIOParams_t{};
          params[k].mode = CUFILE_BATCH;
          params[k].u.batch.devPtr_base = reg;
          params[k].u.batch.devPtr_offset = (off_t)(k * 4096);
          params[k].u.batch.file_offset = (off_t)((rnd() % (file_bytes / 4096)) * 4096);
          params[k].u.batch.size = 4096;
          params[k].fh = fh;
          params[k].opcode = CUFILE_READ;
          params[k].cookie = &params[k];
        }
        double a = now_ns();
        e = cuFileBatchIOSubmit(batch, nr, params.data(), 0);
        double b = now_ns();
        if (e.err != CU_FILE_SUCCESS) {
          printf("{\"measurement\":\"cuFileBatchIOSubmit\",\"error\":%d}\n", (int)e.err);
          break;
        }
        unsigned done = 0;
        while (done < nr) {
          unsigned got = nr - done;
          struct timespec ts {
            1, 0
          };
          e = cuFileBatchIOGetStatus(batch, 1, &got, events.data(), &ts);
          if (e.err != CU_FILE_SUCCESS) {
            printf("{\"measurement\":\"cuFileBatchIOGetStatus\",\"error\":%d}\n", (int)e.err);
            done = nr + 1;
            break;
          }
          done += got;
        }
        double c = now_ns();
        if (done > nr) break;
        if (rep >= 30) {
          submit.push_back((b - a) / nr);
          complete.push_back((c - a) / nr);
        }
      }
      if (!submit.empty()) {
        print("cuFileBatchIOSubmit_per_io_4KiB_batch16", "batch", nr, submit);
        print("cuFileBatch_submit_to_all_complete_per_io_4KiB_batch16", "batch", nr, complete);
      }
      cuFileBatchIODestroy(batch);
    }
  }
  FK(cuFileBufDeregister(reg));
  cuFileHandleDeregister(fh);
  close(fd);
  CK(cudaFree(reg));
  CK(cudaFree(unreg));
  double c0 = now_ns();
  cuFileDriverClose();
  print("cuFileDriverClose", "calls", 1, {now_ns() - c0});
  unlink(path.c_str());
  return 0;
}
