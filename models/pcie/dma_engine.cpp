#include "models/pcie/dma_engine.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gpunvme::pcie {

std::vector<ParamSpec> dma_engine_params(const std::string& prefix, const std::string& owner,
                                         std::int64_t chunk_bytes, const std::string& chunk_source,
                                         std::int64_t outstanding,
                                         const std::string& outstanding_source) {
  return {
      integer_param(prefix + "chunk_bytes", "B", chunk_bytes, 64, 1 << 24,
                    "bytes the " + owner +
                        " hands the fabric as one burst (a longer transfer is cut at multiples "
                        "of this size); "
                        "the fabric splits it into TLPs exactly, so this sets only the event "
                        "granularity, the unit of the outstanding limits and how finely flows "
                        "interleave on a shared link",
                    chunk_source),
      integer_param(prefix + "outstanding_reads", "chunks", outstanding, 1, 1 << 20,
                    "read chunks the " + owner +
                        " keeps in flight; the platform's read_tags limit applies on top",
                    outstanding_source),
      integer_param(prefix + "outstanding_writes", "chunks", outstanding, 1, 1 << 20,
                    "posted write chunks the " + owner + " keeps issued and not yet delivered",
                    outstanding_source),
  };
}

DmaEngineConfig dma_engine_config(const ParamValues& params, const std::string& prefix) {
  DmaEngineConfig config;
  config.chunk_bytes = static_cast<std::uint64_t>(params.integer(prefix + "chunk_bytes"));
  config.max_outstanding_reads =
      static_cast<std::uint32_t>(params.integer(prefix + "outstanding_reads"));
  config.max_outstanding_writes =
      static_cast<std::uint32_t>(params.integer(prefix + "outstanding_writes"));
  return config;
}

DmaEngineConfig gpu_copy_engine_config() { return DmaEngineConfig{}; }

DmaEngine::DmaEngine(const sc_core::sc_module_name& name, Fabric& fabric, MemorySpace& memory,
                     std::size_t node, DmaEngineConfig config)
    : Component(name, ParamValues()),
      fabric_(fabric),
      memory_(memory),
      node_(node),
      config_(config) {
  if (config_.chunk_bytes == 0 || config_.max_outstanding_reads == 0 ||
      config_.max_outstanding_writes == 0) {
    throw std::invalid_argument("dma engine: chunk size and outstanding limits must be positive");
  }
}

bool DmaEngine::local(std::uint64_t addr, std::uint64_t len) const {
  const Region* region = memory_.find(addr, std::max<std::uint64_t>(len, 1));
  if (region == nullptr) {
    throw std::invalid_argument("dma engine: no region holds the transfer's address range");
  }
  return region->owner == node_;
}

void DmaEngine::copy(std::uint64_t src, std::uint64_t dst, std::uint64_t len, Done done) {
  const bool src_local = local(src, len);
  const bool dst_local = local(dst, len);
  const Mode mode = src_local && dst_local ? Mode::Local
                    : src_local            ? Mode::Push
                    : dst_local            ? Mode::Pull
                                           : Mode::PullPush;
  start(mode, src, dst, len, std::move(done), nullptr);
}

void DmaEngine::write(std::uint64_t dst, std::uint64_t len, Done done, Done issued,
                      std::uint32_t tenant) {
  start(Mode::Push, 0, dst, len, std::move(done), std::move(issued), tenant);
}

void DmaEngine::read(std::uint64_t src, std::uint64_t len, Done done, std::uint32_t tenant) {
  start(Mode::Pull, src, 0, len, std::move(done), nullptr, tenant);
}

void DmaEngine::start(Mode mode, std::uint64_t src, std::uint64_t dst, std::uint64_t len, Done done,
                      Done issued, std::uint32_t tenant) {
  ++transfers_;
  if (mode == Mode::Local || len == 0) {
    // Local copies run in the device's own memory system, which is not modelled here.
    if (issued) issued();
    schedule_in(0, std::move(done));
    return;
  }
  auto job = std::make_shared<Job>();
  job->mode = mode;
  job->src = src;
  job->dst = dst;
  job->len = len;
  job->done = std::move(done);
  job->on_issued = std::move(issued);
  job->tenant = tenant;
  jobs_.push_back(std::move(job));
  pump();
}

