#include "models/nvme/controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "models/flash/flash_params.h"
#include "models/nvme/ssd_params.h"
#include "sim/core/protocol/nvme_prp.h"
#include "sim/core/protocol/nvme_queue.h"
#include "sim/core/protocol/nvme_warp_doorbell.h"
#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme::nvme {

namespace {
constexpr std::uint64_t kPageBytes = 4096;  // CAP.MPSMIN = MPSMAX = 0: 4 KiB pages only
constexpr std::uint32_t kVersion14 = 0x00010400;
// CMBSZ.SZU = 2: the CMB size is given in 1 MiB units.
constexpr std::uint8_t kCmbSizeUnitMib = 2;
// CMBLOC.BIR: the CMB is reported in BAR2, as a 64-bit BAR pair after BAR0/1.
constexpr std::uint8_t kCmbBar = 2;
constexpr Picoseconds kTimeoutUnit = 500ull * 1'000'000'000ull;  // CAP.TO: 500 ms units

}  // namespace

Controller::Controller(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
                       pcie::Fabric& fabric, MemorySpace& memory)
    : Component(name, std::move(params)),
      node_(node),
      fabric_(fabric),
      memory_(memory),
      flash_(flash::flash_params_from(this->params())) {
  const ParamValues& p = this->params();
  const SsdParams ssd = SsdParams::from(p);
  dma_ = std::make_unique<pcie::DmaEngine>("dma", fabric, memory, node,
                                           pcie::dma_engine_config(p, "dma_"));
  max_io_queues_ = static_cast<std::uint32_t>(ssd.max_io_queues);
  max_entries_ = static_cast<std::uint32_t>(ssd.mqes);
  dstrd_ = static_cast<std::uint8_t>(ssd.dstrd);
  lba_bytes_ = static_cast<std::uint32_t>(ssd.lba_bytes);
  mdts_ = static_cast<std::uint8_t>(ssd.mdts);
  max_transfer_bytes_ = mdts_ == 0 ? 0 : (kPageBytes << mdts_);
  command_overhead_ = ssd.command_overhead_ns;
  cost_ = CommandCost{command_overhead_, ssd.command_ns_per_kib * 1000.0 / 1024.0, lba_bytes_};
  admin_command_ = ssd.admin_command_ns;
  ready_delay_ = ssd.ready_delay_us;
  cmb_access_ = ssd.cmb_access_ns;
  const Picoseconds shadow_poll = std::max<Picoseconds>(1, ssd.shadow_poll_ns);
  wrr_supported_ = ssd.wrr_supported;
  sgl_supported_ = ssd.sgl_supported;
  shadow_supported_ = ssd.shadow_doorbells;
  indexed_supported_ = ssd.indexed_completion;
  warp_doorbells_supported_ = ssd.warp_doorbells;
  warp_doorbell_cost_ = ssd.warp_doorbell_ns;
  const bool shadow_polling = ssd.shadow_doorbell_polling;
  if (shadow_polling && !ssd.shadow_doorbells) {
    throw ConfigError("", fmt::format("$.nodes[{}].shadow_doorbell_polling", node), "true",
                      "needs shadow_doorbells true: the controller polls the shadow doorbells of "
                      "Doorbell Buffer Config");
  }
  shadow_poll_read_cost_ = ssd.shadow_poll_read_ns;
  indexed_completion_cost_ = ssd.indexed_completion_ns;
  wide_cids_supported_ = ssd.wide_cids;
  wide_cid_cost_ = ssd.wide_cid_ns;
  vwc_present_ = ssd.volatile_write_cache;
  vwc_enabled_ = vwc_present_;
  default_burst_log2_ = static_cast<std::uint8_t>(ssd.arbitration_burst_log2);
  const auto cores = static_cast<std::size_t>(ssd.controller_cores);
  std::vector<double> processor_scale = ssd.processor_time_scale;
  if (!processor_scale.empty() && processor_scale.size() != cores) {
    throw ConfigError("", fmt::format("$.nodes[{}].processor_time_scale", node),
                      render_value(p.json().at("processor_time_scale")),
                      fmt::format("expected one entry per controller core ({}), or none", cores));
  }
  cores_ = std::make_unique<ProcessorCores>(cores, std::move(processor_scale));
  if (ssd.gpu_copy_engine && !ssd.batch_service) {
    throw ConfigError("", fmt::format("$.nodes[{}].gpu_copy_engine", node), "true",
                      "copies through the GPU's copy engine are a batch_service controller's: "
                      "set batch_service = true, or gpu_copy_engine = false");
  }
  if (ssd.copy_op_line_poller_ns > 0 && !ssd.batch_service) {
    throw ConfigError("", fmt::format("$.nodes[{}].copy_op_line_poller_ns", node),
                      render_value(p.json().at("copy_op_line_poller_ns")),
                      "a batch's copy operations are a batch_service controller's: set "
                      "batch_service = true, or copy_op_line_poller_ns = 0");
  }
  if (ssd.copy_op_ring_sweeper_ns > 0 && !ssd.batch_service) {
    throw ConfigError("", fmt::format("$.nodes[{}].copy_op_ring_sweeper_ns", node),
                      render_value(p.json().at("copy_op_ring_sweeper_ns")),
                      "a batch's copy operations are a batch_service controller's: set "
                      "batch_service = true, or copy_op_ring_sweeper_ns = 0");
  }
  if (ssd.doorbell_pickup_ns > 0 && !ssd.batch_service) {
    throw ConfigError("", fmt::format("$.nodes[{}].doorbell_pickup_ns", node),
                      render_value(p.json().at("doorbell_pickup_ns")),
                      "a doorbell pickup time is a batch_service controller's (a target whose "
                      "serving warps poll their doorbells): set batch_service = true, or "
                      "doorbell_pickup_ns = 0");
  }
  doorbell_pickup_ = ssd.doorbell_pickup_ns;
  check_batch_time_scale(ssd, p, "", fmt::format("$.nodes[{}]", node));
  const BusyScale busy_scale(ssd.batch_time_busy_cores, ssd.batch_time_scale);
  const FootprintTerm footprint(ssd.batch_time_busy_cores, ssd.batch_time_footprint_ns_per_mib,
                                ssd.batch_time_footprint_mib);
  if (ssd.batch_service) {
    ProcessorHooks hooks;
    hooks.schedule_at = [this](Picoseconds when, std::function<void()> callback) {
      schedule_at(when, std::move(callback));
    };
    hooks.queue_ready = [this](std::uint16_t qid) { fetch_->mark_ready(qid); };
    hooks.kick_fetch = [this] { fetch_->kick(); };
    hooks.generation = [this] { return generation_; };
    if (ssd.gpu_copy_engine) {
      hooks.copy_op_delay = [this](std::uint64_t addr) {
        return copy_op_delay_ ? copy_op_delay_(addr) : Picoseconds{0};
      };
    }
    if (ssd.copy_op_line_poller_ns > 0) {
      hooks.cq_line_extra_pollers = [this] {
        return cq_line_extra_pollers_ ? cq_line_extra_pollers_() : std::uint64_t{0};
      };
      hooks.copy_op_line_poller = ssd.copy_op_line_poller_ns;
    }
    if (ssd.copy_op_ring_sweeper_ns > 0) {
      hooks.cq_ring_extra_sweepers = [this] {
        return cq_ring_extra_sweepers_ ? cq_ring_extra_sweepers_() : std::uint64_t{0};
      };
      hooks.copy_op_ring_sweeper = ssd.copy_op_ring_sweeper_ns;
      sweeps_counted_ = true;
    }
    processors_ = std::make_unique<BatchServiceProcessing>(*cores_, cost_, ssd.batch_overhead_ns,
                                                           ssd.batch_gap_ns, max_io_queues_,
                                                           std::move(hooks), busy_scale, footprint);
  } else {
    processors_ = std::make_unique<PerCommandProcessing>(*cores_, cost_);
  }
  FetchLimits limits;
  limits.fetch_burst = static_cast<std::uint32_t>(ssd.sq_fetch_burst);
  limits.max_fetches = static_cast<std::uint32_t>(ssd.max_outstanding_fetches);
  limits.max_active = static_cast<std::uint32_t>(ssd.max_active_commands);
  FetchHooks fetch_hooks;
  fetch_hooks.now = [] { return now(); };
  fetch_hooks.read = [this](std::uint64_t addr, std::uint32_t len, FetchHooks::ReadDone done) {
    mem_read(addr, len, std::move(done));
  };
  fetch_hooks.deliver = [this](std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                               std::uint32_t count, std::uint64_t generation) {
    on_entries(qid, first, data, count, generation);
  };
  fetch_hooks.generation = [this] { return generation_; };
  fetch_ = std::make_unique<FetchEngine>(queues_, *processors_, limits, default_burst_log2_,
                                         std::move(fetch_hooks));
  const auto vectors = ssd.msix_vectors;
  CompletionHooks completion_hooks;
  completion_hooks.load_status = [this](std::uint64_t addr) {
    return memory_.load<std::uint16_t>(addr);
  };
  completion_hooks.write = [this](std::uint64_t addr, std::uint32_t len, const void* data) {
    mem_write(addr, len, data, nullptr);
  };
  completion_hooks.slot_not_consumed = [this](std::uint16_t cqid, std::uint32_t slot,
                                              const CompletionEntry& entry) {
    violation(fmt::format("CQ {} slot {} still holds an entry of the current phase {} when a "
                          "completion is posted there",
                          cqid, slot, queues_.cq(cqid).phase ? 1 : 0),
              entry.sqid, slot, entry.cid);
  };
  completions_ = std::make_unique<CompletionPoster>(
      queues_, vectors == 0 ? max_io_queues_ + 1u : static_cast<std::size_t>(vectors),
      std::move(completion_hooks));
  batch_supported_ = ssd.batch_completion;
  BatchHooks batch_hooks;
  batch_hooks.now = [] { return now(); };
  batch_hooks.schedule_at = [this](Picoseconds when, Calendar::Callback callback) {
    schedule_at(when, std::move(callback));
  };
  batch_hooks.book_firmware = [this,
                               cost = Picoseconds{ssd.batch_completion_ns}](Picoseconds ready) {
    return cost == 0 ? ready : cores_->book_earliest(ready, cost);
  };
  batch_hooks.write = [this](std::uint64_t addr, std::uint32_t len, const void* data) {
    mem_write(addr, len, data, nullptr);
  };
  batch_hooks.post_entry = [this](std::uint16_t cqid, const CompletionEntry& entry) {
    post(cqid, entry);
  };
  batch_ = std::make_unique<BatchNotifier>(static_cast<std::uint32_t>(ssd.batch_completion_max),
                                           ssd.batch_completion_window_ns, std::move(batch_hooks));
  granted_sqs_ = granted_cqs_ = max_io_queues_;

  std::vector<ScheduledFault> schedule;
  const std::vector<std::string>& entries = ssd.fault_schedule;
  for (std::size_t k = 0; k < entries.size(); ++k) {
    try {
      schedule.push_back(parse_scheduled_fault(entries[k]));
    } catch (const std::invalid_argument& e) {
      throw ConfigError("", fmt::format("$.nodes[{}].fault_schedule[{}]", node, k),
                        "\"" + entries[k] + "\"", e.what());
    }
  }
  faults_ = FaultInjector(ssd.fault_media_error_rate, ssd.fault_command_error_rate,
                          static_cast<std::uint64_t>(ssd.fault_seed), std::move(schedule));
  track_commands_ = faults_.may_lose_commands();
  IoLimits io_limits;
  io_limits.lba_bytes = lba_bytes_;
  io_limits.capacity_lbas = capacity_lbas();
  io_limits.max_transfer_bytes = max_transfer_bytes_;
  io_limits.sgl_supported = sgl_supported_;
  io_limits.datapath_ps_per_byte = ssd.datapath_gbps > 0 ? 1000.0 / ssd.datapath_gbps : 0.0;
  io_limits.cost = cost_;
  IoHooks io_hooks;
  io_hooks.now = [] { return now(); };
  io_hooks.schedule_at = [this](Picoseconds when, Callback callback) {
    schedule_at(when, std::move(callback));
  };
  io_hooks.complete = [this](const Command& command, Status status, std::uint32_t dw0, bool dnr) {
    complete(command, status, dw0, dnr);
  };
  io_hooks.resolve = [this](CommandPtr command, std::uint64_t bytes, bool to_host,
                            Picoseconds start, Resolved done) {
    resolve_data_pointer(std::move(command), bytes, to_host, start, std::move(done));
  };
  io_hooks.check_segments = [this](const Command& command, const std::vector<Segment>& segments,
                                   std::uint64_t bytes) {
    check_segments(command, segments, bytes);
  };
  io_hooks.read = [this](std::uint64_t addr, std::uint32_t len, IoHooks::ReadDone done) {
    mem_read(addr, len, std::move(done));
  };
  io_hooks.write = [this](std::uint64_t addr, std::uint32_t len, const void* data,
                          std::function<void()> delivered) {
    mem_write(addr, len, data, std::move(delivered));
  };
  io_hooks.dma_write = [this](std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done issued,
                              std::uint32_t tenant) {
    dma_->write(addr, len, nullptr, std::move(issued), tenant);
  };
  io_hooks.dma_read = [this](std::uint64_t addr, std::uint64_t len, pcie::DmaEngine::Done done,
                             std::uint32_t tenant) {
    dma_->read(addr, len, std::move(done), tenant);
  };
  io_hooks.admit_data = [this](const Command& command, std::vector<Segment>& segments,
                               bool to_host) {
    return data_gate_ ? data_gate_(command.qid, segments, to_host) : DataAdmission{};
  };
  io_hooks.in_own_cmb = [this](std::uint64_t addr, std::uint64_t len) {
    return in_own_cmb(addr, len);
  };
  io_hooks.observe_dma = [this](const DmaRecord& record) {
    if (dma_observer_) dma_observer_(record);
  };
  io_hooks.device_event = [this](FaultKind kind) { device_event(kind); };
  io_hooks.lose = [this](const CommandPtr& command) {
    lost_[command_key(command->qid, command->cid())] = command;
  };
  io_hooks.generation = [this] { return generation_; };
  io_hooks.volatile_cache = [this] { return vwc_enabled_; };
  io_hooks.media_read = [this](Picoseconds at, Picoseconds processed, std::uint64_t offset,
                               std::uint32_t bytes) {
    return flash_.read(at, processed, offset, bytes);
  };
  io_hooks.media_write = [this](Picoseconds in, std::uint64_t offset, std::uint32_t bytes) {
    return flash_.write(in, offset, bytes);
  };
  io_hooks.media_flush = [this](Picoseconds at, Picoseconds after) {
    return flash_.flush(at, after);
  };
  io_hooks.media_trim = [this](std::uint64_t offset, std::uint64_t bytes) {
    flash_.trim(offset, bytes);
  };
  io_ =
      std::make_unique<IoExecution>(queues_, *processors_, faults_, io_limits, std::move(io_hooks));
  link_retrain_ = ssd.link_retrain_us;
  io_timeout_ = ssd.io_timeout_us;
  for (const ScheduledFault& f : faults_.timed_events()) {
    schedule_at(f.at, [this, kind = f.kind] { device_event(kind); });
  }

  // BAR0: registers, then one doorbell pair per queue (admin queue included).
  const std::uint64_t bar_bytes =
      reg::kDoorbellBase + (2ull * (max_io_queues_ + 1)) * doorbell_stride_bytes(dstrd_);
  registers_ = &memory.allocate(std::max<std::uint64_t>(bar_bytes, 16384), node,
                                RegionKind::Registers, id() + ".bar0", 16384);
  fabric.attach_registers(*registers_, this);
  const auto cmb_mib = static_cast<std::uint64_t>(ssd.cmb_mib);
  if (cmb_mib > 0) {
    cmb_ = &memory.allocate(cmb_mib << 20, node, RegionKind::ControllerMemoryBuffer, id() + ".cmb",
                            1ull << 20);
    cmbloc_ = Cmbloc{kCmbBar, 0}.encode();
    cmbsz_ =
        Cmbsz{true, true, true, true, true, kCmbSizeUnitMib, static_cast<std::uint32_t>(cmb_mib)}
            .encode();
  }

  cap_.mqes = static_cast<std::uint16_t>(max_entries_ - 1);
  cap_.cqr = true;  // queues must be physically contiguous, as Linux always creates them
  cap_.ams = wrr_supported_ ? kCapAmsWeightedRoundRobinUrgent : 0;
  cap_.to = static_cast<std::uint8_t>(
      std::clamp<Picoseconds>((ready_delay_ + kTimeoutUnit - 1) / kTimeoutUnit, 1, 255));
  cap_.dstrd = dstrd_;
  cap_.css = kCapCssNvm;
  cap_.mpsmin = 0;
  cap_.mpsmax = 0;
  cap_.cmbs = cmb_ != nullptr;

  queues_ = QueueSet(max_io_queues_);
  ShadowHooks shadow_hooks;
  shadow_hooks.now = [] { return now(); };
  shadow_hooks.schedule_at = [this](Picoseconds when, Callback callback) {
    schedule_at(when, std::move(callback));
  };
  shadow_hooks.read = [this](std::uint64_t addr, std::uint32_t len, pcie::Fabric::ReadDone done) {
    mem_read(addr, len, std::move(done));
  };
  shadow_hooks.write = [this](std::uint64_t addr, std::uint32_t len, const void* data) {
    mem_write(addr, len, data, nullptr);
  };
  shadow_hooks.generation = [this] { return generation_; };
  shadow_hooks.apply = [this](DoorbellKind kind, std::uint16_t qid, std::uint32_t value) {
    if (!shadow_->always_polled() || shadow_poll_read_cost_ == 0) {
      apply_doorbell(kind, qid, value, /*shadow=*/true);
      return;
    }
    // Polled by firmware: the value is compared and applied on a command
    // processor, after its time there.
    const Picoseconds done = cores_->book_earliest(now(), shadow_poll_read_cost_);
    const std::uint64_t generation = generation_;
    schedule_at(done, [this, kind, qid, value, generation] {
      if (generation != generation_) return;
      const bool exists =
          kind == DoorbellKind::SqTail ? queues_.sq(qid).exists : queues_.cq(qid).exists;
      if (exists) apply_doorbell(kind, qid, value, /*shadow=*/true);
    });
  };
  shadow_ = std::make_unique<ShadowDoorbells>(queues_, memory_, dstrd_, shadow_poll,
                                              std::move(shadow_hooks));
  shadow_->set_always_polled(shadow_polling);
  status_counts_.assign(0x800, 0);
  mirror_registers();
}

