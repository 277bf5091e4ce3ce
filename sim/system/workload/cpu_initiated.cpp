#include "sim/system/workload/cpu_initiated.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "models/cxl/cxl_memory.h"
#include "models/host/host_specs.h"
#include "models/pcie/routing.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_queue.h"
#include "sim/kernel/params/config_error.h"
#include "sim/system/workload/scenario_spec.h"

namespace gpunvme {

namespace {
constexpr std::uint32_t kBounceChunk = 4096;  // bounce buffers per host region
constexpr std::uint32_t kRingSlots = 4096;    // 64 B request slots per core ring
constexpr std::uint32_t kRequestBytes = 64;   // one request descriptor
constexpr std::uint32_t kFlagWords = 4096;    // GPU completion flags (4 B each), reused
constexpr std::uint64_t kPage = nvme::kMinPageSize;

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) { return (v + to - 1) / to * to; }

std::size_t cpu_node_for(const RunConfig& config, const Machine& machine, std::size_t memory) {
  const std::string named = ScenarioParams::from(config.scenario.params).cpu;
  if (!named.empty()) return machine.node_index(named);
  const std::string& socket =
      pcie::HostMemoryParams::from(machine.topology().nodes[memory].params).socket;
  return machine.node_index(socket);
}
}  // namespace

CpuInitiatedPath::CpuInitiatedPath(const sc_core::sc_module_name& name, const RunConfig& config,
                                   Machine& machine, Mode mode, std::uint64_t max_io_bytes,
                                   const nvmf::TargetSite* target)
    : Component(name, ParamValues{}),
      config_(config),
      machine_(machine),
      mode_(mode),
      gpu_(machine.gpu(ScenarioParams::from(config.scenario.params).gpu)),
      max_io_bytes_(max_io_bytes),
      buffer_stride_(round_up(std::max<std::uint64_t>(max_io_bytes, 1), kPage)),
      from_gpu_(mode != Mode::Target &&
                ScenarioParams::from(config.scenario.params).request_origin == RequestOrigin::gpu),
      cores_(std::make_shared<host::CpuCores>(1)),
      stages_({"request_signal", "copy_to_host", "cpu_submit", "completion_wait", "cpu_completion",
               "copy_to_gpu", "delivery"},
              kSubmitted) {
  const ScenarioParams s = ScenarioParams::from(config.scenario.params);
  const std::vector<std::string> ssd_ids =
      mode == Mode::Target && target != nullptr && !target->ssds.empty() ? target->ssds : s.ssds;
  const HostSide side = nearest_host_side(machine, machine.node_index(ssd_ids.front()));
  memory_node_ = side.memory;
  buffer_node_ = mode == Mode::Bounce && !s.host_buffers.empty()
                     ? machine.node_index(s.host_buffers)
                     : memory_node_;
  if (mode == Mode::Target) {
    if (target == nullptr) throw std::logic_error("an NVMe-oF target path needs its parameters");
    // The target runs on the storage host's socket, whatever cpu the scenario names.
    cpu_node_ = machine.node_index(
        pcie::HostMemoryParams::from(machine.topology().nodes[memory_node_].params).socket);
  } else {
    cpu_node_ = cpu_node_for(config, machine, memory_node_);
  }
  const NodeConfig& cpu = machine.topology().nodes[cpu_node_];
  costs_ = host::cpu_io_costs(cpu.params);
  cores_ = std::make_shared<host::CpuCores>(
      static_cast<std::uint32_t>(host::CpuParams::from(cpu.params).cores));
  mmio_node_ = cpu_node_;
  if (mode == Mode::Target) {
    // SPDK's poll groups (or the DPU's, or the NIC's contexts): one figure
    // of time per I/O, polled.
    costs_ = host::CpuIoCosts{};
    costs_.submit = target->io_time / 2;
    costs_.complete_poll = target->io_time - target->io_time / 2;
    // Every path served by one target (tenants reading one storage host)
    // queues on the same servers: the cores of the DPU or host that runs it.
    const auto servers = static_cast<std::uint32_t>(target->servers);
    cores_ = target->node == nvmf::TargetSite::npos
                 ? std::make_shared<host::CpuCores>(servers)
                 : machine.shared_model<host::CpuCores>(
                       fmt::format("target_servers:{}", target->node),
                       [servers] { return new host::CpuCores(servers); });
    if (target->mmio_node != nvmf::TargetSite::npos) mmio_node_ = target->mmio_node;
    if (target->memory_node != nvmf::TargetSite::npos) memory_node_ = target->memory_node;
  }
  // The target's queues stay in its host's memory; gds and bounce put theirs where the
  // scenario says.
  report_queue_memory_ = mode != Mode::Target && !s.host_queues.empty();
  queue_node_ = report_queue_memory_ ? machine.node_index(s.host_queues) : memory_node_;
  ring_node_ = queue_node_;
  reference_memory_ = core_timing(memory_node_);
  core_state_.resize(cores_->size());
  for (Core& c : core_state_) {
    c.ring = machine.memory()
                 .allocate(std::uint64_t{kRingSlots} * kRequestBytes, ring_node_,
                           RegionKind::HostMemory, fmt::format("{}.ring", id()), 4096)
                 .base;
  }
  gpu_flags_ = gpu_.allocate(std::uint64_t{kFlagWords} * 4, 128);

  // Whether each SSD's commands pay an IOMMU mapping: the platform setting,
  // or (auto) whether the SSD's DMA to host memory is translated.
  const host::IommuDmaMap map = host::CpuParams::from(cpu.params).iommu_dma_map;
  const pcie::Router& router = machine.fabric().router();
  for (const std::string& id : ssd_ids) {
    ssds_.push_back(&machine.ssd(id));
    bool translated = router.resolve(machine.node_index(id), buffer_node_).translated_by !=
                      pcie::ResolvedPath::npos;
    dma_map_.push_back(map == host::IommuDmaMap::on ||
                       (map == host::IommuDmaMap::auto_ && translated));
  }
  queues_per_ssd_ = static_cast<std::uint32_t>(s.queues);
  for (std::size_t k = 0; k < ssds_.size(); ++k) {
    if (!ssds_[k]->may_lose_commands()) {
      watchdogs_.push_back(nullptr);
      continue;
    }
    // The driver aborts a command that outlived io_timeout (Linux's
    // nvme_timeout); the controller completes it if it had lost it.
    watchdogs_.push_back(std::make_unique<CommandWatchdog>(
        *this, ssds_[k]->io_timeout(), [this, k](std::uint32_t queue, std::uint16_t cid) {
          drivers_[k]->admin(nvme::make_abort(0, queues_[queue].qid, cid),
                             [](const nvme::CompletionEntry&) {});
        }));
  }
}

