// The controller's I/O execution: what happens to an I/O command once its
// entry is in the controller. The command is checked (opcode, namespace, LBA
// range, MDTS, data pointer type) and its processor time booked; injected
// faults may fail or lose it; then a Read's media read and data pointer
// proceed in parallel and its data passes the data path out to its buffer, a
// Write's data is read in and passes the data path into the write buffer, a
// Flush waits for the write buffer, a Dataset Management deallocates ranges.
// The completion itself is the controller's (IoHooks::complete).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "models/nvme/command.h"
#include "models/nvme/command_processors.h"
#include "models/nvme/fault_injector.h"
#include "models/nvme/queue_set.h"
#include "models/pcie/dma_engine.h"
#include "sim/kernel/calendar.h"
#include "sim/kernel/server.h"

namespace gpunvme::nvme {

// The namespace and the controller's limits, from its parameters.
struct IoLimits {
  std::uint32_t lba_bytes = 512;
  std::uint64_t capacity_lbas = 0;
  std::uint64_t max_transfer_bytes = 0;  // MDTS in bytes; 0 = no limit
  bool sgl_supported = false;
  double datapath_ps_per_byte = 0;  // the data path's rate; 0 = not a limit
  CommandCost cost;                 // what a command's data bytes are
};

// What execution needs from the controller and the flash back end.
struct IoHooks {
  using ReadDone = std::function<void(const std::uint8_t* data, std::uint32_t len)>;
  std::function<Picoseconds()> now;
  std::function<void(Picoseconds when, Calendar::Callback callback)> schedule_at;
  // Posts the command's completion (dropped for a command of an older
  // generation or one a reset completed already).
  std::function<void(const Command& command, Status status, std::uint32_t dw0, bool dnr)> complete;
  // Resolves the command's PRPs or SGL into segments, reading list pages
  // from `start` on (`to_host`: data goes to memory).
  std::function<void(CommandPtr command, std::uint64_t bytes, bool to_host, Picoseconds start,
                     Resolved done)>
      resolve;
  // Stops the run unless the segments are exactly the command's buffer.
  std::function<void(const Command& command, const std::vector<Segment>& segments,
                     std::uint64_t bytes)>
      check_segments;
  // The controller's own small transactions (its CMB by an internal access).
  std::function<void(std::uint64_t addr, std::uint32_t len, ReadDone done)> read;
  std::function<void(std::uint64_t addr, std::uint32_t len, const void* data,
                     std::function<void()> delivered)>
      write;
  // The data DMA engine: a write of read data (`issued` once it has all
  // entered the fabric), a read of write data (`done` when it arrived).
  // `tenant` tags them for the fabric (DataAdmission).
  std::function<void(std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done issued,
                     std::uint32_t tenant)>
      dma_write;
  std::function<void(std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done done,
                     std::uint32_t tenant)>
      dma_read;
  // The IOMMU domain's verdict on a command's data segments before any byte
  // moves; it may rewrite them (a tenant's stray data pointer). Unset: all
  // admitted, untagged.
  std::function<DataAdmission(const Command& command, std::vector<Segment>& segments, bool to_host)>
      admit_data;
  // Whether the bytes lie in the controller's own memory buffer.
  std::function<bool(std::uint64_t addr, std::uint64_t len)> in_own_cmb;
  // Each data DMA, for a trace.
  std::function<void(const DmaRecord& record)> observe_dma;
  // A device event (reset, link down) the fault schedule raised.
  std::function<void(FaultKind kind)> device_event;
  // A command lost by an injected timeout, once processed.
  std::function<void(const CommandPtr& command)> lose;
  std::function<std::uint64_t()> generation;
  // Volatile Write Cache enabled (a feature the host may set).
  std::function<bool()> volatile_cache;
  // The flash back end: a media read of `bytes` at `offset` (command
  // processed at `processed`), a write into the buffer from `in` on, a flush
  // of the buffer no earlier than `after`, a deallocation; each returns when
  // it is done.
  std::function<Picoseconds(Picoseconds now, Picoseconds processed, std::uint64_t offset,
                            std::uint32_t bytes)>
      media_read;
  std::function<Picoseconds(Picoseconds in, std::uint64_t offset, std::uint32_t bytes)> media_write;
  std::function<Picoseconds(Picoseconds now, Picoseconds after)> media_flush;
  std::function<void(std::uint64_t offset, std::uint64_t bytes)> media_trim;
};

class IoExecution {
 public:
  // Executes the I/O commands of `queues`' SQs on `processors`, with faults
  // from `faults`.
  IoExecution(QueueSet& queues, ProcessorPolicy& processors, FaultInjector& faults, IoLimits limits,
              IoHooks hooks);

  // An I/O command fetched now.
  void execute(CommandPtr command);

  std::uint64_t bytes_read() const { return bytes_read_; }
  std::uint64_t bytes_written() const { return bytes_written_; }
  std::uint64_t media_faults() const { return media_faults_; }
  std::uint64_t command_faults() const { return command_faults_; }
  std::uint64_t timeout_faults() const { return timeout_faults_; }

 private:
  void execute_read(CommandPtr command, std::uint64_t bytes, Picoseconds processed);
  void execute_write(CommandPtr command, std::uint64_t bytes, Picoseconds processed);
  void store_write(CommandPtr command, std::uint64_t bytes);
  void execute_dataset_management(CommandPtr command, Picoseconds processed);
  // When a transfer of `bytes`, ready at `ready`, starts on the data path.
  Picoseconds book_datapath(Picoseconds ready, std::uint64_t bytes);
  void complete(const Command& command, Status status, std::uint32_t dw0 = 0, bool dnr = false) {
    hooks_.complete(command, status, dw0, dnr);
  }

  QueueSet& queues_;
  ProcessorPolicy& processors_;
  FaultInjector& faults_;
  IoLimits limits_;
  IoHooks hooks_;
  NextFreeServer datapath_;
  std::uint64_t bytes_read_ = 0;
  std::uint64_t bytes_written_ = 0;
  std::uint64_t media_faults_ = 0;
  std::uint64_t command_faults_ = 0;
  std::uint64_t timeout_faults_ = 0;
};

}  // namespace gpunvme::nvme