std::uint64_t Controller::doorbell_address(bool sq, std::uint16_t qid) const {
  return registers_->base +
         (sq ? sq_tail_doorbell_offset(qid, dstrd_) : cq_head_doorbell_offset(qid, dstrd_));
}

std::uint64_t Controller::capacity_lbas() const {
  return flash_.params().capacity_bytes / lba_bytes_;
}

std::uint64_t Controller::sq_fetched(std::uint16_t qid) const {
  return qid < queues_.count() ? queues_.sq(qid).fetched : 0;
}

std::int64_t Controller::cq_of_line(std::uint64_t line) const {
  const std::optional<QueueSet::RingHit> ring =
      queues_.ring_overlapping(line * MemorySpace::kLineBytes, MemorySpace::kLineBytes);
  return ring && !ring->sq ? std::int64_t{ring->qid} : -1;
}

bool Controller::cq_holds_line(std::uint64_t line) const {
  const std::optional<QueueSet::RingHit> ring =
      queues_.ring_overlapping(line * MemorySpace::kLineBytes, MemorySpace::kLineBytes);
  return ring && !ring->sq;
}

void Controller::set_msix_vector(std::uint16_t vector, std::uint64_t address, std::uint32_t data) {
  if (vector >= completions_->vectors()) {
    throw std::invalid_argument(fmt::format("{}: MSI-X vector {} beyond the {} vectors", id(),
                                            vector, completions_->vectors()));
  }
  completions_->set_vector(vector, address, data);
}