CpuInitiatedPath::~CpuInitiatedPath() {
  for (Queue& q : queues_) machine_.memory().cancel(q.arrival_watch);
}

std::string CpuInitiatedPath::strategy() const {
  return costs_.interrupts ? "host_interrupt" : "host_polling";
}

void CpuInitiatedPath::start(std::function<void()> ready) {
  ready_ = std::move(ready);
  const ScenarioParams s = ScenarioParams::from(config_.scenario.params);
  const auto entries = static_cast<std::uint32_t>(s.queue_entries);
  queues_.resize(std::size_t{queues_per_ssd_} * ssds_.size());
  for (std::size_t k = 0; k < ssds_.size(); ++k) {
    nvme::Controller& ssd = *ssds_[k];
    host::NvmeDriver* shared = machine_.shared_driver(ssd.id());
    if (shared == nullptr) {
      own_drivers_.push_back(std::make_unique<host::NvmeDriver>(
          fmt::format("{}_host_driver", ssd.id()).c_str(), ssd, machine_.fabric(),
          machine_.memory(), mmio_node_, queue_node_, &gpu_));
    }
    drivers_.push_back(shared != nullptr ? shared : own_drivers_.back().get());
    host::NvmeDriver& driver = *drivers_.back();
    if (shared == nullptr) {
      host::BringUpOptions bring_up;
      bring_up.io_queues = static_cast<std::uint16_t>(queues_per_ssd_);
      bring_up.interrupts = true;
      driver.bring_up(bring_up, nullptr);
    }
    const std::uint16_t first_qid = config_.qos.qid_base(ssd.id());
    std::vector<host::IoQueueSpec> specs;
    for (std::uint32_t i = 0; i < queues_per_ssd_; ++i) {
      host::IoQueueSpec spec;
      spec.qid = static_cast<std::uint16_t>(first_qid + i);
      spec.priority = static_cast<nvme::QueuePriority>(config_.qos.priority);
      spec.entries = entries;
      spec.placement = host::QueuePlacement::host;
      spec.interrupts = costs_.interrupts;
      spec.vector =
          static_cast<std::uint16_t>(std::min<std::uint32_t>(spec.qid, ssd.msix_vectors() - 1));
      specs.push_back(spec);
    }
    driver.create_io_queues(std::move(specs), [this, k](std::vector<host::IoQueue> created) {
      for (std::uint32_t i = 0; i < created.size(); ++i) {
        const host::IoQueue& c = created[i];
        if (c.status != nvme::Status::Success) {
          throw std::runtime_error(fmt::format("{}: Create I/O queue {} failed: {}", ssds_[k]->id(),
                                               c.qid, nvme::status_name(c.status)));
        }
        const std::uint32_t index = static_cast<std::uint32_t>(k) * queues_per_ssd_ + i;
        Queue& q = queues_[index];
        q.ssd = static_cast<std::uint32_t>(k);
        q.qid = c.qid;
        q.core = i % cores_->size();
        q.entries = c.entries;
        q.sq_base = c.sq_base;
        q.cq_base = c.cq_base;
        q.sq_doorbell = c.sq_doorbell;
        q.cq_doorbell = c.cq_doorbell;
        const Region* queue_region = machine_.memory().find(c.sq_base);
        q.memory = queue_region != nullptr ? queue_region->owner : queue_node_;
        q.tags.clear();
        for (std::uint32_t t = c.entries - 1; t-- > 0;)
          q.tags.push_back(static_cast<std::uint16_t>(t));
        q.tag_request.assign(c.entries, 0);
        q.written.assign(c.entries, false);
        if (max_io_bytes_ > 2 * kPage) {
          q.prp_lists =
              drivers_[k]->allocate(host::QueuePlacement::host, std::uint64_t{c.entries} * kPage);
        }
        if (costs_.interrupts) {
          // The controller posts this queue's MSI-X messages to a host word
          // (PCIe traffic as on a real platform); when the core is
          // interrupted follows the driver's Interrupt Coalescing setting,
          // applied to the entries as they land (arm_arrival).
          q.irq_word = drivers_[k]->allocate(host::QueuePlacement::host, 64, 64);
          const auto vector = static_cast<std::uint16_t>(
              std::min<std::uint32_t>(c.qid, ssds_[k]->msix_vectors() - 1));
          ssds_[k]->set_msix_vector(vector, q.irq_word, c.qid);
          q.coalescer =
              host::InterruptCoalescer(costs_.coalescing_threshold, costs_.coalescing_time_units);
        }
        arm_arrival(index);
      }
      if (++drivers_ready_ == drivers_.size() && ready_) ready_();
    });
  }
}

