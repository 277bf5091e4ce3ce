#include "sim/run/scenario_spec.h"

namespace gpunvme {

const ComponentSpec& scenario_spec() {
  static const ComponentSpec spec{
      "scenario",
      "A workload run on a topology: what the GPU threads read or write, and how they reach "
      "the SSDs.",
      {
          string_param("name", "unnamed", "short name of the scenario", "user"),
          string_param("doc", "", "one line describing the scenario", "user"),
          enum_param("kind", "microbenchmark", {"microbenchmark"},
                     "scenario kind: microbenchmark (fio-style I/O loop)", "fio vocabulary"),
          enum_param("rw", "randread", {"randread", "read", "randwrite", "write"},
                     "access pattern, as fio's rw", "fio vocabulary"),
          integer_param("bs", "B", 4096, 512, 2 << 20,
                        "bytes per I/O (a multiple of the namespace's LBA size)",
                        "fio vocabulary; 4 KiB is the common random-read unit (seed 003)"),
          integer_param("iodepth", "", 1, 1, 4096,
                        "I/Os each thread keeps in flight: it submits this many, then waits "
                        "for all of them",
                        "fio vocabulary"),
          integer_param("threads", "", 1024, 1, 1 << 21, "GPU threads issuing I/O",
                        "seed 003: 270,336 threads on an H100"),
          integer_param("ios", "", 20000, 1, 1e10, "total I/Os of the run", "fio's number_ios"),
          enum_param("distribution", "uniform", {"uniform", "sequential"},
                     "where I/Os land: uniform random over the span, or each thread reading "
                     "its own sequential stream",
                     "fio's random_distribution"),
          real_param("span_gib", "GiB", 0.0, 0.0, 1e6,
                     "bytes of each SSD the I/Os address (0 = the whole namespace)",
                     "fio's size"),
          string_param("gpu", "gpu0", "id of the GPU that issues the I/O", "topology"),
          string_list_param("ssds", {"ssd0"}, "ids of the SSDs the I/O is spread over",
                            "topology"),
          integer_param("queues", "", 8, 1, 65535, "I/O queue pairs created on each SSD",
                        "seed 003: typical SSDs offer 32-128 queues"),
          integer_param("queue_entries", "", 1024, 2, 65536, "entries of each SQ and CQ",
                        "seed 003: typical depth 256-1024"),
          enum_param("strategy", "warp_batch", {"warp_batch"},
                     "submission and completion algorithm: warp_batch = a warp claims slots "
                     "for all its lanes, rings one doorbell in ticket order, and waiters drain "
                     "the CQ cooperatively",
                     "BaM (ASPLOS 2023) and seed 001's warp-collective batch"),
      }};
  return spec;
}

}  // namespace gpunvme