void Controller::violation(const std::string& what, std::optional<std::uint16_t> qid,
                           std::optional<std::uint32_t> slot,
                           std::optional<std::uint32_t> cid) const {
  auto shown = [](const auto& v) { return v ? std::to_string(*v) : std::string("n/a"); };
  throw InvariantViolation(
      fmt::format("{}: invariant violated at {:.3f} ns: {} (queue {}, slot "
                  "{}, CID {})",
                  id(), ps_to_ns(now()), what, shown(qid), shown(slot), shown(cid)));
}

// ---------------------------------------------------------------------------
// Registers
// ---------------------------------------------------------------------------

// The register values live in the memory behind BAR0 too, so that a host's
// MMIO read (a non-posted PCIe read through the fabric) returns them.
void Controller::mirror_registers() {
  const std::uint64_t base = registers_->base;
  memory_.store<std::uint64_t>(base + reg::kCap, cap_.encode());
  memory_.store<std::uint32_t>(base + reg::kVs, kVersion14);
  memory_.store<std::uint32_t>(base + reg::kCc, cc_.encode());
  memory_.store<std::uint32_t>(base + reg::kCsts, csts_.encode());
  memory_.store<std::uint32_t>(base + reg::kAqa, aqa_);
  memory_.store<std::uint64_t>(base + reg::kAsq, asq_);
  memory_.store<std::uint64_t>(base + reg::kAcq, acq_);
  memory_.store<std::uint32_t>(base + reg::kCmbloc, cmbloc_);
  memory_.store<std::uint32_t>(base + reg::kCmbsz, cmbsz_);
}