std::uint32_t CpuInitiatedPath::allocate_request() {
  if (!free_requests_.empty()) {
    const std::uint32_t r = free_requests_.back();
    free_requests_.pop_back();
    return r;
  }
  requests_.emplace_back();
  return static_cast<std::uint32_t>(requests_.size() - 1);
}

std::uint64_t CpuInitiatedPath::bounce_buffer(std::uint32_t request) {
  const std::uint32_t chunk = request / kBounceChunk;
  while (bounce_chunks_.size() <= chunk) {
    bounce_chunks_.push_back(machine_.memory()
                                 .allocate(std::uint64_t{kBounceChunk} * buffer_stride_,
                                           buffer_node_, RegionKind::HostMemory,
                                           fmt::format("{}.bounce", id()), 4096)
                                 .base);
  }
  return bounce_chunks_[chunk] + std::uint64_t{request % kBounceChunk} * buffer_stride_;
}

void CpuInitiatedPath::submit(const BlockIo& io, IoDone done) {
  const std::uint32_t r = allocate_request();
  Request& req = requests_[r];
  req.io = io;
  req.done = std::move(done);
  std::fill(std::begin(req.times), std::end(req.times), PathStages::kNotReached);
  req.times[kRequested] = now();
  ++submitted_;
  const std::uint32_t core = io.issuer % cores_->size();
  if (!from_gpu_) {
    req.times[kNoticed] = now();
    noticed(r);
    return;
  }
  // Step 1: the GPU thread posts its request to the core's ring; the polling
  // core sees it one cache miss after it lands.
  Core& c = core_state_[core];
  const std::uint64_t slot = c.ring + (c.posted++ % kRingSlots) * kRequestBytes;
  machine_.fabric().write(gpu_.node(), slot, kRequestBytes, nullptr, [this, r] {
    // The polling core's load of the descriptor misses into the ring's memory.
    const Picoseconds slower = touch_queue_memory(ring_node_, 1, false);
    schedule_in(costs_.request_wait() + slower, [this, r] {
      requests_[r].times[kNoticed] = now();
      noticed(r);
    });
  });
}

void CpuInitiatedPath::noticed(std::uint32_t r) {
  const Request& req = requests_[r];
  if (mode_ == Mode::Bounce && req.io.write) {
    // A write through a bounce buffer: the core starts a GPU-to-host copy
    // first, and submits once the data is in host memory.
    const std::uint32_t core = req.io.issuer % cores_->size();
    const Picoseconds launched = cores_->book(core, now(), costs_.copy_launch);
    ledger_.add(host::HostCost::copy_launch, costs_.copy_launch);
    ++copies_;
    schedule_at(launched, [this, r, core] {
      const Request& q = requests_[r];
      const std::uint64_t bytes = std::uint64_t{q.io.lbas} * ssds_[q.io.ssd]->lba_bytes();
      machine_.copy_engine(gpu_.id()).write(bounce_buffer(r), bytes, [this, r, core] {
        requests_[r].times[kCopiedIn] = now();
        copy_done(core, [this, r] { ready_to_submit(r); });
      });
    });
    return;
  }
  ready_to_submit(r);
}