// Issues chunks of the queued jobs in order while the outstanding limits allow. Not reentrant:
// a chunk that lands at once (never, with the fabric's latencies, but cheap to guard) only
// frees its slot and lets this loop continue.
void DmaEngine::pump() {
  if (pumping_) return;
  pumping_ = true;
  while (!jobs_.empty()) {
    const std::shared_ptr<Job> job = jobs_.front();
    const bool reads = job->mode != Mode::Push;
    if (reads ? reads_in_flight_ >= config_.max_outstanding_reads
              : writes_in_flight_ >= config_.max_outstanding_writes) {
      if (!waiting_) ++limit_waits_;
      waiting_ = true;
      break;
    }
    waiting_ = false;
    const std::uint64_t offset = job->issued;
    const std::uint64_t remote = (job->mode == Mode::Push ? job->dst : job->src) + offset;
    // A transfer that fits in one chunk is one burst wherever it lies: splitting it at a chunk
    // multiple would only add events (the fabric splits a burst into TLPs exactly either way).
    // A longer one is cut at multiples of the chunk size, so every cut falls on an MPS- and
    // MRRS-aligned address (chunk sizes are multiples of them) and adds no TLP.
    const std::uint64_t chunk =
        job->len <= config_.chunk_bytes
            ? job->len
            : std::min(job->len - offset, config_.chunk_bytes - remote % config_.chunk_bytes);
    job->issued += chunk;
    ++chunks_;
    const auto len = static_cast<std::uint32_t>(chunk);
    auto write_out = [this, job, offset, len](const std::uint8_t* data) {
      ++writes_in_flight_;
      ++write_chunks_;
      max_in_flight_ = std::max(max_in_flight_, reads_in_flight_ + writes_in_flight_);
      fabric_.write(
          node_, job->dst + offset, len, data,
          [this, job, len] {
            --writes_in_flight_;
            landed(job, len);
          },
          job->tenant);
    };
    if (job->mode == Mode::Push) {
      std::vector<std::uint8_t> bytes;
      // Address 0 is never mapped (regions start at 4 GB): it marks the device's own buffer.
      if (config_.move_contents && job->src != 0) {
        bytes.resize(len);
        memory_.read(job->src + offset, bytes.data(), len);
      }
      write_out(bytes.empty() ? nullptr : bytes.data());
    } else {
      ++reads_in_flight_;
      ++read_chunks_;
      max_in_flight_ = std::max(max_in_flight_, reads_in_flight_ + writes_in_flight_);
      fabric_.read(
          node_, job->src + offset, len,
          [this, job, offset, len, write_out](const std::uint8_t* data, std::uint32_t) {
            --reads_in_flight_;
            if (job->mode == Mode::PullPush) {
              write_out(config_.move_contents ? data : nullptr);
              pump();
              return;
            }
            if (config_.move_contents && job->dst != 0) {
              memory_.write(job->dst + offset, data, len);
            }
            landed(job, len);
          },
          job->tenant);
    }
    if (job->issued == job->len) {
      jobs_.pop_front();
      if (job->on_issued) {
        Done issued = std::move(job->on_issued);
        job->on_issued = nullptr;
        issued();
      }
    }
  }
  pumping_ = false;
}

void DmaEngine::landed(const std::shared_ptr<Job>& job, std::uint64_t bytes) {
  bytes_moved_ += bytes;
  job->completed += bytes;
  // The slot is free: issue more before the callback, which may queue the next transfer.
  pump();
  if (job->completed == job->len && job->done) {
    Done done = std::move(job->done);
    job->done = nullptr;
    done();
  }
}

nlohmann::json DmaEngine::statistics() const {
  return {{"bytes", bytes_moved_},
          {"transfers", transfers_},
          {"chunks", chunks_},
          {"read_chunks", read_chunks_},
          {"write_chunks", write_chunks_},
          {"max_in_flight", max_in_flight_},
          {"limit_waits", limit_waits_},
          {"chunk_bytes", config_.chunk_bytes},
          {"outstanding_reads", config_.max_outstanding_reads},
          {"outstanding_writes", config_.max_outstanding_writes}};
}

}  // namespace gpunvme::pcie