void Controller::on_register_write(std::uint64_t offset, const std::uint8_t* data,
                                   std::uint32_t len) {
  if (offset >= reg::kDoorbellBase) {
    const DoorbellTarget target = decode_doorbell_offset(offset, dstrd_);
    if (!target.valid || len != 4) {
      violation(
          fmt::format("write of {} B to BAR0 offset 0x{:x}, which is no doorbell", len, offset),
          std::nullopt, std::nullopt, std::nullopt);
    }
    if (!csts_.rdy) {
      violation(fmt::format("doorbell write to BAR0 offset 0x{:x} while CSTS.RDY = 0", offset),
                target.qid, std::nullopt, std::nullopt);
    }
    std::uint32_t value;
    std::memcpy(&value, data, 4);
    ++doorbell_writes_;
    if (doorbell_pickup_ > 0 && target.kind == DoorbellKind::SqTail &&
        target.qid != kAdminQueueId) {
      // Seen by the processors a pickup time later, in the order written
      // (every write of a queue waits as long); a reset meanwhile drops it.
      const std::uint64_t generation = generation_;
      const Picoseconds rung = now();
      schedule_at(rung + doorbell_pickup_, [this, target, value, generation, rung] {
        if (generation != generation_) return;
        apply_doorbell(target.kind, target.qid, value, false, rung);
      });
      return;
    }
    apply_doorbell(target.kind, target.qid, value, false);
    return;
  }
  if (offset % 4 != 0 || len % 4 != 0 || len == 0) {
    violation(fmt::format("register write of {} B at BAR0 offset 0x{:x}: registers take "
                          "aligned dwords",
                          len, offset),
              std::nullopt, std::nullopt, std::nullopt);
  }
  for (std::uint32_t i = 0; i < len; i += 4) {
    std::uint32_t value;
    std::memcpy(&value, data + i, 4);
    write_register_dword(static_cast<std::uint32_t>(offset + i), value);
  }
  mirror_registers();
}

void Controller::write_register_dword(std::uint32_t offset, std::uint32_t value) {
  switch (offset) {
    case reg::kCc: {
      const Cc old = cc_;
      cc_ = Cc::decode(value);
      if (!old.en && cc_.en) {
        enable();
      } else if (old.en && !cc_.en) {
        reset();
      }
      // Shutdown: nothing is volatile beyond the write buffer, whose contents
      // the model does not keep; the shutdown completes at once.
      if (cc_.shn != kCcShnNone) csts_.shst = kCstsShstComplete;
      break;
    }
    case reg::kAqa: aqa_ = value; break;
    case reg::kAsq: asq_ = (asq_ & ~0xFFFFFFFFull) | value; break;
    case reg::kAsq + 4: asq_ = (asq_ & 0xFFFFFFFFull) | (std::uint64_t{value} << 32); break;
    case reg::kAcq: acq_ = (acq_ & ~0xFFFFFFFFull) | value; break;
    case reg::kAcq + 4: acq_ = (acq_ & 0xFFFFFFFFull) | (std::uint64_t{value} << 32); break;
    default:
      // CAP, VS, CSTS, CMBLOC and CMBSZ are read-only; INTMS/INTMC mask pin
      // and MSI interrupts only (this controller signals MSI-X); NSSR is not
      // modelled. Writes to them have no effect.
      break;
  }
}