// The core learns that a bounce copy has finished (an event query or stream
// synchronisation once the copy engine is done) before it acts on it.
void CpuInitiatedPath::copy_done(std::uint32_t core, std::function<void()> then) {
  const Picoseconds known = cores_->book(core, now(), costs_.copy_sync);
  ledger_.add(host::HostCost::copy_sync, costs_.copy_sync);
  schedule_at(known, std::move(then));
}

void CpuInitiatedPath::ready_to_submit(std::uint32_t r) {
  const std::uint32_t core = requests_[r].io.issuer % cores_->size();
  core_state_[core].waiting.push_back(r);
  kick(core);
}

void CpuInitiatedPath::kick(std::uint32_t core) {
  Core& c = core_state_[core];
  if (c.pass_scheduled || c.waiting.empty()) return;
  c.pass_scheduled = true;
  schedule_at(std::max(now(), cores_->free_at(core)), [this, core] { submission_pass(core); });
}

void CpuInitiatedPath::submission_pass(std::uint32_t core) {
  Core& c = core_state_[core];
  c.pass_scheduled = false;
  // Take every waiting request whose queue has a free tag and SQ room;
  // requests for a full queue wait for its completions.
  struct Claim {
    std::uint32_t request;
    std::uint32_t queue;
    std::uint32_t position;
    std::uint16_t tag;
  };
  std::vector<Claim> claims;
  std::deque<std::uint32_t> blocked;
  Picoseconds work = costs_.syscall;
  // Lines of SQEs and PRP lists the pass stores, per queue memory: the doorbells' write
  // barrier waits until the core owns them all.
  std::map<std::size_t, std::uint64_t> stored_lines;
  while (!c.waiting.empty()) {
    const std::uint32_t r = c.waiting.front();
    c.waiting.pop_front();
    const Request& req = requests_[r];
    const std::uint32_t qi = req.io.ssd * queues_per_ssd_ + core % queues_per_ssd_;
    Queue& q = queues_[qi];
    const bool room = !q.tags.empty() && q.reserved < q.entries - 1;
    if (!room) {
      blocked.push_back(r);
      continue;
    }
    const std::uint16_t tag = q.tags.back();
    q.tags.pop_back();
    ++q.reserved;
    const std::uint32_t position = q.sq_tail++;
    q.tag_request[tag] = r;
    claims.push_back({r, qi, position, tag});
    stored_lines[q.memory] += command_lines(r);
    // The stack's per-command costs: the cuFile call and the GPU buffer's
    // look-up (gds), the file system, the driver's submit, the DMA map.
    work += costs_.file_system + costs_.submit;
    ledger_.add(host::HostCost::file_system, costs_.file_system);
    ledger_.add(host::HostCost::driver_submit, costs_.submit);
    if (mode_ == Mode::Gds) {
      work += costs_.cufile + costs_.buffer_lookup;
      ledger_.add(host::HostCost::cufile, costs_.cufile);
      ledger_.add(host::HostCost::buffer_lookup, costs_.buffer_lookup);
    }
    if (from_gpu_) {
      work += costs_.request;
      ledger_.add(host::HostCost::request, costs_.request);
    }
    if (mapped(req.io.ssd)) {
      work += costs_.dma_map;
      ledger_.add(host::HostCost::dma_map, costs_.dma_map);
      ++mapped_commands_;
    }
  }
  c.waiting = std::move(blocked);
  if (claims.empty()) return;  // a completion will kick this core again
  for (const auto& [node, lines] : stored_lines) {
    const Picoseconds slower = touch_queue_memory(node, lines, true);
    work += slower;
    if (slower != 0) ledger_.add(host::HostCost::memory_stall, slower);
  }
  ++submit_passes_;
  ledger_.add(host::HostCost::syscall, costs_.syscall);
  const Picoseconds end = cores_->book(core, now(), work);
  schedule_at(end, [this, claims = std::move(claims)] {
    std::vector<std::uint32_t> touched;
    for (const Claim& cl : claims) {
      Queue& q = queues_[cl.queue];
      requests_[cl.request].queue = cl.queue;
      requests_[cl.request].slot = cl.tag;
      write_command(q, cl.position % q.entries, cl.request);
      q.written[cl.position % q.entries] = true;
      requests_[cl.request].times[kSubmitted] = now();
      if (watchdogs_[q.ssd]) watchdogs_[q.ssd]->started(cl.queue, cl.tag, now());
      if (std::find(touched.begin(), touched.end(), cl.queue) == touched.end()) {
        touched.push_back(cl.queue);
      }
    }
    // One doorbell per queue, covering every entry written so far in order
    // (a pass of another core sharing the queue may still be writing).
    for (std::uint32_t qi : touched) {
      Queue& q = queues_[qi];
      std::uint32_t published = q.published;
      while (published != q.sq_tail && q.written[published % q.entries]) {
        q.written[published % q.entries] = false;
        ++published;
      }
      if (published == q.published) continue;
      q.published = published;
      const std::uint32_t tail = published % q.entries;
      ++doorbells_;
      machine_.fabric().write(mmio_node_, q.sq_doorbell, 4, &tail, nullptr);
    }
  });
}

