#include "sim/frontend/hardware/soft_controller.h"

#include <cuda_runtime.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/queue_invariants.h"

namespace gpunvme::hw {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
  }
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

unsigned char* pinned_mapped(std::size_t bytes, std::uint64_t* device) {
  void* host = nullptr;
  check(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable),
        "cudaHostAlloc (mapped)");
  std::memset(host, 0, bytes);
  void* dev = nullptr;
  check(cudaHostGetDevicePointer(&dev, host, 0), "cudaHostGetDevicePointer");
  *device = reinterpret_cast<std::uint64_t>(dev);
  return static_cast<unsigned char*>(host);
}

}  // namespace

SoftController::SoftController(Options options) : options_(std::move(options)) {
  if (options_.threads == 0 || options_.max_queues == 0 || options_.batch == 0) {
    throw std::invalid_argument("soft controller: threads, max_queues and batch must be > 0");
  }
  fd_ = ::open(options_.file.c_str(), options_.writable ? O_RDWR : O_RDONLY);
  if (fd_ < 0) throw std::runtime_error("soft controller: cannot open " + options_.file);
  struct stat st {};
  ::fstat(fd_, &st);
  capacity_lbas_ = static_cast<std::uint64_t>(st.st_size) / options_.lba_bytes;
  if (capacity_lbas_ == 0) throw std::runtime_error("soft controller: empty file " + options_.file);

  cap_ = target_cap(options_.max_entries, options_.dstrd);
  const std::vector<unsigned char> image = bar0_image(cap_, options_.max_queues);
  bar0_bytes_ = image.size();
  bar0_ = pinned_mapped(bar0_bytes_, &bar0_device_);
  std::memcpy(bar0_, image.data(), bar0_bytes_);

  queues_.resize(options_.max_queues + 1);
  workers_.resize(options_.threads);
  for (Worker& w : workers_) {
    cudaStream_t s;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    w.stream = s;
    void* staging = nullptr;
    check(cudaHostAlloc(&staging, std::size_t{options_.batch} * options_.max_transfer,
                        cudaHostAllocPortable),
          "cudaHostAlloc (staging)");
    w.staging = static_cast<unsigned char*>(staging);
  }
}

SoftController::~SoftController() {
  stop();
  delete_io_queues();
  for (Worker& w : workers_) {
    cudaStreamDestroy(static_cast<cudaStream_t>(w.stream));
    cudaFreeHost(w.staging);
  }
  cudaFreeHost(bar0_);
  if (fd_ >= 0) ::close(fd_);
}

std::string SoftController::description() const {
  return "\"rings\": \"host\", \"doorbells\": \"host\", \"data\": \"gpu\", \"doc\": \"SQs, "
         "CQs and the BAR0 image in pinned host memory mapped into the GPU; host threads poll the "
         "doorbells, pread from the page-cached file into pinned staging and cudaMemcpyAsync "
         "into the GPU buffer, then post the CQE\"";
}

volatile std::uint32_t* SoftController::doorbell(std::uint16_t qid, bool cq) const {
  const std::uint64_t offset = cq ? nvme::cq_head_doorbell_offset(qid, options_.dstrd)
                                  : nvme::sq_tail_doorbell_offset(qid, options_.dstrd);
  return reinterpret_cast<volatile std::uint32_t*>(bar0_ + offset);
}

IoQueueRings SoftController::create_io_queue(std::uint16_t qid, std::uint32_t entries) {
  // Existence is reported apart, with its own message.
  if (nvme::check_queue_create(qid, options_.max_queues, false, entries, options_.max_entries) !=
      nvme::QueueError::None) {
    throw std::runtime_error("soft controller: Create I/O queue " + std::to_string(qid) + " of " +
                             std::to_string(entries) + " entries refused (Invalid Queue " +
                             "Identifier or Size)");
  }
  Queue& q = queues_[qid];
  if (q.exists)
    throw std::runtime_error("soft controller: queue " + std::to_string(qid) + " exists");
  IoQueueRings r;
  r.qid = qid;
  r.entries = entries;
  q.sq = pinned_mapped(std::size_t{entries} * nvme::kSqEntrySize, &r.sq_device);
  q.cq = pinned_mapped(std::size_t{entries} * nvme::kCqEntrySize, &r.cq_device);
  q.exists = true;
  q.entries = entries;
  q.sq_tail = q.sq_head = q.cq_tail = q.cq_head = 0;
  q.phase = true;
  q.cids.open();
  q.waiting.clear();
  *doorbell(qid, false) = 0;
  *doorbell(qid, true) = 0;
  r.sq_doorbell_device = bar0_device_ + nvme::sq_tail_doorbell_offset(qid, options_.dstrd);
  r.cq_doorbell_device = bar0_device_ + nvme::cq_head_doorbell_offset(qid, options_.dstrd);
  r.memory = RingMemory::host_pinned;
  return r;
}