// CC.EN 0 -> 1: check the configuration, build the admin queue pair and
// report ready after the ready delay. A configuration the controller cannot
// run sets CSTS.CFS instead (the spec leaves it undefined).
void Controller::enable() {
  const Aqa aqa = Aqa::decode(aqa_);
  bool sq_in_cmb = false, cq_in_cmb = false;
  const bool ams_ok =
      cc_.ams == kCcAmsRoundRobin || (cc_.ams == kCcAmsWeightedRoundRobinUrgent && wrr_supported_);
  const bool ok = cc_.mps == 0 && cc_.css == 0 && ams_ok && aqa.sq_entries >= 2 &&
                  aqa.cq_entries >= 2 && asq_ % kPageBytes == 0 && acq_ % kPageBytes == 0 &&
                  queue_memory_ok(asq_, std::uint64_t{aqa.sq_entries} * kSqEntrySize, &sq_in_cmb) &&
                  queue_memory_ok(acq_, std::uint64_t{aqa.cq_entries} * kCqEntrySize, &cq_in_cmb);
  if (!ok) {
    csts_.cfs = true;
    return;
  }
  fetch_->arbiter().set_mechanism(cc_.ams == kCcAmsWeightedRoundRobinUrgent
                                      ? ArbitrationMechanism::WeightedRoundRobinUrgent
                                      : ArbitrationMechanism::RoundRobin);
  SubmissionQueue& sq = queues_.sq(kAdminQueueId);
  sq = SubmissionQueue{};
  sq.open(asq_, aqa.sq_entries);
  sq.in_cmb = sq_in_cmb;
  CompletionQueue& cq = queues_.cq(kAdminQueueId);
  cq = CompletionQueue{};
  cq.exists = true;
  cq.base = acq_;
  cq.entries = aqa.cq_entries;
  cq.in_cmb = cq_in_cmb;
  cq.irq_enabled = true;  // the admin CQ always signals vector 0
  cq.bound_sqs = 1;
  fetch_->arbiter().add_queue(kAdminQueueId, QueuePriority::Urgent);
  queues_.index_rings();
  const std::uint64_t generation = generation_;
  ready_at_ = now() + ready_delay_;
  schedule_at(ready_at_, [this, generation] {
    if (generation != generation_) return;
    csts_.rdy = true;
    mirror_registers();
  });
}

// CC.EN 1 -> 0: every queue is deleted and every feature returns to its
// reset value. Commands still in flight finish silently: their completions
// belong to queues that no longer exist.
void Controller::reset() {
  ++generation_;
  for (std::uint16_t qid = 0; qid < queues_.count(); ++qid) {
    if (queues_.sq(qid).exists) fetch_->arbiter().remove_queue(qid);
    queues_.sq(qid) = SubmissionQueue{};
    processors_->forget_queue(qid);
    queues_.cq(qid) = CompletionQueue{};
  }
  shadow_->reset();
  batch_->reset();
  queues_.index_rings();
  processors_->reset();
  held_aers_.clear();
  csts_ = Csts{};
  granted_sqs_ = granted_cqs_ = max_io_queues_;
  vwc_enabled_ = vwc_present_;
  fetch_->arbiter().set_mechanism(ArbitrationMechanism::RoundRobin);
  fetch_->arbiter().set_arbitration(Arbitration{default_burst_log2_, 0, 0, 0});
}

// ---------------------------------------------------------------------------
// Injected device events
// ---------------------------------------------------------------------------

void Controller::device_event(FaultKind kind) {
  if (kind == FaultKind::Reset) fault_reset();
  if (kind == FaultKind::LinkDown) link_down();
}

// A controller reset the host recovers from: the host sees every
// outstanding command aborted (Command Aborted due to SQ Deletion, as
// deleting its queue would complete it), disables and re-enables the
// controller and re-creates its queues. The model keeps the queues where
// they are and charges the recovery as time in which nothing is fetched:
// the ready delay (CSTS.RDY after CC.EN) and the admin commands of a
// bring-up (Identify controller and namespace, Set Features, a Create I/O
// CQ and SQ per queue).
void Controller::fault_reset() {
  ++reset_faults_;
  abort_outstanding_and_recover();
}

Picoseconds Controller::host_reset() { return abort_outstanding_and_recover(); }

Picoseconds Controller::abort_outstanding_and_recover() {
  std::vector<CommandPtr> outstanding;
  outstanding.reserve(live_.size());
  for (const auto& entry : live_) outstanding.push_back(entry.second);
  std::sort(outstanding.begin(), outstanding.end(),
            [](const CommandPtr& a, const CommandPtr& b) { return a->io_index < b->io_index; });
  lost_.clear();
  for (const CommandPtr& command : outstanding) {
    complete(*command, Status::AbortedSqDeletion);
    command->cancelled = true;
    ++reset_aborted_;
  }
  std::uint32_t io_queues = 0;
  for (std::size_t qid = 1; qid < queues_.count(); ++qid)
    io_queues += queues_.sq(qid).exists ? 1u : 0u;
  const Picoseconds recovery = ready_delay_ + admin_command_ * (3u + 2u * io_queues);
  fetch_->pause_until(now() + recovery);
  reset_recovery_ps_ += recovery;
  schedule_at(fetch_->paused_until(), [this] {
    if (now() >= fetch_->paused_until()) fetch_->kick();
  });
  return fetch_->paused_until();
}

void Controller::link_down() {
  ++link_down_faults_;
  link_down_ps_ += fabric_.hold_link(node_, now() + link_retrain_);
}

bool Controller::abort_lost(std::uint16_t sqid, std::uint16_t cid) {
  ++aborts_received_;
  auto it = lost_.find(command_key(sqid, cid));
  if (it == lost_.end()) return false;
  const CommandPtr command = it->second;
  lost_.erase(it);
  ++lost_aborted_;
  complete(*command, Status::CommandAbortRequested);
  return true;
}

void Controller::create_io_queue_pair(std::uint16_t qid, std::uint64_t sq_base,
                                      std::uint64_t cq_base, std::uint32_t entries) {
  if (!csts_.rdy) {
    cc_.en = true;
    cc_.iosqes = kSqEntrySizeLog2;
    cc_.iocqes = kCqEntrySizeLog2;
    csts_.rdy = true;
    ready_at_ = now();
    mirror_registers();
  }
  auto check = [&](Status s, const char* what) {
    if (s != Status::Success) {
      throw std::invalid_argument(fmt::format("{}: Create I/O {} {} ({} entries): {}", id(), what,
                                              qid, entries, status_name(s)));
    }
  };
  const std::uint32_t size = std::max<std::uint32_t>(entries, 1);
  check(create_cq(make_create_io_cq(0, qid, size, cq_base, true, false, 0)), "CQ");
  check(create_sq(make_create_io_sq(0, qid, size, sq_base, qid, QueuePriority::Medium)), "SQ");
}