void CpuInitiatedPath::write_command(Queue& q, std::uint32_t position, std::uint32_t r) {
  const Request& req = requests_[r];
  const nvme::Controller& ssd = *ssds_[req.io.ssd];
  const std::uint64_t bytes = std::uint64_t{req.io.lbas} * ssd.lba_bytes();
  const std::uint64_t buffer = mode_ == Mode::Gds ? req.io.buffer : bounce_buffer(r);
  const std::uint16_t cid = static_cast<std::uint16_t>(req.slot);
  std::uint64_t prp2 = 0;
  if (bytes > kPage) {
    const std::uint64_t list = q.prp_lists + std::uint64_t{cid} * kPage;
    const std::uint64_t pages[1] = {list};
    MemorySpace& memory = machine_.memory();
    const auto built = nvme::build_prp(
        buffer, bytes, kPage, pages, 1,
        [&](std::uint64_t addr, std::uint64_t value) { memory.store(addr, value); });
    prp2 = built.prp2;
  }
  const auto nlb = static_cast<std::uint16_t>(req.io.lbas - 1);
  const nvme::SubmissionEntry sqe = req.io.write
                                        ? nvme::make_write(cid, 1, req.io.slba, nlb, buffer, prp2)
                                        : nvme::make_read(cid, 1, req.io.slba, nlb, buffer, prp2);
  machine_.memory().write(q.sq_base + std::uint64_t{position} * nvme::kSqEntrySize, &sqe,
                          sizeof sqe);
}

// Each entry's landing is watched in ring order (a callback on the memory
// write, no kernel event): it timestamps the I/O and, for a polling core,
// starts a reap pass.
void CpuInitiatedPath::arm_arrival(std::uint32_t qi) {
  Queue& q = queues_[qi];
  const std::uint64_t addr = q.cq_base + std::uint64_t{q.arrived % q.entries} * nvme::kCqEntrySize;
  q.arrival_watch = machine_.memory().watch(addr, nvme::kCqEntrySize, [this, qi] {
    Queue& queue = queues_[qi];
    queue.arrival_watch = 0;
    for (;;) {
      const std::uint64_t at =
          queue.cq_base + std::uint64_t{queue.arrived % queue.entries} * nvme::kCqEntrySize;
      const auto e = machine_.memory().load<nvme::CompletionEntry>(at);
      const std::uint32_t expected = ((queue.arrived / queue.entries) & 1u) == 0 ? 1u : 0u;
      if (e.phase() != expected) break;
      requests_[queue.tag_request[e.cid % queue.entries]].times[kCqePosted] = now();
      if (watchdogs_[queue.ssd]) {
        watchdogs_[queue.ssd]->finished(qi, static_cast<std::uint16_t>(e.cid % queue.entries));
      }
      ++queue.arrived;
      if (costs_.interrupts && queue.coalescer.post(now())) raise_interrupt(qi);
    }
    arm_arrival(qi);
    if (!costs_.interrupts) {
      schedule_reap(qi);
    } else if (queue.coalescer.pending() > 0) {
      schedule_expiry(qi);
    }
  });
}

void CpuInitiatedPath::raise_interrupt(std::uint32_t qi) {
  queues_[qi].irq_pending = true;
  schedule_reap(qi);
}

// The aggregation time of the oldest entry still waiting for an interrupt;
// one expiry event per queue at a time, re-aimed when it finds a younger
// group waiting.
void CpuInitiatedPath::schedule_expiry(std::uint32_t qi) {
  Queue& q = queues_[qi];
  if (q.expiry_scheduled) return;
  q.expiry_scheduled = true;
  schedule_at(q.coalescer.deadline(), [this, qi] {
    Queue& queue = queues_[qi];
    queue.expiry_scheduled = false;
    if (queue.coalescer.pending() == 0) return;
    if (queue.coalescer.deadline() > now()) {
      schedule_expiry(qi);
      return;
    }
    queue.coalescer.expire(now());
    raise_interrupt(qi);
  });
}