void SoftController::delete_io_queues() {
  for (std::size_t qid = 1; qid < queues_.size(); ++qid) {
    Queue& q = queues_[qid];
    if (!q.exists) continue;
    cudaFreeHost(q.sq);
    cudaFreeHost(q.cq);
    q = Queue{};
  }
}

void SoftController::start() {
  stop_.store(false);
  for (std::uint32_t t = 0; t < options_.threads; ++t)
    threads_.emplace_back([this, t] { serve(t); });
}

void SoftController::stop() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
  threads_.clear();
}

void SoftController::violation(Worker& w, std::string what) {
  if (w.violations.size() < 100) w.violations.push_back(std::move(what));
}

TargetStats SoftController::stats() const {
  TargetStats s;
  std::vector<double> service, data, gaps, copies;
  std::vector<std::pair<double, double>> batches;
  for (const Worker& w : workers_) {
    batches.insert(batches.end(), w.batches.begin(), w.batches.end());
    s.fetched += w.fetched;
    s.completed += w.completed;
    s.errors += w.errors;
    s.sq_doorbell_updates += w.sq_updates;
    service.insert(service.end(), w.service_ns.begin(), w.service_ns.end());
    data.insert(data.end(), w.data_ns.begin(), w.data_ns.end());
    gaps.insert(gaps.end(), w.batch_gap_ns.begin(), w.batch_gap_ns.end());
    copies.insert(copies.end(), w.batch_copies.begin(), w.batch_copies.end());
    s.violations.insert(s.violations.end(), w.violations.begin(), w.violations.end());
  }
  std::int64_t origin = 0;
  for (const Worker& w : workers_) {
    if (w.first_batch_ns != 0 && (origin == 0 || w.first_batch_ns < origin))
      origin = w.first_batch_ns;
  }
  for (const Worker& w : workers_) {
    TargetStats::Thread t;
    t.completed = w.completed;
    t.batches = w.batch_passes;
    t.busy_ns = w.busy_ns;
    if (w.first_batch_ns != 0) {
      t.first_batch_ns = static_cast<double>(w.first_batch_ns - origin);
      t.last_batch_end_ns = static_cast<double>(w.last_batch_end_ns - origin);
    }
    s.threads.push_back(t);
  }
  s.service_ns = summarize(std::move(service));
  s.data_ns = summarize(std::move(data));
  fit_batch_line(batches, s);
  s.batch_gap_ns = summarize(std::move(gaps));
  s.batch_copies = summarize(std::move(copies));
  return s;
}

void SoftController::reset_stats() {
  for (Worker& w : workers_) {
    w.service_ns.clear();
    w.data_ns.clear();
    w.batches.clear();
    w.batch_gap_ns.clear();
    w.batch_copies.clear();
    w.last_batch_end_ns = 0;
    w.first_batch_ns = 0;
    w.batch_passes = 0;
    w.busy_ns = 0;
    w.idle_since_batch = true;
    w.fetched = w.completed = w.errors = w.sq_updates = 0;
    w.violations.clear();
  }
}