// ---------------------------------------------------------------------------
// Doorbells, fetch and arbitration
// ---------------------------------------------------------------------------

// A new SQ tail or CQ head, from the MMIO doorbell or from a shadow doorbell
// the controller polled. With shadow doorbells both paths report the same
// updates, so a value the controller has already seen is ignored there.
void Controller::apply_doorbell(DoorbellKind kind, std::uint16_t qid, std::uint32_t value,
                                bool shadow, std::optional<Picoseconds> rung) {
  const bool tolerate_stale = shadow || (shadow_->configured() && qid != kAdminQueueId);
  if (kind == DoorbellKind::SqTail) {
    if (qid >= queues_.count() || !queues_.sq(qid).exists) {
      violation(fmt::format("SQ tail doorbell {} for a queue that does not exist", value), qid,
                std::nullopt, std::nullopt);
    }
    SubmissionQueue& sq = queues_.sq(qid);
    if (!shadow && sq.warp_doorbells && is_warp_doorbell(value)) {
      announce_warp_run(qid, value);
      return;
    }
    const SqTailCheck check = check_sq_tail(sq.head, sq.tail, value, sq.entries);
    if (check.error == QueueError::ValueBeyondRing) {
      violation(
          fmt::format("SQ tail doorbell value {} for a queue of {} entries", value, sq.entries),
          qid, std::nullopt, std::nullopt);
    }
    if (tolerate_stale && ring_occupied(sq.head, value, sq.entries) <= check.unfetched) return;
    // Entries between the old and the new tail are new; they must fit in the
    // free part of the ring (one slot always stays empty).
    if (check.error == QueueError::SqOverrun) {
      violation(fmt::format("SQ overrun: tail {} -> {} adds {} entries to {} not yet fetched",
                            sq.tail, value, check.added, check.unfetched),
                qid, std::nullopt, std::nullopt);
    }
    const std::uint32_t added = check.added;
    if (added == 0) return;
    const Picoseconds rung_at = rung.value_or(now());
    if (qid != kAdminQueueId && first_io_doorbell_ == 0) {
      first_io_doorbell_ = std::max<Picoseconds>(rung_at, 1);
    }
    for (std::uint32_t i = sq.tail; i != value; i = ring_next(i, sq.entries))
      sq.rung_at[i] = rung_at;
    sq.tail = value;
    fetch_->mark_ready(qid);
    update_sq_event_idx(qid);
    fetch_->kick();
    return;
  }
  if (qid >= queues_.count() || !queues_.cq(qid).exists) {
    violation(fmt::format("CQ head doorbell {} for a queue that does not exist", value), qid,
              std::nullopt, std::nullopt);
  }
  CompletionQueue& cq = queues_.cq(qid);
  const CqHeadCheck check = check_cq_head(cq.head, cq.tail, value, cq.entries);
  if (check.error == QueueError::ValueBeyondRing) {
    violation(fmt::format("CQ head doorbell value {} for a queue of {} entries", value, cq.entries),
              qid, std::nullopt, std::nullopt);
  }
  // The new head may not pass the tail: the host cannot consume entries the
  // controller has not posted.
  if (check.error == QueueError::CqHeadPassesTail) {
    if (tolerate_stale) return;
    violation(fmt::format("CQ head {} -> {} passes the tail {}", cq.head, value, cq.tail), qid,
              std::nullopt, std::nullopt);
  }
  cq.head = value;
  completions_->release_held(qid);
}

// A warp doorbell: the run is checked at once and kept, after the firmware's
// time for it, until the tail reaches its first slot; then the tail moves
// over it and over every kept run that follows, as one tail doorbell would.
void Controller::announce_warp_run(std::uint16_t qid, std::uint32_t value) {
  const SubmissionQueue& sq = queues_.sq(qid);
  const WarpDoorbell run = decode_warp_doorbell(value);
  if (!warp_doorbell_reserved_clear(value) || run.first_slot >= sq.entries ||
      run.count >= sq.entries) {
    violation(fmt::format("warp doorbell 0x{:08x} (slot {}, {} entries) for a queue of {} entries",
                          value, run.first_slot, run.count, sq.entries),
              qid, std::nullopt, std::nullopt);
  }
  auto apply = [this, qid, run] {
    SubmissionQueue& q = queues_.sq(qid);
    if (!q.announced_runs.emplace(run.first_slot, run.count).second) {
      violation(fmt::format("warp doorbell announces slot {} twice", run.first_slot), qid,
                run.first_slot, std::nullopt);
    }
    std::uint32_t tail = q.tail;
    for (auto next = q.announced_runs.find(tail); next != q.announced_runs.end();
         next = q.announced_runs.find(tail)) {
      tail = ring_advance(tail, next->second, q.entries);
      q.announced_runs.erase(next);
    }
    if (tail != q.tail) apply_doorbell(DoorbellKind::SqTail, qid, tail, false);
  };
  if (warp_doorbell_cost_ == 0) {
    apply();
    return;
  }
  const Picoseconds done = cores_->book_earliest(now(), warp_doorbell_cost_);
  const std::uint64_t generation = generation_;
  schedule_at(done, [this, qid, generation, apply] {
    if (generation != generation_ || !queues_.sq(qid).exists) return;
    apply();
  });
}