void CpuInitiatedPath::schedule_reap(std::uint32_t qi) {
  Queue& q = queues_[qi];
  if (q.reap_scheduled) return;
  q.reap_scheduled = true;
  schedule_at(std::max(now(), cores_->free_at(q.core)), [this, qi] { reap_pass(qi); });
}

void CpuInitiatedPath::reap_pass(std::uint32_t qi) {
  Queue& q = queues_[qi];
  const std::uint32_t count = q.arrived - q.cq_head;
  // With interrupts a pass is the handler's run: it pays for the interrupt
  // (all that arrived while it was pending merge into one) and drains every
  // entry that has landed, whether or not it was counted towards this
  // interrupt yet.
  const bool handler = costs_.interrupts && q.irq_pending;
  q.irq_pending = false;
  if (count == 0 && !handler) {
    q.reap_scheduled = false;
    return;
  }
  // Each completed read then costs a completion flag (gds from the GPU) or
  // a copy launch (bounce).
  Picoseconds work = 0;
  if (handler) {
    work += costs_.interrupt;
    ledger_.add(host::HostCost::interrupt, costs_.interrupt);
    ++handler_runs_;
  }
  const Picoseconds complete = costs_.interrupts ? costs_.complete_irq : costs_.complete_poll;
  for (std::uint32_t i = 0; i < count; ++i) {
    const auto e = machine_.memory().load<nvme::CompletionEntry>(
        q.cq_base + std::uint64_t{(q.cq_head + i) % q.entries} * nvme::kCqEntrySize);
    const Request& req = requests_[q.tag_request[e.cid % q.entries]];
    work += complete;
    ledger_.add(host::HostCost::completion, complete);
    if (mode_ == Mode::Bounce && !req.io.write) {
      work += costs_.copy_launch;
      ledger_.add(host::HostCost::copy_launch, costs_.copy_launch);
    } else if (from_gpu_) {
      work += costs_.notify;
      ledger_.add(host::HostCost::notify, costs_.notify);
    }
  }
  if (count > 0) {
    // The handler or poller loads the new CQEs' lines, which the SSD's writes left in memory.
    const Picoseconds slower = touch_queue_memory(
        q.memory, host::ring_lines(q.cq_head % q.entries, count, q.entries, nvme::kCqEntrySize),
        false);
    work += slower;
    if (slower != 0) ledger_.add(host::HostCost::memory_stall, slower);
  }
  ++reap_passes_;
  const Picoseconds end = cores_->book(q.core, now(), work);
  schedule_at(end, [this, qi, count] {
    Queue& queue = queues_[qi];
    std::vector<std::pair<std::uint32_t, std::uint16_t>> finished;
    for (std::uint32_t i = 0; i < count; ++i) {
      const std::uint64_t at =
          queue.cq_base + std::uint64_t{queue.cq_head % queue.entries} * nvme::kCqEntrySize;
      const auto e = machine_.memory().load<nvme::CompletionEntry>(at);
      ++queue.cq_head;
      const std::uint16_t tag = e.cid % queue.entries;
      const std::uint32_t r = queue.tag_request[tag];
      requests_[r].times[kReaped] = now();
      queue.tags.push_back(tag);
      --queue.reserved;
      finished.emplace_back(r, static_cast<std::uint16_t>(e.status_field >> 1));
    }
    if (count > 0) {
      const std::uint32_t head = queue.cq_head % queue.entries;
      ++doorbells_;
      machine_.fabric().write(mmio_node_, queue.cq_doorbell, 4, &head, nullptr);
    }
    for (const auto& [r, status] : finished) after_reap(r, status);
    queue.reap_scheduled = false;
    // Polling: entries that landed during the pass start the next one at
    // once; with interrupts, the next handler run waits for an interrupt.
    if (costs_.interrupts ? queue.irq_pending : queue.arrived != queue.cq_head) {
      schedule_reap(qi);
    }
    // Freed tags let waiting requests go.
    for (std::uint32_t core = 0; core < core_state_.size(); ++core) kick(core);
  });
}

