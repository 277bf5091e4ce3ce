#include "models/host/nvme_driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "sim/core/protocol/nvme_batch_completion.h"
#include "sim/core/protocol/nvme_queue.h"

namespace gpunvme::host {

namespace {
// The driver polls CSTS.RDY back to back, 1 us apart, as SPDK's controller
// state machine does from its admin poller (Linux sleeps 1-2 ms between
// reads, which would dwarf a short ready delay).
constexpr Picoseconds kReadyPollInterval = 1'000'000;
// A core polling its admin CQ in DRAM sees a DMA-written entry one cache
// miss after it lands (estimate: one DRAM load, ~100 ns).
constexpr Picoseconds kCompletionNotice = 100'000;
constexpr std::uint32_t kIdentifyBytes = 4096;
}  // namespace

const char* to_string(QueuePlacement placement) {
  switch (placement) {
    case QueuePlacement::host: return "host";
    case QueuePlacement::gpu: return "gpu";
    case QueuePlacement::cmb: return "cmb";
  }
  return "host";
}

QueuePlacement queue_placement_from_string(const std::string& name) {
  if (name == "host") return QueuePlacement::host;
  if (name == "gpu") return QueuePlacement::gpu;
  if (name == "cmb") return QueuePlacement::cmb;
  throw std::invalid_argument("queue placement '" + name + "' is not host, gpu or cmb");
}

NvmeDriver::NvmeDriver(const sc_core::sc_module_name& name, nvme::Controller& controller,
                       pcie::Fabric& fabric, MemorySpace& memory, std::size_t cpu_node,
                       std::size_t host_memory_node, gpu::Gpu* gpu)
    : Component(name, ParamValues{}),
      controller_(controller),
      fabric_(fabric),
      memory_(memory),
      cpu_node_(cpu_node),
      host_memory_node_(host_memory_node),
      gpu_(gpu) {
  if (controller.cmb() != nullptr) cmb_next_ = controller.cmb()->base;
}

void NvmeDriver::fail(const std::string& what) const {
  throw std::runtime_error(fmt::format("{}: bring-up of {} failed at {:.3f} ns: {}", id(),
                                       controller_.id(), ps_to_ns(now()), what));
}

std::uint64_t NvmeDriver::allocate(QueuePlacement placement, std::uint64_t bytes,
                                   std::uint64_t alignment) {
  bytes = std::max<std::uint64_t>(bytes, 1);
  if (placement == QueuePlacement::host && host_memory_node_ == kNoHostMemory) {
    placement = QueuePlacement::gpu;
  }
  switch (placement) {
    case QueuePlacement::host:
      // A region of its own, owned by the host memory node, so the fabric
      // routes accesses to that memory.
      return memory_
          .allocate(bytes, host_memory_node_, RegionKind::HostMemory,
                    fmt::format("{}.{}", id(), "host"), alignment)
          .base;
    case QueuePlacement::gpu:
      if (gpu_ == nullptr) {
        throw std::invalid_argument(id() + ": queue placement gpu needs a GPU");
      }
      return gpu_->allocate(bytes, alignment);
    case QueuePlacement::cmb: {
      const Region* cmb = controller_.cmb();
      if (cmb == nullptr) {
        throw std::invalid_argument(controller_.id() +
                                    " has no controller memory buffer (cmb_mib = 0)");
      }
      const std::uint64_t base = (cmb_next_ + alignment - 1) / alignment * alignment;
      if (base + bytes > cmb->base + cmb->size) {
        throw std::invalid_argument(
            fmt::format("{}: its {} MiB CMB is full", controller_.id(), cmb->size >> 20));
      }
      cmb_next_ = base + bytes;
      return base;
    }
  }
  return 0;
}

// ---------------------------------------------------------------------------
// Operations run one after another
// ---------------------------------------------------------------------------

void NvmeDriver::enqueue(Operation operation) {
  operations_.push_back(std::move(operation));
  if (busy_) return;
  busy_ = true;
  schedule_at(now(), [this] { run_next(); });
}

void NvmeDriver::run_next() {
  if (operations_.empty()) {
    busy_ = false;
    return;
  }
  Operation operation = std::move(operations_.front());
  operations_.pop_front();
  operation([this] { schedule_at(now(), [this] { run_next(); }); });
}

// ---------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------

void NvmeDriver::read_register(std::uint32_t offset, std::uint32_t bytes,
                               std::function<void(std::uint64_t)> done) {
  ++mmio_reads_;
  fabric_.read(cpu_node_, controller_.registers().base + offset, bytes,
               [done = std::move(done)](const std::uint8_t* data, std::uint32_t len) {
                 std::uint64_t value = 0;
                 std::memcpy(&value, data, std::min<std::uint32_t>(len, 8));
                 done(value);
               });
}

void NvmeDriver::write_register(std::uint32_t offset, const void* data, std::uint32_t bytes) {
  fabric_.write(cpu_node_, controller_.registers().base + offset, bytes, data, nullptr);
}

void NvmeDriver::wait_ready(bool ready, Done done) {
  read_register(nvme::reg::kCsts, 4, [this, ready, done](std::uint64_t value) {
    const nvme::Csts csts = nvme::Csts::decode(static_cast<std::uint32_t>(value));
    if (csts.cfs) fail("CSTS.CFS set: the controller refused its configuration");
    if (csts.rdy == ready) {
      done();
      return;
    }
    schedule_in(kReadyPollInterval, [this, ready, done] { wait_ready(ready, done); });
  });
}

// ---------------------------------------------------------------------------
// Bring-up
// ---------------------------------------------------------------------------

void NvmeDriver::bring_up(const BringUpOptions& options, Done done) {
  options_ = options;
  options_.io_queues = std::max<std::uint16_t>(options_.io_queues, 1);
  enqueue([this, done](Done next) {
    read_register(nvme::reg::kCap, 8, [this, done, next](std::uint64_t cap) {
      info_.cap = nvme::Cap::decode(cap);
      if (options_.weighted_round_robin &&
          (info_.cap.ams & nvme::kCapAmsWeightedRoundRobinUrgent) == 0) {
        fail("weighted round robin asked for, but CAP.AMS does not offer it");
      }
      read_register(nvme::reg::kVs, 4, [this, done, next](std::uint64_t vs) {
        info_.version = static_cast<std::uint32_t>(vs);
        read_register(nvme::reg::kCc, 4, [this, done, next](std::uint64_t cc_value) {
          auto configure = [this, done, next] {
            // Admin queue pair in host memory, then enable.
            admin_entries_ =
                std::clamp<std::uint32_t>(options_.admin_entries, 2, nvme::kMaxAdminQueueEntries);
            admin_entries_ = std::min(admin_entries_, info_.cap.max_queue_entries());
            asq_ = allocate(QueuePlacement::host, std::uint64_t{admin_entries_} * 64);
            acq_ = allocate(QueuePlacement::host, std::uint64_t{admin_entries_} * 16);
            sq_tail_ = sq_head_ = cq_head_ = 0;
            cq_phase_ = 1;
            const std::uint32_t aqa = nvme::Aqa{admin_entries_, admin_entries_}.encode();
            write_register(nvme::reg::kAqa, &aqa, 4);
            write_register(nvme::reg::kAsq, &asq_, 8);
            write_register(nvme::reg::kAcq, &acq_, 8);
            nvme::Cc cc{};
            cc.en = true;
            cc.css = 0;
            cc.mps = 0;
            cc.ams = options_.weighted_round_robin ? nvme::kCcAmsWeightedRoundRobinUrgent
                                                   : nvme::kCcAmsRoundRobin;
            cc.iosqes = nvme::kSqEntrySizeLog2;
            cc.iocqes = nvme::kCqEntrySizeLog2;
            const std::uint32_t enable = cc.encode();
            write_register(nvme::reg::kCc, &enable, 4);
            wait_ready(true, [this, done, next] {
              if (options_.interrupts) {
                msix_base_ =
                    allocate(QueuePlacement::host, std::uint64_t{controller_.msix_vectors()} * 4);
                controller_.set_msix_vector(0, msix_base_, 0);
              }
              identify([this, done, next] {
                std::vector<nvme::SubmissionEntry> setup;
                setup.push_back(nvme::make_set_features_num_queues(
                    0, static_cast<std::uint16_t>(options_.io_queues - 1),
                    static_cast<std::uint16_t>(options_.io_queues - 1)));
                if (options_.set_arbitration) {
                  const nvme::Arbitration& a = options_.arbitration;
                  setup.push_back(nvme::make_set_features_arbitration(
                      0, a.burst_log2, a.low_weight_zero_based, a.medium_weight_zero_based,
                      a.high_weight_zero_based));
                }
                submit_batch(
                    std::move(setup), [this, done, next](std::vector<nvme::CompletionEntry> r) {
                      if (!r[0].ok()) {
                        fail(fmt::format("Set Features Number of Queues: {}",
                                         nvme::status_name(r[0].status())));
                      }
                      const nvme::NumQueues granted = nvme::decode_num_queues(r[0].dw0);
                      info_.io_sqs_granted = granted.sq_count();
                      info_.io_cqs_granted = granted.cq_count();
                      if (r.size() > 1 && !r[1].ok()) {
                        fail(fmt::format("Set Features Arbitration: {}",
                                         nvme::status_name(r[1].status())));
                      }
                      auto finish = [done, next] {
                        if (done) done();
                        next();
                      };
                      if (!options_.shadow_doorbells) {
                        finish();
                        return;
                      }
                      if (!info_.shadow_doorbells) {
                        fail(
                            "shadow doorbells asked for, but Identify OACS lacks Doorbell Buffer "
                            "Config");
                      }
                      const std::uint64_t bytes =
                          2ull * (std::max(info_.io_sqs_granted, info_.io_cqs_granted) + 1) *
                          info_.cap.doorbell_stride_bytes();
                      shadow_base_ = allocate(options_.shadow_placement, bytes);
                      event_idx_base_ = allocate(options_.shadow_placement, bytes);
                      submit_batch(
                          {nvme::make_doorbell_buffer_config(0, shadow_base_, event_idx_base_)},
                          [this, finish](std::vector<nvme::CompletionEntry> c) {
                            if (!c[0].ok()) {
                              fail(fmt::format("Doorbell Buffer Config: {}",
                                               nvme::status_name(c[0].status())));
                            }
                            finish();
                          });
                    });
              });
            });
          };
          // A controller left enabled is reset first (CC.EN = 0, wait for
          // CSTS.RDY = 0).
          if (nvme::Cc::decode(static_cast<std::uint32_t>(cc_value)).en) {
            const std::uint32_t disabled = 0;
            write_register(nvme::reg::kCc, &disabled, 4);
            wait_ready(false, configure);
          } else {
            configure();
          }
        });
      });
    });
  });
}

void NvmeDriver::identify(Done done) {
  const std::uint64_t ctrl = allocate(QueuePlacement::host, kIdentifyBytes);
  const std::uint64_t ns = allocate(QueuePlacement::host, kIdentifyBytes);
  submit_batch({nvme::make_identify(0, nvme::IdentifyCns::Controller, 0, ctrl),
                nvme::make_identify(0, nvme::IdentifyCns::Namespace, 1, ns)},
               [this, ctrl, ns, done](std::vector<nvme::CompletionEntry> r) {
                 if (!r[0].ok())
                   fail(fmt::format("Identify Controller: {}", status_name(r[0].status())));
                 if (!r[1].ok())
                   fail(fmt::format("Identify Namespace: {}", status_name(r[1].status())));
                 const auto mdts = memory_.load<std::uint8_t>(ctrl + nvme::kIdentifyCtrlMdtsOffset);
                 info_.max_transfer_bytes = mdts == 0 ? 0 : info_.cap.min_page_size() << mdts;
                 const auto oacs = memory_.load<std::uint16_t>(ctrl + 256);
                 info_.shadow_doorbells = (oacs & (1u << 8)) != 0;
                 info_.volatile_write_cache = (memory_.load<std::uint8_t>(ctrl + 525) & 1u) != 0;
                 const auto sgls =
                     memory_.load<std::uint32_t>(ctrl + nvme::kIdentifyCtrlSglsOffset);
                 info_.sgl_supported = (sgls & 0x3u) != 0;
                 info_.capacity_lbas = memory_.load<std::uint64_t>(ns + 0);
                 const auto flbas = memory_.load<std::uint8_t>(ns + 26) & 0xFu;
                 const auto lbaf = memory_.load<std::uint32_t>(ns + 128 + 4 * flbas);
                 info_.lba_bytes = 1u << ((lbaf >> 16) & 0xFFu);
                 done();
               });
}

// ---------------------------------------------------------------------------
// I/O queues
// ---------------------------------------------------------------------------

void NvmeDriver::create_io_queues(std::vector<IoQueueSpec> specs,
                                  std::function<void(std::vector<IoQueue>)> done) {
  enqueue([this, specs = std::move(specs), done](Done next) {
    auto queues = std::make_shared<std::vector<IoQueue>>();
    std::vector<nvme::SubmissionEntry> create_cqs;
    for (const IoQueueSpec& spec : specs) {
      IoQueue q;
      q.qid = spec.qid;
      q.entries = spec.entries;
      q.sq_base = spec.sq_base != 0
                      ? spec.sq_base
                      : allocate(spec.placement, std::uint64_t{spec.entries} * nvme::kSqEntrySize);
      q.cq_base = spec.cq_base != 0
                      ? spec.cq_base
                      : allocate(spec.placement, std::uint64_t{spec.entries} * nvme::kCqEntrySize);
      q.sq_doorbell = controller_.doorbell_address(true, spec.qid);
      q.cq_doorbell = controller_.doorbell_address(false, spec.qid);
      const std::uint16_t vector = spec.vector != 0 ? spec.vector : spec.qid;
      if (spec.interrupts && msix_base_ != 0 && vector < controller_.msix_vectors()) {
        controller_.set_msix_vector(vector, msix_base_ + 4ull * vector, vector);
      }
      create_cqs.push_back(nvme::make_create_io_cq(0, spec.qid, spec.entries, q.cq_base, true,
                                                   spec.interrupts, spec.interrupts ? vector : 0,
                                                   spec.indexed_completion));
      if (spec.completion_bitmap != 0) {
        create_cqs.back() = nvme::with_batch_completion(create_cqs.back(), spec.completion_bitmap,
                                                        spec.bitmap_cids);
      }
      queues->push_back(q);
    }
    submit_batch(std::move(create_cqs),
                 [this, specs, queues, done, next](std::vector<nvme::CompletionEntry> cqs) {
                   std::vector<nvme::SubmissionEntry> create_sqs;
                   std::vector<std::size_t> index;
                   for (std::size_t i = 0; i < specs.size(); ++i) {
                     (*queues)[i].status = cqs[i].status();
                     if (!cqs[i].ok()) continue;
                     create_sqs.push_back(nvme::make_create_io_sq(
                         0, specs[i].qid, specs[i].entries, (*queues)[i].sq_base, specs[i].qid,
                         specs[i].priority, true, specs[i].warp_doorbells, specs[i].wide_cids));
                     index.push_back(i);
                   }
                   auto finish = [queues, done, next] {
                     if (done) done(*queues);
                     next();
                   };
                   if (create_sqs.empty()) {
                     finish();
                     return;
                   }
                   submit_batch(std::move(create_sqs),
                                [queues, index, finish](std::vector<nvme::CompletionEntry> sqs) {
                                  for (std::size_t k = 0; k < index.size(); ++k) {
                                    (*queues)[index[k]].status = sqs[k].status();
                                  }
                                  finish();
                                });
                 });
  });
}

void NvmeDriver::delete_io_queue_pair(std::uint16_t qid, std::function<void(nvme::Status)> done) {
  enqueue([this, qid, done](Done next) {
    submit_batch({nvme::make_delete_io_sq(0, qid)},
                 [this, qid, done, next](std::vector<nvme::CompletionEntry> sq) {
                   if (!sq[0].ok()) {
                     if (done) done(sq[0].status());
                     next();
                     return;
                   }
                   submit_batch({nvme::make_delete_io_cq(0, qid)},
                                [done, next](std::vector<nvme::CompletionEntry> cq) {
                                  if (done) done(cq[0].status());
                                  next();
                                });
                 });
  });
}

void NvmeDriver::admin(const nvme::SubmissionEntry& sqe, AdminDone done) {
  enqueue([this, sqe, done](Done next) {
    submit_batch({sqe}, [done, next](std::vector<nvme::CompletionEntry> r) {
      if (done) done(r[0]);
      next();
    });
  });
}

std::uint64_t NvmeDriver::shadow_doorbell(nvme::DoorbellKind kind, std::uint16_t qid) const {
  return shadow_base_ + nvme::shadow_doorbell_offset(kind, qid, info_.cap.dstrd);
}

std::uint64_t NvmeDriver::event_idx(nvme::DoorbellKind kind, std::uint16_t qid) const {
  return event_idx_base_ + nvme::shadow_doorbell_offset(kind, qid, info_.cap.dstrd);
}

// ---------------------------------------------------------------------------
// Admin queue
// ---------------------------------------------------------------------------

// Writes the batch's entries into the admin SQ (CPU stores to host memory)
// as far as the ring has room, rings the SQ tail doorbell once, and calls
// back when every entry has completed.
void NvmeDriver::submit_batch(std::vector<nvme::SubmissionEntry> sqes,
                              std::function<void(std::vector<nvme::CompletionEntry>)> done) {
  auto batch = std::make_shared<Batch>();
  batch->results.resize(sqes.size());
  batch->left = sqes.size();
  batch->done = std::move(done);
  for (std::size_t i = 0; i < sqes.size(); ++i) backlog_.push_back({sqes[i], {batch, i}});
  push_backlog();
}

void NvmeDriver::push_backlog() {
  bool rung = false;
  while (!backlog_.empty() && nvme::ring_free_slots(sq_head_, sq_tail_, admin_entries_) > 0) {
    auto [sqe, target] = backlog_.front();
    backlog_.pop_front();
    while (outstanding_.count(next_cid_) != 0) ++next_cid_;
    const std::uint16_t cid = next_cid_++;
    sqe.set_cid(cid);
    outstanding_[cid] = target;
    memory_.write(asq_ + std::uint64_t{sq_tail_} * nvme::kSqEntrySize, &sqe, sizeof sqe);
    sq_tail_ = nvme::ring_next(sq_tail_, admin_entries_);
    ++admin_commands_;
    rung = true;
  }
  if (rung) {
    const std::uint32_t tail = sq_tail_;
    fabric_.write(cpu_node_, controller_.doorbell_address(true, nvme::kAdminQueueId), 4, &tail,
                  nullptr);
    arm_completion_watch();
  }
}

void NvmeDriver::arm_completion_watch() {
  if (cq_watch_ != 0 || outstanding_.empty()) return;
  cq_watch_ = memory_.watch(acq_, std::uint64_t{admin_entries_} * nvme::kCqEntrySize, [this] {
    cq_watch_ = 0;
    if (drain_scheduled_) return;
    drain_scheduled_ = true;
    schedule_in(kCompletionNotice, [this] { drain_admin_cq(); });
  });
}

void NvmeDriver::drain_admin_cq() {
  drain_scheduled_ = false;
  bool consumed = false;
  std::vector<std::shared_ptr<Batch>> finished;
  for (;;) {
    const std::uint64_t addr = acq_ + std::uint64_t{cq_head_} * nvme::kCqEntrySize;
    const auto cqe = memory_.load<nvme::CompletionEntry>(addr);
    if (cqe.phase() != cq_phase_) break;
    consumed = true;
    cq_head_ = nvme::ring_next(cq_head_, admin_entries_);
    if (cq_head_ == 0) cq_phase_ ^= 1u;
    sq_head_ = cqe.sqhd;
    auto it = outstanding_.find(cqe.cid);
    if (it == outstanding_.end()) {
      fail(fmt::format("admin completion for CID {} that is not outstanding", cqe.cid));
    }
    auto [batch, index] = it->second;
    outstanding_.erase(it);
    batch->results[index] = cqe;
    if (--batch->left == 0) finished.push_back(batch);
  }
  if (consumed) {
    const std::uint32_t head = cq_head_;
    fabric_.write(cpu_node_, controller_.doorbell_address(false, nvme::kAdminQueueId), 4, &head,
                  nullptr);
  }
  push_backlog();
  arm_completion_watch();
  for (const auto& batch : finished) batch->done(batch->results);
}

}  // namespace gpunvme::host
