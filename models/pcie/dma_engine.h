// A DMA engine: moves a transfer as a sequence of PCIe bursts with outstanding limits. Reads
// from remote memory are non-posted (the fabric adds the requester's tag limit and the
// completions); writes to remote memory are posted. Each chunk is one burst of the fabric (one
// event per hop), accounted byte-exactly there.
//
// GPU copy engines (host <-> device copies) and device-side DMA (an SSD writing into GPU memory)
// both use it: an engine belongs to one node, "local" memory is memory that node owns (GPU
// HBM; an SSD has none in the address space, so its side of a transfer is its own buffer).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/pcie/fabric.h"
#include "sim/kernel/component.h"
#include "sim/kernel/inplace_function.h"
#include "sim/kernel/memory_space.h"
#include "sim/kernel/params/param_spec.h"

namespace gpunvme::pcie {

struct DmaEngineConfig {
  // Bytes per burst. A transfer longer than this is cut at multiples of it in the remote
  // address (4 KB chunks are page-aligned bursts); a shorter one is one burst. The fabric splits
  // each chunk into TLPs exactly (MPS, MRRS, RCB), so the chunk sets only the event granularity,
  // the unit of the outstanding limits and how finely two flows interleave at a shared link. 4 KB
  // here (unit tests); the machines take theirs from the declared parameters (dma_engine_params).
  std::uint64_t chunk_bytes = 4096;
  // Read chunks in flight. Estimate: 64 x 4 KB = 256 KB covers the bandwidth-delay product of a
  // Gen5 x16 link (63 GB/s x ~1.2 us host-read round trip, measured on the lent H200 2026-11,
  // configs/measurements) twice over; the fabric's tag limit (read_tags) applies on top.
  std::uint32_t max_outstanding_reads = 64;
  // Posted write chunks issued and not yet delivered. Same estimate as for reads.
  std::uint32_t max_outstanding_writes = 64;
  // Copy the bytes through simulated memory (queue entries, small structures) or only model
  // the time (bulk data, as the NVMe data path does).
  bool move_contents = false;
};

// The declared parameters of a node's DMA engine: <prefix>chunk_bytes,
// <prefix>outstanding_reads, <prefix>outstanding_writes. `owner` names the engine in the docs;
// the sources say where each default comes from.
std::vector<ParamSpec> dma_engine_params(const std::string& prefix, const std::string& owner,
                                         std::int64_t chunk_bytes, const std::string& chunk_source,
                                         std::int64_t outstanding,
                                         const std::string& outstanding_source);
// The engine configuration those parameters describe.
DmaEngineConfig dma_engine_config(const ParamValues& params, const std::string& prefix);

// The defaults above, named for a GPU's copy engine in unit tests.
DmaEngineConfig gpu_copy_engine_config();

class DmaEngine : public Component {
 public:
  // In place: the NVMe controller's callbacks (its this pointer and the
  // command) would not fit std::function's two words.
  using Done = InplaceFunction<void(), 32>;

  DmaEngine(const sc_core::sc_module_name& name, Fabric& fabric, MemorySpace& memory,
            std::size_t node, DmaEngineConfig config = {});

  // Moves `len` bytes from `src` to `dst` (PCIe addresses). Memory the engine's node owns is
  // local: local -> remote is a stream of posted writes, remote -> local a stream of reads,
  // remote -> remote reads each chunk in and writes it out, local -> local takes no PCIe time.
  // Transfers queue behind each other in call order. `done` runs when the last byte has landed.
  void copy(std::uint64_t src, std::uint64_t dst, std::uint64_t len, Done done);
  // Device-side DMA from the engine's own buffer: posted writes of `len` bytes to `dst`.
  // `issued` runs once the last chunk has entered the fabric: a posted write the device sends
  // after that on the same path (an NVMe completion entry after the read data) is ordered
  // behind the data, as PCIe orders posted writes, without waiting for the data to land.
  // `tenant` (0: none): the tenant the device moves the data for (Fabric::write).
  void write(std::uint64_t dst, std::uint64_t len, Done done, Done issued = nullptr,
             std::uint32_t tenant = 0);
  // Device-side DMA into the engine's own buffer: reads of `len` bytes at `src`.
  void read(std::uint64_t src, std::uint64_t len, Done done, std::uint32_t tenant = 0);

  std::size_t node() const { return node_; }
  const DmaEngineConfig& config() const { return config_; }
  std::uint64_t bytes_moved() const { return bytes_moved_; }
  std::uint64_t chunks() const { return chunks_; }
  std::uint64_t limit_waits() const { return limit_waits_; }
  // Bytes, chunks, transfers, chunks by direction, the most chunks in flight and how often a
  // chunk waited for the outstanding limit, and the engine's settings.
  nlohmann::json statistics() const;

 private:
  enum class Mode { Push, Pull, PullPush, Local };
  struct Job {
    Mode mode;
    std::uint64_t src, dst, len;
    std::uint64_t issued = 0;     // bytes handed to the fabric
    std::uint64_t completed = 0;  // bytes landed
    Done done;
    Done on_issued;
    std::uint32_t tenant = 0;
  };

  void start(Mode mode, std::uint64_t src, std::uint64_t dst, std::uint64_t len, Done done,
             Done issued, std::uint32_t tenant = 0);
  void pump();
  void landed(const std::shared_ptr<Job>& job, std::uint64_t bytes);
  bool local(std::uint64_t addr, std::uint64_t len) const;

  Fabric& fabric_;
  MemorySpace& memory_;
  std::size_t node_;
  DmaEngineConfig config_;
  // Jobs with chunks still to issue, in call order; a job leaves once fully issued and lives on
  // in its chunks' callbacks, so each chunk costs O(1) here whatever the queue depth.
  std::deque<std::shared_ptr<Job>> jobs_;
  bool pumping_ = false;
  std::uint32_t reads_in_flight_ = 0;
  std::uint32_t writes_in_flight_ = 0;
  std::uint32_t max_in_flight_ = 0;
  std::uint64_t bytes_moved_ = 0;
  std::uint64_t chunks_ = 0;
  std::uint64_t read_chunks_ = 0;
  std::uint64_t write_chunks_ = 0;
  std::uint64_t transfers_ = 0;
  std::uint64_t limit_waits_ = 0;
  bool waiting_ = false;  // the front job is held by an outstanding limit
};

}  // namespace gpunvme::pcie