void CpuInitiatedPath::after_reap(std::uint32_t r, std::uint16_t status) {
  const Request& req = requests_[r];
  if (mode_ == Mode::Bounce && !req.io.write) {
    // The copy engine pulls the data from the bounce buffer into GPU memory;
    // the GPU thread sees the copy's completion one load later.
    ++copies_;
    const std::uint64_t bytes = std::uint64_t{req.io.lbas} * ssds_[req.io.ssd]->lba_bytes();
    machine_.copy_engine(gpu_.id()).read(bounce_buffer(r), bytes, [this, r, status] {
      requests_[r].times[kCopiedOut] = now();
      const std::uint32_t core = queues_[requests_[r].queue].core;
      if (from_gpu_) {
        // The GPU thread sees the copy's completion one load later (a
        // stream-ordered flag); the core learns it too, to reuse the buffer.
        copy_done(core, [] {});
        schedule_in(gpu_.costs().load_latency, [this, r, status] { finish(r, status); });
      } else {
        copy_done(core, [this, r, status] { finish(r, status); });
      }
    });
    return;
  }
  deliver_to_gpu(r, status);
}

void CpuInitiatedPath::deliver_to_gpu(std::uint32_t r, std::uint16_t status) {
  if (!from_gpu_) {
    finish(r, status);
    return;
  }
  // The core posts the completion flag to GPU memory; the waiting thread
  // sees it one load after it lands.
  const std::uint64_t flag = gpu_flags_ + std::uint64_t{r % kFlagWords} * 4;
  machine_.fabric().write(cpu_node_, flag, 4, nullptr, [this, r, status] {
    schedule_in(gpu_.costs().load_latency, [this, r, status] { finish(r, status); });
  });
}

void CpuInitiatedPath::finish(std::uint32_t r, std::uint16_t status) {
  Request& req = requests_[r];
  req.times[kDelivered] = now();
  const Queue& q = queues_[req.queue];
  stages_.record(req.times, machine_.topology().nodes[cpu_node_].id, ssds_[q.ssd]->id(), q.qid,
                 static_cast<std::uint16_t>(req.slot));
  // A failed I/O moved no data the requester can use.
  if (status != 0) {
    ++errors_;
    if (aborted_by_timeout(status)) ++timeouts_;
    if (aborted_by_reset(status)) ++reset_aborted_;
  } else {
    bytes_ += std::uint64_t{req.io.lbas} * ssds_[req.io.ssd]->lba_bytes();
  }
  IoDone done = std::move(req.done);
  req.done = nullptr;
  free_requests_.push_back(r);
  if (done) done(status);
}

std::uint64_t CpuInitiatedPath::command_lines(std::uint32_t r) const {
  const Request& req = requests_[r];
  const std::uint64_t bytes = std::uint64_t{req.io.lbas} * ssds_[req.io.ssd]->lba_bytes();
  // The SQE is one line (SQs are page-aligned, entries 64 B). A command of more than two
  // pages points to a PRP list (a page per slot) of one 8 B entry per page after the first.
  const std::uint64_t buffer = mode_ == Mode::Gds ? req.io.buffer : 0;
  const std::uint64_t pages = (buffer % kPage + bytes + kPage - 1) / kPage;
  const std::uint64_t list_bytes = pages > 2 ? (pages - 1) * 8 : 0;
  return 1 + (list_bytes + host::kCacheLineBytes - 1) / host::kCacheLineBytes;
}

host::CoreMemoryTiming CpuInitiatedPath::core_timing(std::size_t node) const {
  const NodeConfig& memory = machine_.topology().nodes[node];
  if (memory.kind == "host_memory") {
    return {pcie::HostMemoryParams::from(memory.params).cpu_load_to_use_ns};
  }
  if (memory.kind == "cxl_memory") {
    return {cxl::CxlMemoryParams::from(memory.params).cpu_load_to_use_ns};
  }
  // Not a memory a host core loads from (a DPU's or NIC's, holding a target's queues).
  return reference_memory_;
}

Picoseconds CpuInitiatedPath::touch_queue_memory(std::size_t node, std::uint64_t lines,
                                                 bool store) {
  // An NVMe-oF target's time per I/O is one figure for all its work, its queues included.
  if (lines == 0 || mode_ == Mode::Target) return 0;
  const auto [entry, first_touch] = queue_memory_.try_emplace(node);
  QueueMemoryUse& use = entry->second;
  if (first_touch) use.timing = core_timing(node);
  (store ? use.lines_stored : use.lines_loaded) += lines;
  const Picoseconds stall = host::independent_lines_stall(use.timing, costs_.fill_buffers, lines);
  const Picoseconds reference =
      host::independent_lines_stall(reference_memory_, costs_.fill_buffers, lines);
  use.stall += stall;
  use.reference_stall += reference;
  if (stall <= reference) return 0;
  // Only accesses the fitted costs do not cover take the memory's bandwidth here, so queues in
  // the reference DRAM keep every result as it was.
  const Picoseconds wait =
      machine_.fabric().core_access(node, lines * std::uint64_t{host::kCacheLineBytes});
  use.bandwidth_wait += wait;
  use.charged += stall - reference + wait;
  return stall - reference + wait;
}

