#include "models/pcie/dma_engine.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace gpunvme::pcie {

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
  start(mode, src, dst, len, std::move(done));
}

void DmaEngine::write(std::uint64_t dst, std::uint64_t len, Done done) {
  start(Mode::Push, 0, dst, len, std::move(done));
}

void DmaEngine::read(std::uint64_t src, std::uint64_t len, Done done) {
  start(Mode::Pull, src, 0, len, std::move(done));
}

void DmaEngine::start(Mode mode, std::uint64_t src, std::uint64_t dst, std::uint64_t len,
                      Done done) {
  if (mode == Mode::Local || len == 0) {
    // Local copies run in the device's own memory system, which is not modelled here.
    schedule_in(0, std::move(done));
    return;
  }
  auto job = std::make_shared<Job>();
  job->mode = mode;
  job->src = src;
  job->dst = dst;
  job->len = len;
  job->done = std::move(done);
  jobs_.push_back(std::move(job));
  pump();
}

// Issues chunks of the queued jobs in order while the outstanding limits allow.
void DmaEngine::pump() {
  for (const std::shared_ptr<Job>& job : jobs_) {
    while (job->issued < job->len) {
      const bool reads = job->mode != Mode::Push;
      if (reads ? reads_in_flight_ >= config_.max_outstanding_reads
                : writes_in_flight_ >= config_.max_outstanding_writes) {
        return;
      }
      const std::uint64_t offset = job->issued;
      const std::uint64_t remote = (job->mode == Mode::Push ? job->dst : job->src) + offset;
      const std::uint64_t chunk =
          std::min(job->len - offset, config_.chunk_bytes - remote % config_.chunk_bytes);
      job->issued += chunk;
      ++chunks_;
      const auto len = static_cast<std::uint32_t>(chunk);
      auto write_out = [this, job, offset, len](const std::uint8_t* data) {
        ++writes_in_flight_;
        fabric_.write(node_, job->dst + offset, len, data, [this, job, len] {
          --writes_in_flight_;
          job->completed += len;
          landed(len);
        });
      };
      if (job->mode == Mode::Push) {
        std::vector<std::uint8_t> bytes;
        // Address 0 is never mapped (regions start at 4 GB): it marks the device's own buffer.
        if (config_.move_contents && job->src != 0) {
          bytes.resize(len);
          memory_.read(job->src + offset, bytes.data(), len);
        }
        write_out(bytes.empty() ? nullptr : bytes.data());
        continue;
      }
      ++reads_in_flight_;
      fabric_.read(node_, job->src + offset, len,
                   [this, job, offset, len, write_out](const std::uint8_t* data, std::uint32_t) {
                     --reads_in_flight_;
                     if (job->mode == Mode::PullPush) {
                       write_out(config_.move_contents ? data : nullptr);
                       landed(0);
                       return;
                     }
                     if (config_.move_contents && job->dst != 0) {
                       memory_.write(job->dst + offset, data, len);
                     }
                     job->completed += len;
                     landed(len);
                   });
    }
  }
}

void DmaEngine::landed(std::uint64_t bytes) {
  bytes_moved_ += bytes;
  // Jobs finish in the order their last bytes land. Their callbacks run after the queue has been
  // updated: a callback may queue the next transfer.
  std::vector<Done> finished;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if ((*it)->completed == (*it)->len) {
      finished.push_back(std::move((*it)->done));
      it = jobs_.erase(it);
    } else {
      ++it;
    }
  }
  pump();
  for (Done& done : finished) {
    if (done) done();
  }
}

nlohmann::json DmaEngine::statistics() const {
  return {{"bytes", bytes_moved_}, {"chunks", chunks_}, {"queued_transfers", jobs_.size()}};
}

}  // namespace gpunvme::pcie
