#include "models/nvme/command_processors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {

std::uint64_t CommandCost::data_bytes(const SubmissionEntry& sqe) const {
  const auto opcode = static_cast<NvmOpcode>(sqe.opcode());
  const bool rw = opcode == NvmOpcode::Read || opcode == NvmOpcode::Write;
  return rw ? std::uint64_t{decode_read_write(sqe).block_count} * lba_bytes : 0;
}

Picoseconds CommandCost::processing_time(std::uint64_t bytes) const {
  return overhead +
         static_cast<Picoseconds>(std::llround(ps_per_byte * static_cast<double>(bytes)));
}

ProcessorCores::ProcessorCores(std::size_t cores, std::vector<double> scale)
    : servers_(cores), scale_(std::move(scale)) {
  if (scale_.empty()) scale_.assign(cores, 1.0);
}

Picoseconds ProcessorCores::scaled(Picoseconds work, std::size_t core) const {
  const double scale = scale_[core];
  return scale == 1.0 ? work
                      : static_cast<Picoseconds>(std::llround(static_cast<double>(work) * scale));
}

Picoseconds ProcessorCores::book_earliest(Picoseconds ready, Picoseconds work) {
  std::size_t earliest = 0;
  for (std::size_t core = 1; core < servers_.size(); ++core) {
    if (servers_[core].free_at() < servers_[earliest].free_at()) earliest = core;
  }
  return book(earliest, ready, work);
}

Picoseconds ProcessorCores::book(std::size_t core, Picoseconds ready, Picoseconds work) {
  return servers_[core].book(ready, scaled(work, core)).end;
}

BusyScale::BusyScale(std::vector<double> busy, std::vector<double> scale)
    : busy_(std::move(busy)), scale_(std::move(scale)) {}

double BusyScale::at(double busy) const {
  if (busy_.empty()) return 1.0;
  if (busy <= busy_.front()) return scale_.front();
  if (busy >= busy_.back()) return scale_.back();
  const auto upper = std::upper_bound(busy_.begin(), busy_.end(), busy);
  const std::size_t hi = static_cast<std::size_t>(upper - busy_.begin());
  const std::size_t lo = hi - 1;
  const double t = (busy - busy_[lo]) / (busy_[hi] - busy_[lo]);
  return scale_[lo] + t * (scale_[hi] - scale_[lo]);
}

FootprintTerm::FootprintTerm(std::vector<double> busy, std::vector<double> ns_per_mib,
                             double reference_mib)
    : reference_mib_(reference_mib) {
  // A controller with a busy scale and no footprint term names busy counts
  // and no times per MiB: no term.
  if (!ns_per_mib.empty()) slope_ = BusyScale(std::move(busy), std::move(ns_per_mib));
}

void FootprintTerm::address(std::uint64_t addr, std::uint64_t bytes) {
  if (bytes == 0) return;
  for (std::uint64_t page = addr / kFootprintPage; page <= (addr + bytes - 1) / kFootprintPage;
       ++page) {
    pages_.insert(page);
  }
}

double FootprintTerm::mib() const {
  return static_cast<double>(pages_.size()) * static_cast<double>(kFootprintPage) /
         static_cast<double>(1u << 20);
}

double FootprintTerm::per_command_ns(double busy) const {
  if (slope_.empty()) return 0.0;
  return slope_.at(busy) * (std::min(mib(), reference_mib_) - reference_mib_);
}

BatchServiceProcessing::BatchServiceProcessing(ProcessorCores& cores, CommandCost cost,
                                               Picoseconds batch_overhead, Picoseconds batch_gap,
                                               std::size_t max_qid, ProcessorHooks hooks,
                                               BusyScale busy_scale, FootprintTerm footprint)
    : cores_(cores),
      cost_(cost),
      batch_overhead_(batch_overhead),
      batch_gap_(batch_gap),
      hooks_(std::move(hooks)),
      busy_scale_(std::move(busy_scale)),
      footprint_(std::move(footprint)),
      pollers_(cores.count()),
      waiting_(max_qid + 1, false) {}