nlohmann::json CpuInitiatedPath::queue_memory_json() const {
  const double ios = static_cast<double>(std::max<std::uint64_t>(completed(), 1));
  auto per_io = [ios](Picoseconds t) { return std::round(ps_to_ns(t) / ios * 1000.0) / 1000.0; };
  nlohmann::json out = nlohmann::json::object();
  // The scenario's queue memory is listed even before a core touched it.
  std::map<std::size_t, QueueMemoryUse> shown = queue_memory_;
  shown.try_emplace(queue_node_, QueueMemoryUse{core_timing(queue_node_)});
  for (const auto& [node, use] : shown) {
    const host::CoreMemoryTiming& timing = use.timing;
    out[machine_.topology().nodes[node].id] = {
        {"kind", machine_.topology().nodes[node].kind},
        {"cpu_load_to_use_ns", ps_to_ns(timing.load_to_use)},
        {"core_bandwidth_gbps",
         std::round(host::core_bytes_per_ns(timing, costs_.fill_buffers) * 1000.0) / 1000.0},
        {"lines_loaded", use.lines_loaded},
        {"lines_stored", use.lines_stored},
        {"stall_ns_per_io", per_io(use.stall)},
        {"reference_stall_ns_per_io", per_io(use.reference_stall)},
        {"bandwidth_wait_ns_per_io", per_io(use.bandwidth_wait)},
        {"charged_ns_per_io", per_io(use.charged)}};
  }
  return {{"reference", machine_.topology().nodes[memory_node_].id},
          {"reference_load_to_use_ns", ps_to_ns(reference_memory_.load_to_use)},
          {"nodes", std::move(out)}};
}

nlohmann::json CpuInitiatedPath::sections(Picoseconds elapsed) const {
  nlohmann::json cpu = cores_->statistics(elapsed);
  cpu["node"] = machine_.topology().nodes[cpu_node_].id;
  cpu["completion"] = costs_.interrupts ? "interrupt" : "polling";
  cpu["request_origin"] = from_gpu_ ? "gpu" : "cpu";
  cpu["submission_passes"] = submit_passes_;
  cpu["completion_passes"] = reap_passes_;
  cpu["doorbells"] = doorbells_;
  cpu["copies"] = copies_;
  cpu["dma_mapped_commands"] = mapped_commands_;
  // Where the host's core time went, per completed I/O and stage.
  cpu["host_cost_per_io_ns"] = ledger_.per_io_ns(completed());
  if (costs_.interrupts) {
    std::uint64_t raised = 0;
    std::uint64_t by_threshold = 0;
    std::uint64_t by_time = 0;
    for (const Queue& q : queues_) {
      raised += q.coalescer.interrupts();
      by_threshold += q.coalescer.by_threshold();
      by_time += q.coalescer.by_time();
    }
    cpu["interrupts"] = {
        {"raised", raised},
        {"handler_runs", handler_runs_},
        {"completions_per_handler_run",
         handler_runs_ == 0 ? 0.0
                            : std::round(static_cast<double>(completed()) /
                                         static_cast<double>(handler_runs_) * 1000.0) /
                                  1000.0},
        {"coalescing_threshold", costs_.coalescing_threshold},
        {"coalescing_time_us", costs_.coalescing_time_units * 100},
        {"raised_by_threshold", by_threshold},
        {"raised_by_time", by_time}};
  }
  // The most I/Os per second one core could carry at the batch sizes seen
  // (commands per system call; with interrupts, completions per handler run).
  auto ratio = [](std::uint64_t n, std::uint64_t d) {
    return d == 0 ? 1.0 : std::max(1.0, static_cast<double>(n) / static_cast<double>(d));
  };
  bool any_mapped = false;
  for (bool m : dma_map_) any_mapped = any_mapped || m;
  // Queues in memory slower than the reference DRAM add their measured stall per I/O.
  const Picoseconds memory_stall_per_io =
      completed() == 0 ? 0 : ledger_.spent(host::HostCost::memory_stall) / completed();
  const Picoseconds per_io =
      costs_.per_io(ratio(completed(), submit_passes_), ratio(completed(), handler_runs_),
                    any_mapped, from_gpu_, mode_ == Mode::Bounce) +
      memory_stall_per_io;
  cpu["core_time_per_io_ns"] = ps_to_ns(per_io);
  cpu["iops_per_core_ceiling"] = per_io == 0 ? 0.0 : std::round(1e12 / static_cast<double>(per_io));
  if (report_queue_memory_) cpu["queue_memory"] = queue_memory_json();
  return {{"cpu", cpu}};
}

}  // namespace gpunvme