void Controller::on_entries(std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                            std::uint32_t count, std::uint64_t generation) {
  if (generation != generation_) return;  // fetched before a controller reset
  SubmissionQueue& sq = queues_.sq(qid);
  FetchedWork work;
  if (qid != kAdminQueueId) work = processors_->fetched(qid, data, count, now());
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint32_t slot = (first + i) % sq.entries;
    auto command = std::make_shared<Command>();
    command->qid = qid;
    command->slot = slot;
    std::memcpy(&command->sqe, data + std::size_t{i} * kSqEntrySize, kSqEntrySize);
    command->fetched_at = now();
    command->generation = generation_;
    command->batch_processed = work.processed;
    command->batch = work.batch;
    command->lap_phase = sq.fetch_phase;
    command->wide = sq.wide_cids;
    ++fetched_;
    ++sq.fetched;
    sq.head = ring_next(sq.head, sq.entries);
    if (sq.head == 0) sq.fetch_phase = !sq.fetch_phase;
    --sq.fetching;
    ++sq.in_flight;
    if (qid != kAdminQueueId) {
      command->rung_at = sq.rung_at[slot];
      fetch_wait_.record(now() - sq.rung_at[slot]);
      command->io_index = io_fetched_++;
      fetch_->command_started();
    }
    if (!claim_cid(sq, *command)) {
      // A reused CID completes with Command ID Conflict; the original stays
      // outstanding (NVMe base spec 1.4, 4.2 and generic status 03h).
      ++cid_conflicts_;
      schedule_in(command_overhead_, [this, command] {
        if (command->generation != generation_) {
          if (command->qid != kAdminQueueId) fetch_->command_ended();
          return;
        }
        ++errors_;
        ++status_counts_[static_cast<std::uint16_t>(Status::CommandIdConflict)];
        CompletionEntry entry{};
        entry.sqid = command->qid;
        entry.cid = command->sqe.cid();
        if (command->wide) set_wide_cid(entry, command->cid());
        entry.set_status(Status::CommandIdConflict, false);
        post_for(*command, entry);
        processors_->command_done(command->batch.get(), now());
        finish_sq_command(command->qid);
      });
      continue;
    }
    const std::uint32_t cid = command->cid();
    if (command->wide) {
      sq.wide_outstanding[cid] = {slot, command->fetched_at};
    } else {
      std::unique_ptr<SubmissionQueue::FetchPage>& page =
          sq.fetched_from[cid / SubmissionQueue::kCidsPerPage];
      if (!page) page = std::make_unique<SubmissionQueue::FetchPage>();
      (*page)[cid % SubmissionQueue::kCidsPerPage] = {slot, command->fetched_at};
    }
    if (track_commands_ && qid != kAdminQueueId) live_[command_key(qid, cid)] = command;
    if (qid == kAdminQueueId) {
      execute_admin(std::move(command));
    } else {
      io_->execute(std::move(command));
    }
  }
  update_sq_event_idx(qid);
}

bool Controller::claim_cid(SubmissionQueue& sq, const Command& command) {
  if (!command.wide) {
    return sq.cids.claim(static_cast<std::uint16_t>(command.cid())) != QueueError::CidInUse;
  }
  return sq.wide_outstanding.count(command.cid()) == 0;
}

// ---------------------------------------------------------------------------
// Completion
// ---------------------------------------------------------------------------

void Controller::complete(const Command& command, Status status, std::uint32_t dw0, bool dnr) {
  if (command.cancelled) return;  // a reset completed it already
  if (command.generation != generation_) {
    if (command.qid != kAdminQueueId) fetch_->command_ended();
    return;
  }
  if (track_commands_ && command.qid != kAdminQueueId) {
    live_.erase(command_key(command.qid, command.cid()));
  }
  processors_->command_done(command.batch.get(), now());
  SubmissionQueue& sq = queues_.sq(command.qid);
  const std::uint32_t cid = command.cid();
  const bool released = command.wide ? sq.wide_outstanding.erase(cid) == 1
                                     : sq.cids.release(static_cast<std::uint16_t>(cid)) !=
                                           QueueError::CidNotOutstanding;
  if (!released) violation("command completed twice", command.qid, command.slot, cid);
  if (command.qid != kAdminQueueId) {
    service_.record(now() - command.fetched_at);
    ++completed_;
    if (command_observer_) {
      command_observer_({command.qid, cid, command.sqe.opcode(), command.rung_at,
                         command.fetched_at, command.processed_at, command.data_ready_at, now()});
    }
    last_io_completion_ = now();
  } else {
    ++admin_completed_;
  }
  ++status_counts_[static_cast<std::uint16_t>(status) & 0x7FF];
  if (status != Status::Success) ++errors_;
  CompletionEntry entry{};
  entry.dw0 = dw0;
  entry.sqid = command.qid;
  entry.cid = static_cast<std::uint16_t>(cid);
  if (command.wide) set_wide_cid(entry, cid);
  entry.set_status(status, false, dnr);
  // An SQ this completion leaves idle asks for the MMIO doorbell again; the
  // EventIdx write goes ahead of the entry on the same path, so a host that
  // reacts to the entry already sees it.
  --sq.in_flight;
  update_sq_event_idx(command.qid);
  ++sq.in_flight;
  post_for(command, entry);
  finish_sq_command(command.qid);
}

void Controller::post_for(const Command& command, const CompletionEntry& entry) {
  const std::uint16_t cqid = queues_.sq(command.qid).cqid;
  if (batch_->notified(cqid)) {
    batch_->complete(cqid, entry);
    return;
  }
  const bool indexed = queues_.cq(cqid).indexed;
  // Firmware time before the entry is written: routing it to its slot on an
  // indexed CQ, and the wide CID's look-up and echo.
  const Picoseconds firmware =
      (indexed ? indexed_completion_cost_ : 0) + (command.wide ? wide_cid_cost_ : 0);
  const std::uint32_t slot = command.slot;
  const bool phase = command.lap_phase;
  if (firmware == 0) {
    if (indexed) {
      completions_->post_at_slot(cqid, entry, slot, phase);
    } else {
      post(cqid, entry);
    }
    return;
  }
  // The entry is written once the processor time is done (unless a reset
  // came between).
  const Picoseconds done = cores_->book_earliest(now(), firmware);
  const std::uint64_t generation = generation_;
  schedule_at(done, [this, cqid, entry, slot, phase, generation, indexed] {
    if (generation != generation_) return;
    if (indexed) {
      completions_->post_at_slot(cqid, entry, slot, phase);
    } else {
      post(cqid, entry);
    }
  });
}

void Controller::finish_sq_command(std::uint16_t qid) {
  SubmissionQueue& sq = queues_.sq(qid);
  --sq.in_flight;
  const bool was_full = qid != kAdminQueueId && fetch_->slots_full();
  if (qid != kAdminQueueId) fetch_->command_ended();
  if (sq.on_drained && sq.in_flight == 0 && sq.fetching == 0 && unfetched(sq) == 0) {
    auto drained = std::move(sq.on_drained);
    sq.on_drained = nullptr;
    drained();
    return;
  }
  update_sq_event_idx(qid);
  if (was_full && fetch_->arbiter().any_ready()) fetch_->kick();
}