// The queue's core fetches one batch (one read) when it is free; until then
// the queue waits on the core's list.
std::uint32_t BatchServiceProcessing::fetch_turn(std::uint16_t qid, std::uint32_t turn,
                                                 std::uint32_t fetch_burst, Picoseconds now) {
  const std::size_t processor = processor_of(qid);
  Poller& poller = pollers_[processor];
  if (poller.fetching || poller.batches_held > 0 || cores_.free_at(processor) > now) {
    wait_for_processor(processor, qid, now);
    return 0;
  }
  poller.fetching = true;
  poller.fetch_started = now;
  return std::min(turn, fetch_burst);
}

void BatchServiceProcessing::read_arrived(std::uint16_t qid) {
  pollers_[processor_of(qid)].fetching = false;
}

void BatchServiceProcessing::read_dispatched(std::uint16_t qid, Picoseconds now) {
  wake_when_free(processor_of(qid), now);
}

// The entries of one fetch are processed together on one core and finish
// together (one data synchronisation for the batch). As the software
// controller's thread waits for the batch's copies before posting its CQEs,
// the core takes no other batch until this one's completions are all
// posted.
std::vector<std::uint64_t> copy_operations(const std::uint8_t* entries, std::uint32_t count,
                                           const CommandCost& cost) {
  std::vector<std::uint64_t> operations;
  std::uint64_t end = 0;
  bool to_gpu = false;
  for (std::uint32_t i = 0; i < count; ++i) {
    SubmissionEntry sqe;
    std::memcpy(&sqe, entries + std::size_t{i} * kSqEntrySize, kSqEntrySize);
    const std::uint64_t bytes = cost.data_bytes(sqe);
    if (bytes == 0) continue;
    const bool read = static_cast<NvmOpcode>(sqe.opcode()) == NvmOpcode::Read;
    if (operations.empty() || read != to_gpu || sqe.prp1 != end) operations.push_back(sqe.prp1);
    to_gpu = read;
    end = sqe.prp1 + bytes;
  }
  return operations;
}

FetchedWork BatchServiceProcessing::fetched(std::uint16_t qid, const std::uint8_t* entries,
                                            std::uint32_t count, Picoseconds now) {
  Picoseconds work = batch_overhead_;
  for (std::uint32_t i = 0; i < count; ++i) {
    SubmissionEntry sqe;
    std::memcpy(&sqe, entries + std::size_t{i} * kSqEntrySize, kSqEntrySize);
    work += cost_.processing_time(cost_.data_bytes(sqe));
  }
  if (hooks_.cq_line_extra_pollers && hooks_.copy_op_line_poller > 0) {
    // The target's thread waits for each copy while warps crowd the CQ
    // lines it writes: its time, not the copy engine's.
    const std::uint64_t extra_pollers = hooks_.cq_line_extra_pollers();
    if (extra_pollers > 0) {
      work +=
          static_cast<Picoseconds>(copy_operations(entries, count, cost_).size() * extra_pollers) *
          hooks_.copy_op_line_poller;
    }
  }
  if (hooks_.cq_ring_extra_sweepers && hooks_.copy_op_ring_sweeper > 0) {
    // The same wait for warps that scan the CQ rings entry after entry.
    const std::uint64_t extra_sweepers = hooks_.cq_ring_extra_sweepers();
    if (extra_sweepers > 0) {
      work +=
          static_cast<Picoseconds>(copy_operations(entries, count, cost_).size() * extra_sweepers) *
          hooks_.copy_op_ring_sweeper;
    }
  }
  const std::size_t processor = processor_of(qid);
  if (!busy_scale_.empty()) {
    // The batch's own time, longer or shorter by how many processors work
    // beside it as it starts (its copies on the GPU's engine are not
    // processor time).
    const double scale = busy_scale_.at(static_cast<double>(busy_with(processor)));
    work = static_cast<Picoseconds>(std::llround(static_cast<double>(work) * scale));
  }
  if (!footprint_.empty()) {
    // Each command's copy writes its buffer: the buffers addressed so far
    // (these commands' included) set what a copy costs against the
    // calibration's footprint, at the busy count as it starts.
    std::uint32_t with_data = 0;
    for (std::uint32_t i = 0; i < count; ++i) {
      SubmissionEntry sqe;
      std::memcpy(&sqe, entries + std::size_t{i} * kSqEntrySize, kSqEntrySize);
      const std::uint64_t bytes = cost_.data_bytes(sqe);
      if (bytes == 0) continue;
      footprint_.address(sqe.prp1, bytes);
      ++with_data;
    }
    const double added_ps =
        1000.0 * with_data * footprint_.per_command_ns(static_cast<double>(busy_with(processor)));
    work = static_cast<Picoseconds>(
        std::max<long long>(0, static_cast<long long>(work) + std::llround(added_ps)));
  }
  FetchedWork fetched;
  fetched.processed = cores_.book(processor, now, work);
  if (hooks_.copy_op_delay) {
    // The target issues each command's copy after reading its data, while
    // it goes on with the next: the copies overlap the batch's work, and the
    // copy engine serves every core's in turn, in the order they come.
    Picoseconds delay = 0;
    for (std::uint64_t addr : copy_operations(entries, count, cost_)) {
      delay += hooks_.copy_op_delay(addr);
    }
    if (delay > 0) {
      fetched.processed = std::max(*fetched.processed, copy_engine_.book(now, delay).end);
    }
  }

  fetched.batch = std::make_shared<BatchHold>(
      BatchHold{processor, count, hooks_.generation(), pollers_[processor].fetch_started, count});
  ++pollers_[processor].batches_held;
  return fetched;
}