void SoftController::serve(std::uint32_t thread) {
  Worker& w = workers_[thread];
  while (!stop_.load(std::memory_order_acquire)) {
    bool work = false;
    for (std::uint32_t qid = thread + 1; qid < queues_.size(); qid += options_.threads) {
      if (queues_[qid].exists) work = poll_queue(static_cast<std::uint16_t>(qid), w) || work;
    }
    if (!work) w.idle_since_batch = true;
    // Spin without yielding: a controller polls its doorbells continuously,
    // and a yield would add scheduler latency to every command.
    if (!work) __builtin_ia32_pause();
  }
}

// Checks the PRPs of `e` against the DMA window and lists the GPU segments
// (address, bytes) the transfer covers, in order.
nvme::Status SoftController::transfer(
    const nvme::SubmissionEntry& e, Worker& w, unsigned char* staging,
    std::vector<std::pair<std::uint64_t, std::uint32_t>>& segments) {
  (void)w;
  (void)staging;
  const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
  const std::uint64_t bytes = std::uint64_t{rw.block_count} * options_.lba_bytes;
  if (bytes > options_.max_transfer) return nvme::Status::InvalidFieldInCommand;
  const std::uint64_t page = nvme::kMinPageSize;
  segments.clear();
  auto inside = [&](std::uint64_t addr, std::uint64_t len) {
    return addr >= options_.dma_base && len <= options_.dma_bytes &&
           addr - options_.dma_base <= options_.dma_bytes - len;
  };
  const std::uint64_t first = std::min<std::uint64_t>(bytes, page - e.prp1 % page);
  segments.emplace_back(e.prp1, static_cast<std::uint32_t>(first));
  std::uint64_t left = bytes - first;
  if (left > 0 && left <= page) {
    if (e.prp2 % page != 0) return nvme::Status::PrpOffsetInvalid;
    segments.emplace_back(e.prp2, static_cast<std::uint32_t>(left));
    left = 0;
  } else if (left > 0) {
    // PRP2 points to a PRP list (in GPU memory: copy it over). MDTS keeps it
    // within one list page, so no chained lists.
    const std::uint64_t n = (left + page - 1) / page;
    if (!inside(e.prp2, n * 8)) return nvme::Status::DataTransferError;
    std::vector<std::uint64_t> list(n);
    if (cudaMemcpy(list.data(), reinterpret_cast<void*>(e.prp2), n * 8, cudaMemcpyDefault) !=
        cudaSuccess) {
      return nvme::Status::DataTransferError;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      if (list[i] % page != 0) return nvme::Status::PrpOffsetInvalid;
      const std::uint64_t len = std::min(left, page);
      segments.emplace_back(list[i], static_cast<std::uint32_t>(len));
      left -= len;
    }
  }
  for (const auto& s : segments) {
    if (!inside(s.first, s.second)) return nvme::Status::DataTransferError;
  }
  return nvme::Status::Success;
}