void Controller::check_drained() const {
  for (std::size_t qid = 0; qid < queues_.count(); ++qid) {
    const SubmissionQueue& sq = queues_.sq(qid);
    if (!sq.exists) continue;
    for (const auto& [cid, from] : sq.wide_outstanding) {
      violation(fmt::format("command never completed, fetched at {:.3f} ns", ps_to_ns(from.at)),
                static_cast<std::uint16_t>(qid), from.slot, cid);
    }
    sq.cids.for_each([&](std::uint16_t cid) {
      // Asynchronous Event Requests wait for an event by design.
      const bool held = qid == kAdminQueueId &&
                        std::any_of(held_aers_.begin(), held_aers_.end(),
                                    [&](const CommandPtr& c) { return c->sqe.cid() == cid; });
      if (held) return;
      const auto& page = sq.fetched_from[cid / SubmissionQueue::kCidsPerPage];
      if (!page) {
        violation("command never completed (fetch record lost)", static_cast<std::uint16_t>(qid),
                  std::nullopt, cid);
      }
      const SubmissionQueue::FetchRecord& from = (*page)[cid % SubmissionQueue::kCidsPerPage];
      violation(fmt::format("command never completed, fetched at {:.3f} ns", ps_to_ns(from.at)),
                static_cast<std::uint16_t>(qid), from.slot, cid);
    });
    if (sq.head != sq.tail) {
      violation(fmt::format("{} entries rung but never fetched",
                            ring_occupied(sq.head, sq.tail, sq.entries)),
                static_cast<std::uint16_t>(qid), sq.head, std::nullopt);
    }
  }
}

Controller::Undrained Controller::undrained() const {
  Undrained out;
  for (std::size_t qid = 0; qid < queues_.count(); ++qid) {
    const SubmissionQueue& sq = queues_.sq(qid);
    if (!sq.exists) continue;
    if (qid == kAdminQueueId) {
      sq.cids.for_each([&](std::uint16_t cid) {
        const bool held = std::any_of(held_aers_.begin(), held_aers_.end(),
                                      [&](const CommandPtr& c) { return c->sqe.cid() == cid; });
        if (!held) ++out.admin;
      });
      out.admin += ring_occupied(sq.head, sq.tail, sq.entries);
      continue;
    }
    out.fetched += sq.wide_outstanding.size();
    sq.cids.for_each([&](std::uint16_t) { ++out.fetched; });
    out.unfetched += ring_occupied(sq.head, sq.tail, sq.entries);
  }
  return out;
}

nlohmann::json Controller::statistics(Picoseconds elapsed) const {
  const flash::FlashStats& f = flash_.stats();
  nlohmann::json statuses = nlohmann::json::object();
  for (std::size_t s = 1; s < status_counts_.size(); ++s) {
    if (status_counts_[s] != 0) {
      statuses[status_name(static_cast<Status>(s))] = status_counts_[s];
    }
  }
  const Picoseconds io_span =
      last_io_completion_ > first_io_doorbell_ ? last_io_completion_ - first_io_doorbell_ : 0;
  nlohmann::json stats = {
      {"commands", completed_},
      {"admin_commands", admin_completed_},
      {"errors", errors_},
      {"error_statuses", statuses},
      {"faults_injected",
       {{"media", io_->media_faults()},
        {"command", io_->command_faults()},
        {"timeout", io_->timeout_faults()},
        {"reset", reset_faults_},
        {"link_down", link_down_faults_}}},
      // What the device events did: commands a reset aborted, lost commands
      // an Abort completed, lost commands never aborted, time spent
      // recovering from resets and with the link down.
      {"fault_effects",
       {{"reset_aborted", reset_aborted_},
        {"lost_aborted", lost_aborted_},
        {"abort_commands", aborts_received_},
        {"lost_outstanding", lost_.size()},
        {"reset_recovery_ns", ps_to_ns(reset_recovery_ps_)},
        {"link_down_ns", ps_to_ns(link_down_ps_)},
        {"link_retrain_waits", fabric_.retrain_waits(node_)}}},
      {"cid_conflicts", cid_conflicts_},
      {"doorbell_writes", doorbell_writes_},
      {"shadow_doorbell_reads", shadow_->reads()},
      {"event_idx_writes", shadow_->event_idx_writes()},
      {"interrupts", completions_->interrupts()},
      {"cq_full_stalls", completions_->cq_full_stalls()},
      {"bytes_read", io_->bytes_read()},
      {"bytes_written", io_->bytes_written()},
      {"ready_ns", ps_to_ns(ready_at_)},
      {"first_io_doorbell_ns", ps_to_ns(first_io_doorbell_)},
      {"fetch_wait_ns", fetch_wait_.summary_ns()},
      {"service_ns", service_.summary_ns()},
      {"slots", fetch_->slot_statistics(io_span)},
      {"flash",
       {{"page_reads", f.page_reads},
        {"page_programs", f.page_programs},
        {"write_path", flash_.write_path_statistics()}}},
      {"io_iops",
       io_span == 0 ? 0.0 : static_cast<double>(completed_) * 1e12 / static_cast<double>(io_span)},
      {"iops",
       elapsed == 0 ? 0.0 : static_cast<double>(completed_) * 1e12 / static_cast<double>(elapsed)}};
  // batch_service: per processor, as the software controller reports per
  // thread (gpunvme validate compares the two).
  if (const auto cores = processors_->per_core()) {
    nlohmann::json processors = nlohmann::json::array();
    for (const CoreStats& core : *cores) {
      processors.push_back({{"batches", core.batches},
                            {"commands", core.commands},
                            {"busy_ns", ps_to_ns(core.busy)}});
    }
    stats["batch_processors"] = std::move(processors);
  }
  // Batch completion notification: reported by SSDs that offer it.
  if (batch_supported_) {
    stats["batch_completion"] = {{"batches", batch_->batches()},
                                 {"bitmap_bytes", batch_->bitmap_bytes()},
                                 {"bitmap_completions", batch_->bitmap_completions()}};
  }
  return stats;
}

}  // namespace gpunvme::nvme