Picoseconds BatchServiceProcessing::processed(const std::optional<Picoseconds>& batch_processed,
                                              std::uint64_t bytes, Picoseconds now) {
  // Every I/O command comes with its batch's time; one that does not (none
  // should) is processed on its own.
  if (batch_processed) return *batch_processed;
  return cores_.book_earliest(now, cost_.processing_time(bytes));
}

void BatchServiceProcessing::command_done(BatchHold* batch, Picoseconds now) {
  if (batch != nullptr && --batch->left == 0) release(*batch, now);
}

void BatchServiceProcessing::reset() {
  for (Poller& poller : pollers_) {
    poller.fetching = false;
    poller.batches_held = 0;
    poller.waiting.clear();
  }
  std::fill(waiting_.begin(), waiting_.end(), false);
}

std::optional<std::vector<CoreStats>> BatchServiceProcessing::per_core() const {
  std::vector<CoreStats> stats;
  for (const Poller& poller : pollers_) stats.push_back(poller.stats);
  return stats;
}

// A processor is busy from the start of its batch's fetch until the batch's
// last completion is posted; its gap before the next batch (its pass to the
// next queue) is not counted.
std::size_t BatchServiceProcessing::busy_with(std::size_t processor) const {
  std::size_t busy = 1;
  for (std::size_t p = 0; p < pollers_.size(); ++p) {
    if (p != processor && (pollers_[p].fetching || pollers_[p].batches_held > 0)) ++busy;
  }
  return busy;
}

// The queue waits until its core is free; the core then offers its waiting
// queues to the fetch engine again.
void BatchServiceProcessing::wait_for_processor(std::size_t processor, std::uint16_t qid,
                                                Picoseconds now) {
  if (!waiting_[qid]) {
    waiting_[qid] = true;
    pollers_[processor].waiting.push_back(qid);
  }
  if (!pollers_[processor].fetching) wake_when_free(processor, now);
}

void BatchServiceProcessing::wake_when_free(std::size_t processor, Picoseconds now) {
  Poller& poller = pollers_[processor];
  if (poller.batches_held > 0) return;  // the batch's last completion wakes it
  const Picoseconds at = std::max(now, cores_.free_at(processor));
  if (poller.waiting.empty() || poller.wake_at == at) return;
  poller.wake_at = at;
  const std::uint64_t generation = hooks_.generation();
  hooks_.schedule_at(at, [this, processor, generation, at] {
    Poller& p = pollers_[processor];
    if (generation != hooks_.generation() || p.wake_at != at) return;
    p.wake_at = Poller::kNoWake;
    for (std::uint16_t qid : p.waiting) {
      waiting_[qid] = false;
      hooks_.queue_ready(qid);
    }
    p.waiting.clear();
    hooks_.kick_fetch();
  });
}

// The last completion of a batch: its core is free a gap later (its pass on
// to the next queue).
void BatchServiceProcessing::release(const BatchHold& batch, Picoseconds now) {
  if (batch.generation != hooks_.generation()) return;
  Poller& poller = pollers_[batch.processor];
  --poller.batches_held;
  ++poller.stats.batches;
  poller.stats.commands += batch.commands;
  poller.stats.busy += now - batch.fetch_started;
  cores_.hold_until(batch.processor, now + batch_gap_);
  wake_when_free(batch.processor, now);
}

}  // namespace gpunvme::nvme