bool SoftController::poll_queue(std::uint16_t qid, Worker& w) {
  Queue& q = queues_[qid];
  const std::uint32_t n = q.entries;
  bool work = false;

  // CQ head: the host may only release entries the controller has posted.
  const std::uint32_t head = *doorbell(qid, true);
  if (head != q.cq_head) {
    if (nvme::check_cq_head(q.cq_head, q.cq_tail, head, n).error != nvme::QueueError::None) {
      violation(w, "queue " + std::to_string(qid) + ": CQ head " + std::to_string(q.cq_head) +
                       " -> " + std::to_string(head) + " passes the tail " +
                       std::to_string(q.cq_tail));
    }
    q.cq_head = head % n;
  }
  // SQ tail: new entries must fit in the free part of the ring.
  const std::uint32_t tail = *doorbell(qid, false);
  if (tail != q.sq_tail) {
    ++w.sq_updates;
    const nvme::SqTailCheck check = nvme::check_sq_tail(q.sq_head, q.sq_tail, tail, n);
    if (check.error == nvme::QueueError::ValueBeyondRing) {
      violation(w, "queue " + std::to_string(qid) + ": SQ tail doorbell value " +
                       std::to_string(tail) + " for a queue of " + std::to_string(n) + " entries");
    } else if (check.error == nvme::QueueError::SqOverrun) {
      violation(w, "queue " + std::to_string(qid) + ": SQ overrun: tail " +
                       std::to_string(q.sq_tail) + " -> " + std::to_string(tail));
    }
    q.sq_tail = tail % n;
  }
  // Entries written before the doorbell are visible once it is (PCIe posted
  // writes stay in order); keep the compiler from reading them earlier.
  std::atomic_thread_fence(std::memory_order_acquire);

  // Fetch and serve a batch: every read's pread and copy are issued, then
  // one stream synchronisation covers them all before any CQE is posted (a
  // CQE must never overtake its data).
  std::vector<Command> batch;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> segments;
  std::vector<std::pair<std::uint64_t, nvme::SubmissionEntry>> writes;  // staging offset, entry
  // Copies of the batch, merged where both sides continue the previous one
  // (a warp's buffers are usually adjacent): one copy-engine operation for
  // many commands, as a controller's DMA engine streams a batch.
  struct Copy {
    std::uint64_t gpu;
    unsigned char* host;
    std::uint64_t bytes;
    bool to_gpu;
  };
  std::vector<Copy> copies;
  const std::int64_t batch_start = now_ns();
  if (q.sq_head != q.sq_tail && !w.idle_since_batch && w.last_batch_end_ns != 0) {
    w.batch_gap_ns.push_back(static_cast<double>(batch_start - w.last_batch_end_ns));
  }
  std::uint64_t staged = 0;  // bytes of staging used by the batch
  while (q.sq_head != q.sq_tail && q.waiting.size() + batch.size() < options_.batch) {
    nvme::SubmissionEntry e;
    std::memcpy(&e, q.sq + std::size_t{q.sq_head} * nvme::kSqEntrySize, sizeof e);
    q.sq_head = (q.sq_head + 1) % n;
    ++w.fetched;
    work = true;
    const std::uint16_t cid = e.cid();
    if (q.cids.claim(cid) == nvme::QueueError::CidInUse) {
      violation(w, "queue " + std::to_string(qid) + ": CID " + std::to_string(cid) +
                       " reused while outstanding");
      continue;
    }
    nvme::Status status = nvme::Status::Success;
    const auto opcode = static_cast<nvme::NvmOpcode>(e.opcode());
    const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
    unsigned char* staging = w.staging + staged;
    if (opcode != nvme::NvmOpcode::Read && opcode != nvme::NvmOpcode::Write) {
      status = nvme::Status::InvalidCommandOpcode;
    } else if (e.nsid != 1) {
      status = nvme::Status::InvalidNamespaceOrFormat;
    } else if (rw.slba + rw.block_count > capacity_lbas_) {
      status = nvme::Status::LbaOutOfRange;
    } else if (opcode == nvme::NvmOpcode::Write && !options_.writable) {
      // The namespace is write protected (NVMe 2.0, Namespace Write Protection).
      status = nvme::Status::NamespaceWriteProtected;
    } else {
      status = transfer(e, w, staging, segments);
    }
    if (status == nvme::Status::Success) {
      const std::uint64_t bytes = std::uint64_t{rw.block_count} * options_.lba_bytes;
      if (opcode == nvme::NvmOpcode::Read) {
        const ssize_t got =
            ::pread(fd_, staging, bytes, static_cast<off_t>(rw.slba * options_.lba_bytes));
        if (got != static_cast<ssize_t>(bytes)) status = nvme::Status::UnrecoveredReadError;
      }
      std::uint64_t offset = 0;
      for (const auto& seg : segments) {
        if (status != nvme::Status::Success) break;
        const bool to_gpu = opcode == nvme::NvmOpcode::Read;
        Copy* last = copies.empty() ? nullptr : &copies.back();
        if (last != nullptr && last->to_gpu == to_gpu && last->gpu + last->bytes == seg.first &&
            last->host + last->bytes == staging + offset) {
          last->bytes += seg.second;
        } else {
          copies.push_back({seg.first, staging + offset, seg.second, to_gpu});
        }
        offset += seg.second;
      }
      if (opcode == nvme::NvmOpcode::Write && status == nvme::Status::Success) {
        writes.emplace_back(staged, e);
      }
      staged += bytes;
    }
    batch.push_back({cid, status, batch_start, 0});
  }
  if (!batch.empty()) {
    w.batch_copies.push_back(static_cast<double>(copies.size()));
    bool copied = true;
    const auto stream = static_cast<cudaStream_t>(w.stream);
    for (const Copy& c : copies) {
      void* gpu = reinterpret_cast<void*>(c.gpu);
      copied = copied &&
               (c.to_gpu ? cudaMemcpyAsync(gpu, c.host, c.bytes, cudaMemcpyHostToDevice, stream)
                         : cudaMemcpyAsync(c.host, gpu, c.bytes, cudaMemcpyDeviceToHost, stream)) ==
                   cudaSuccess;
    }
    if (!copied) {
      for (Command& c : batch) {
        if (c.status == nvme::Status::Success) c.status = nvme::Status::DataTransferError;
      }
    }
    if (cudaStreamSynchronize(static_cast<cudaStream_t>(w.stream)) != cudaSuccess) {
      for (Command& c : batch) {
        if (c.status == nvme::Status::Success) c.status = nvme::Status::DataTransferError;
      }
    }
    for (const auto& [s, e] : writes) {
      const nvme::ReadWriteFields rw = nvme::decode_read_write(e);
      const std::uint64_t bytes = std::uint64_t{rw.block_count} * options_.lba_bytes;
      if (::pwrite(fd_, w.staging + s, bytes, static_cast<off_t>(rw.slba * options_.lba_bytes)) !=
          static_cast<ssize_t>(bytes)) {
        for (Command& c : batch) {
          if (c.cid == e.cid()) c.status = nvme::Status::WriteFault;
        }
      }
    }
    const std::int64_t data_done = now_ns();
    for (Command& c : batch) {
      c.data_ns = data_done - batch_start;
      q.waiting.push_back(c);
    }
  }

  // Post completions in order while the CQ has room.
  std::size_t posted = 0;
  while (posted < q.waiting.size() && (q.cq_tail + 1) % n != q.cq_head) {
    const Command& c = q.waiting[posted++];
    nvme::CompletionEntry cqe{};
    cqe.sqhd = static_cast<std::uint16_t>(q.sq_head);
    cqe.sqid = qid;
    cqe.cid = c.cid;
    cqe.set_status(c.status, q.phase);
    unsigned char* at = q.cq + std::size_t{q.cq_tail} * nvme::kCqEntrySize;
    // DW0-2 first, DW3 (CID, status, phase) last: a GPU that sees the new
    // phase sees the rest (x86 stores become visible in program order).
    std::memcpy(at, &cqe, 12);
    std::uint32_t dw3;
    std::memcpy(&dw3, reinterpret_cast<const unsigned char*>(&cqe) + 12, 4);
    q.cids.release(c.cid);
    std::atomic_thread_fence(std::memory_order_release);
    *reinterpret_cast<volatile std::uint32_t*>(at + 12) = dw3;
    q.cq_tail = (q.cq_tail + 1) % n;
    if (q.cq_tail == 0) q.phase = !q.phase;
    const std::int64_t t = now_ns();
    w.service_ns.push_back(static_cast<double>(t - c.fetched_ns));
    w.data_ns.push_back(static_cast<double>(c.data_ns));
    ++w.completed;
    if (c.status != nvme::Status::Success) ++w.errors;
    work = true;
  }
  q.waiting.erase(q.waiting.begin(), q.waiting.begin() + static_cast<std::ptrdiff_t>(posted));
  if (!batch.empty() && posted == batch.size() && q.waiting.empty()) {
    // The batch alone was posted, whole (no CQ-full remainder, none of an
    // earlier batch's): the pass's time is the batch's.
    w.batches.emplace_back(static_cast<double>(batch.size()),
                           static_cast<double>(now_ns() - batch_start));
  }
  if (!batch.empty()) {
    w.last_batch_end_ns = now_ns();
    if (w.first_batch_ns == 0) w.first_batch_ns = batch_start;
    ++w.batch_passes;
    w.busy_ns += static_cast<double>(w.last_batch_end_ns - batch_start);
    w.idle_since_batch = false;
  }
  return work;
}

}  // namespace gpunvme::hw
