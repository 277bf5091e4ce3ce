// The I/O paths a workload can drive, behind one interface: block reads and
// writes between the SSDs and GPU memory, each calling back when its data is
// where the requester wants it.
//
// - gpu_initiated: GPU warps run the algorithm library's queues (gpu_io_path.h);
// - gds: host cores submit, the SSD DMAs straight into GPU memory;
// - bounce: host cores submit, the SSD DMAs into pinned host memory and a
//   copy engine moves the data to the GPU (cpu_initiated.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/kernel/latency_histogram.h"
#include "sim/system/config/run_config.h"
#include "sim/system/machine/machine.h"
#include "sim/system/machine/sim_warp.h"
#include "sim/system/workload/fio_latency.h"

namespace gpunvme {

struct BlockIo {
  std::uint32_t ssd = 0;  // index into the scenario's ssds
  std::uint64_t slba = 0;
  std::uint32_t lbas = 1;
  bool write = false;
  std::uint64_t buffer = 0;  // 4 KiB-aligned GPU memory the data comes from or goes to
  std::uint32_t issuer = 0;  // the GPU thread (or host job) asking: picks its queue or core
};

// Called with the NVMe status (0 = success; SCT << 8 | SC, then CRD, More
// and DNR above) once the data is in place.
using IoDone = std::function<void(std::uint16_t status)>;

class IoPath {
 public:
  virtual ~IoPath() = default;

  // Brings the SSDs up and creates the path's queues; `ready` runs when I/O
  // may be submitted.
  virtual void start(std::function<void()> ready) = 0;
  virtual void submit(const BlockIo& io, IoDone done) = 0;
  // No more I/O will come: service processes may end.
  virtual void close() = 0;

  virtual std::string name() const = 0;      // gpu_initiated, gds or bounce
  virtual std::string strategy() const = 0;  // the GPU strategy, or the host completion mode
  virtual std::uint64_t submitted() const = 0;
  virtual std::uint64_t completed() const = 0;  // I/Os finished, successfully or not
  virtual std::uint64_t errors() const = 0;     // of those, I/Os that failed (status != 0)
  virtual std::uint64_t bytes() const = 0;      // bytes the successful I/Os moved
  // Of the failed I/Os: those the host's timeout aborted (Command Abort
  // Requested) and those a controller reset aborted (Command Aborted due to
  // SQ Deletion).
  virtual std::uint64_t timeouts() const = 0;
  virtual std::uint64_t reset_aborted() const = 0;
  virtual const LatencyHistogram& end_to_end() const = 0;
  virtual nlohmann::json stages() const = 0;
  // The stage names of stages(), in the order an I/O passes them.
  virtual std::vector<std::string> stage_order() const = 0;
  // fio's slat, clat and lat; the workload sets its ramp.
  virtual FioLatency& fio_latency() = 0;
  virtual const FioLatency& fio_latency() const = 0;
  virtual const platform::WarpCounters& counters() const = 0;
  // Path-specific sections of the result ({"cpu": ...}); may be empty.
  virtual nlohmann::json sections(Picoseconds elapsed) const = 0;
};

// The path the scenario names, for I/Os of at most `max_io_bytes`.
std::unique_ptr<IoPath> make_io_path(const RunConfig& config, Machine& machine,
                                     std::uint64_t max_io_bytes);

// Where the host side of an SSD lives: the host memory nearest to it (fewest
// hops) and that memory's CPU socket; npos when the topology has none.
struct HostSide {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  std::size_t cpu = npos;
  std::size_t memory = npos;
};
HostSide nearest_host_side(const Machine& machine, std::size_t ssd);

}  // namespace gpunvme
