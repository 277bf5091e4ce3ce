// The NVMe controller of one SSD.
//
// Registers (BAR0): CAP, VS, CC, CSTS, AQA, ASQ, ACQ, CMBLOC, CMBSZ and the
// doorbells from 1000h. Register writes arrive as PCIe posted writes; the
// register values are kept in the simulated memory behind BAR0 as well, so a
// host reads them with an ordinary non-posted PCIe read through the fabric.
// CC.EN = 1 brings the admin queue up and sets CSTS.RDY after ready_delay_us.
//
// Admin commands (one at a time, admin_command_ns each): Identify (controller,
// namespace), Set/Get Features (Arbitration, Volatile Write Cache, Number of
// Queues), Create/Delete I/O SQ and CQ with the statuses of NVMe base spec 1.4
// section 5, Doorbell Buffer Config, Abort, Asynchronous Event Request.
//
// I/O: a fetch engine reads submission entries from wherever the SQ lives
// (host or GPU memory over PCIe; the CMB by an internal access), arbitration
// round robin or weighted round robin with urgent class, command processors,
// the flash back end, PRP (chained lists fetched over PCIe) or SGL data
// pointers, a data path, data DMA through the fabric, completion entries with
// phase tags, MSI-X messages, shadow doorbells with EventIdx, and injected
// faults.
//
// Invariants are checked as the run goes and stop it with a report naming
// queue, slot, CID and time: a doorbell that overruns its SQ or moves a CQ
// head past the tail, a CID reused while outstanding (that one completes with
// Command ID Conflict, as the spec asks), a command completed twice, a CQ
// slot overwritten before the host consumed it (phase tag), data DMA outside
// host, GPU or CMB memory, outside the command's buffer or into a queue ring;
// at the end of a run, a command never completed (with its slot and fetch
// time).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "models/flash/flash_array.h"
#include "models/nvme/arbiter.h"
#include "models/nvme/batch_notifier.h"
#include "models/nvme/command.h"
#include "models/nvme/command_processors.h"
#include "models/nvme/completion_poster.h"
#include "models/nvme/fault_injector.h"
#include "models/nvme/fetch_engine.h"
#include "models/nvme/io_execution.h"
#include "models/nvme/queue_set.h"
#include "models/nvme/shadow_doorbells.h"
#include "models/pcie/dma_engine.h"
#include "models/pcie/fabric.h"
#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_registers.h"
#include "sim/core/protocol/queue_invariants.h"
#include "sim/kernel/component.h"
#include "sim/kernel/latency_histogram.h"
#include "sim/kernel/memory_space.h"
#include "sim/kernel/server.h"

namespace gpunvme::nvme {

const ComponentSpec& nvme_ssd_spec();

// A broken protocol invariant: names the queue, slot, CID and time.
class InvariantViolation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Controller : public Component, public pcie::RegisterTarget {
 public:
  // Throws ConfigError for a malformed fault_schedule entry.
  Controller(const sc_core::sc_module_name& name, ParamValues params, std::size_t node,
             pcie::Fabric& fabric, MemorySpace& memory);

  std::size_t node() const { return node_; }
  const Region& registers() const { return *registers_; }
  // The controller memory buffer, or nullptr without one. Its bus address is
  // what the host learns from the BAR named in CMBLOC (config space, which is
  // not modelled).
  const Region* cmb() const { return cmb_; }
  std::uint64_t doorbell_address(bool sq, std::uint16_t qid) const;
  std::uint32_t max_queue_entries() const { return max_entries_; }
  std::uint32_t max_io_queues() const { return max_io_queues_; }
  std::uint64_t capacity_lbas() const;
  std::uint32_t lba_bytes() const { return lba_bytes_; }
  std::uint64_t max_transfer_bytes() const { return max_transfer_bytes_; }  // 0 = no limit
  std::uint32_t msix_vectors() const { return static_cast<std::uint32_t>(completions_->vectors()); }
  // Where queue `qid`'s rings live (0 while it does not exist), for tools
  // and tests that look at a run's queues from outside the submitter.
  std::uint64_t sq_base(std::uint16_t qid) const {
    return queues_.sq_exists(qid) ? queues_.sq(qid).base : 0;
  }
  std::uint64_t cq_base(std::uint16_t qid) const {
    return queues_.cq_exists(qid) ? queues_.cq(qid).base : 0;
  }
  bool ready() const { return csts_.rdy; }
  // Controller-polled shadow doorbells (shadow_doorbell_polling): a host
  // needs no MMIO doorbell once Doorbell Buffer Config is set.
  bool shadow_polled() const { return shadow_->always_polled(); }
  Picoseconds ready_at() const { return ready_at_; }

  // Programs MSI-X table entry `vector`: the message is a posted write of
  // `data` (4 B) to `address`. The table lives in a BAR and is written at
  // set-up through config/MMIO accesses that are not modelled as traffic.
  void set_msix_vector(std::uint16_t vector, std::uint64_t address, std::uint32_t data);
  // Under gpu_copy_engine: what one copy operation to GPU address `addr`
  // waits for besides its own time (the machine asks the GPU owning it).
  void set_copy_op_delay(std::function<Picoseconds(std::uint64_t addr)> delay) {
    copy_op_delay_ = std::move(delay);
  }
  // Under copy_op_line_poller_ns: the warps polling lines of this
  // controller's CQs beyond the first on each line (the machine asks the
  // GPUs), and whether 64 B line `line` (address / 64) holds part of a CQ.
  void set_cq_line_extra_pollers(std::function<std::uint64_t()> count) {
    cq_line_extra_pollers_ = std::move(count);
  }
  bool cq_holds_line(std::uint64_t line) const;
  // Under copy_op_ring_sweeper_ns: the warps sweeping this controller's CQ
  // rings beyond the first on each ring (the machine asks the GPUs), and the
  // CQ whose ring holds part of 64 B line `line` (-1: none).
  void set_cq_ring_extra_sweepers(std::function<std::uint64_t()> count) {
    cq_ring_extra_sweepers_ = std::move(count);
  }
  bool counts_ring_sweepers() const { return sweeps_counted_; }
  std::int64_t cq_of_line(std::uint64_t line) const;

  // Set-up shortcut for tests of other models: enables the controller at once
  // and creates I/O queue pair `qid` (CQ `qid` bound to SQ `qid`, medium
  // priority, no interrupts) in zero simulated time, as Create I/O CQ and
  // Create I/O SQ would. Throws std::invalid_argument when the controller
  // would refuse them. Simulations of bring-up use host::NvmeDriver instead.
  void create_io_queue_pair(std::uint16_t qid, std::uint64_t sq_base, std::uint64_t cq_base,
                            std::uint32_t entries);

  void on_register_write(std::uint64_t offset, const std::uint8_t* data,
                         std::uint32_t len) override;

  // Trace hook: sees every data DMA the controller issues (a burst of
  // physically contiguous bytes), before it enters the fabric.
  using DmaRecord = nvme::DmaRecord;
  void observe_dma(std::function<void(const DmaRecord&)> observer) {
    dma_observer_ = std::move(observer);
  }

  // Isolation between tenants: called with an I/O command's data segments
  // (after its data pointer is resolved, before any byte moves); it may
  // rewrite them and refuses or tags them (DataAdmission). Unset: every
  // command's data moves untagged.
  using DataGate =
      std::function<DataAdmission(std::uint16_t qid, std::vector<Segment>& segments, bool to_host)>;
  void gate_data(DataGate gate) { data_gate_ = std::move(gate); }

  // Trace hook: sees the steps of every I/O command as it completes.
  void observe_commands(std::function<void(const CommandSteps&)> observer) {
    command_observer_ = std::move(observer);
  }

  // End-of-run check: every command fetched was completed.
  void check_drained() const;
  // What check_drained() would report, counted instead, for a run ended
  // before its I/Os drained (fast mode's run-length stop): I/O commands
  // fetched and not completed, entries rung on I/O SQs and not fetched, and
  // admin commands outstanding (held Asynchronous Event Requests aside).
  struct Undrained {
    std::uint64_t fetched = 0;
    std::uint64_t unfetched = 0;
    std::uint64_t admin = 0;
  };
  Undrained undrained() const;
  nlohmann::json statistics(Picoseconds elapsed) const;
  const pcie::DmaEngine& dma_engine() const { return *dma_; }

  std::uint64_t commands_completed() const { return completed_; }
  std::uint64_t admin_commands_completed() const { return admin_completed_; }
  std::uint64_t sq_fetched(std::uint16_t qid) const;
  std::uint64_t doorbell_writes() const { return doorbell_writes_; }
  std::uint64_t shadow_doorbell_reads() const { return shadow_->reads(); }
  std::uint64_t event_idx_writes() const { return shadow_->event_idx_writes(); }
  std::uint64_t interrupts() const { return completions_->interrupts(); }
  // Batch completion notification: batches posted, bitmap bytes written and
  // completions reported through bitmaps.
  std::uint64_t completion_batches() const { return batch_->batches(); }
  std::uint64_t completion_bitmap_bytes() const { return batch_->bitmap_bytes(); }
  std::uint64_t bitmap_completions() const { return batch_->bitmap_completions(); }
  std::uint64_t faults_injected() const { return io_->media_faults() + io_->command_faults(); }
  // Whether the fault schedule can leave a command without a completion
  // until the host acts (timeout, reset, link_down): the host then arms its
  // per-command timeout, io_timeout.
  bool may_lose_commands() const { return faults_.may_lose_commands(); }
  // The host resets the controller (its error handling decided to): every
  // outstanding I/O command completes with Command Aborted due to SQ
  // Deletion and nothing is fetched until the recovery is over, as after an
  // injected reset (fault_effects counts both). Returns when the controller
  // is back. Needs track_outstanding() before the first I/O command.
  Picoseconds host_reset();
  // Keeps the I/O commands between fetch and completion, so that a reset can
  // abort them (on by itself when the faults can lose a command).
  void track_outstanding() { track_commands_ = true; }
  Picoseconds io_timeout() const { return io_timeout_; }
  const LatencyHistogram& fetch_wait() const { return fetch_wait_; }
  const LatencyHistogram& service() const { return service_; }
  const flash::FlashArray& flash() const { return flash_; }
  ArbitrationMechanism arbitration_mechanism() const { return fetch_->arbiter().mechanism(); }

 private:
  // --- registers and reset (controller.cpp)
  void write_register_dword(std::uint32_t offset, std::uint32_t value);
  void mirror_registers();
  void enable();
  void reset();
  // --- doorbells and the entries the fetch engine reads
  // `rung`: when the doorbell was written, where it is applied later
  // (doorbell_pickup_ns); now otherwise.
  void apply_doorbell(DoorbellKind kind, std::uint16_t qid, std::uint32_t value, bool shadow,
                      std::optional<Picoseconds> rung = std::nullopt);
  // A warp doorbell value (sim/core/protocol/nvme_warp_doorbell.h) written
  // to the tail doorbell of an SQ created with WDB.
  void announce_warp_run(std::uint16_t qid, std::uint32_t value);
  void on_entries(std::uint16_t qid, std::uint32_t first, const std::uint8_t* data,
                  std::uint32_t count, std::uint64_t generation);
  // --- data pointers and DMA (controller_data.cpp)
  // Resolves the command's PRPs or SGL into data segments. List pages and
  // SGL segments are read from memory starting at `start`; a data pointer
  // that needs no such read resolves at once (`done` runs before return).
  void resolve_data_pointer(CommandPtr command, std::uint64_t bytes, bool to_host,
                            Picoseconds start, Resolved done);
  void resolve_prp(CommandPtr command, std::uint64_t bytes, Picoseconds start, Resolved done);
  void resolve_sgl(CommandPtr command, std::uint64_t bytes, bool to_host, Picoseconds start,
                   Resolved done);
  void check_segments(const Command& command, const std::vector<Segment>& segments,
                      std::uint64_t bytes) const;
  void check_dma_target(const Command& command, std::uint64_t addr, std::uint64_t len,
                        const char* what) const;
  void check_not_in_ring(const Command& command, std::uint64_t addr, std::uint64_t len) const;
  void mem_read(std::uint64_t addr, std::uint32_t len, pcie::Fabric::ReadDone done);
  void mem_write(std::uint64_t addr, std::uint32_t len, const void* data,
                 std::function<void()> delivered);
  bool in_own_cmb(std::uint64_t addr, std::uint64_t len) const;
  // --- admin commands (controller_admin.cpp)
  void execute_admin(CommandPtr command);
  void admin_done(CommandPtr command, Status status, std::uint32_t dw0 = 0);
  Status create_cq(const SubmissionEntry& sqe);
  Status create_sq(const SubmissionEntry& sqe);
  void delete_sq(CommandPtr command);
  Status delete_cq(const SubmissionEntry& sqe);
  bool queue_memory_ok(std::uint64_t base, std::uint64_t bytes, bool* in_cmb) const;
  void identify(CommandPtr command);
  Status set_features(const SubmissionEntry& sqe, std::uint32_t* dw0);
  Status get_features(const SubmissionEntry& sqe, std::uint32_t* dw0) const;
  Status configure_doorbell_buffer(const SubmissionEntry& sqe);
  void update_sq_event_idx(std::uint16_t qid) { shadow_->update_sq_event_idx(qid); }
  // --- injected device events (controller.cpp)
  void device_event(FaultKind kind);
  // Every outstanding I/O command completes with Command Aborted due to SQ
  // Deletion; nothing is fetched until the controller is back.
  void fault_reset();
  // What every reset does; returns when the controller is back.
  Picoseconds abort_outstanding_and_recover();
  void link_down();
  // Abort (admin): whether the command (SQID, CID) was lost and is now
  // completed with Command Abort Requested.
  bool abort_lost(std::uint16_t sqid, std::uint16_t cid);
  // A command's key among every queue's: (qid, CID), CIDs of up to 32 bits.
  static std::uint64_t command_key(std::uint16_t qid, std::uint32_t cid) {
    return (std::uint64_t{qid} << 32) | cid;
  }
  // --- completion
  void complete(const Command& command, Status status, std::uint32_t dw0 = 0, bool dnr = false);
  void post(std::uint16_t cqid, const CompletionEntry& entry) { completions_->post(cqid, entry); }
  // Posts `command`'s completion `entry` to its SQ's CQ: at the tail, or at
  // the command's SQ slot on an indexed CQ (after indexed_completion_ns of
  // processor time), after wide_cid_ns of processor time for a command of a
  // wide-CID SQ.
  void post_for(const Command& command, const CompletionEntry& entry);
  // Claims a fetched command's CID on its SQ (16-bit or wide); false when
  // the CID is outstanding already.
  bool claim_cid(SubmissionQueue& sq, const Command& command);
  void finish_sq_command(std::uint16_t qid);
  // Throws InvariantViolation. Where the broken rule involves no command (a
  // doorbell value, a register write), slot and CID are reported as n/a.
  [[noreturn]] void violation(const std::string& what, std::optional<std::uint16_t> qid,
                              std::optional<std::uint32_t> slot,
                              std::optional<std::uint32_t> cid) const;
  std::size_t node_;
  pcie::Fabric& fabric_;
  MemorySpace& memory_;
  // Moves command data (read data out, write data in); queue entries, list pages and interrupts
  // go to the fabric directly, as the controller's own small transactions.
  std::unique_ptr<pcie::DmaEngine> dma_;
  const Region* registers_;
  const Region* cmb_ = nullptr;
  flash::FlashArray flash_;

  // Parameters.
  std::uint32_t max_io_queues_;
  std::uint32_t max_entries_;
  std::uint8_t dstrd_;
  std::uint32_t lba_bytes_;
  std::uint64_t max_transfer_bytes_;  // 0 = no limit
  std::uint8_t mdts_;
  Picoseconds command_overhead_;
  CommandCost cost_;
  Picoseconds admin_command_;
  Picoseconds ready_delay_;
  Picoseconds cmb_access_;
  bool wrr_supported_;
  bool sgl_supported_;
  bool shadow_supported_;
  bool indexed_supported_;
  bool warp_doorbells_supported_;
  Picoseconds warp_doorbell_cost_;
  Picoseconds doorbell_pickup_ = 0;  // doorbell_pickup_ns
  Picoseconds shadow_poll_read_cost_;
  Picoseconds indexed_completion_cost_;
  bool wide_cids_supported_;
  Picoseconds wide_cid_cost_;
  bool vwc_present_;
  std::uint8_t default_burst_log2_;

  // Registers.
  Cap cap_{};
  Cc cc_{};
  Csts csts_{};
  std::uint32_t aqa_ = 0;
  std::uint64_t asq_ = 0;
  std::uint64_t acq_ = 0;
  std::uint32_t cmbloc_ = 0;
  std::uint32_t cmbsz_ = 0;
  Picoseconds ready_at_ = 0;
  std::uint64_t generation_ = 0;

  // Features and queues.
  std::uint32_t granted_sqs_;
  std::uint32_t granted_cqs_;
  bool vwc_enabled_;
  QueueSet queues_;
  // Posts completion entries to the queues of queues_, with MSI-X.
  std::unique_ptr<CompletionPoster> completions_;
  // Shadow doorbells and EventIdx of the queues of queues_.
  std::unique_ptr<ShadowDoorbells> shadow_;
  // Batch completion notification of batch-notified CQs (a proposed
  // extension): bitmaps, batches and their windows.
  std::unique_ptr<BatchNotifier> batch_;
  bool batch_supported_ = false;
  std::vector<CommandPtr> held_aers_;
  FaultInjector faults_;
  // With faults that can lose commands: the I/O commands between fetch and
  // completion (a reset aborts them) and those lost (an Abort finds them),
  // by command_key.
  bool track_commands_ = false;
  std::unordered_map<std::uint64_t, CommandPtr> live_;
  std::unordered_map<std::uint64_t, CommandPtr> lost_;
  Picoseconds link_retrain_ = 0;
  Picoseconds io_timeout_ = 0;
  std::uint64_t reset_faults_ = 0;
  std::uint64_t link_down_faults_ = 0;
  std::uint64_t reset_aborted_ = 0;    // commands a reset completed
  std::uint64_t lost_aborted_ = 0;     // lost commands an Abort completed
  std::uint64_t aborts_received_ = 0;  // Abort admin commands, whatever they found
  Picoseconds reset_recovery_ps_ = 0;
  Picoseconds link_down_ps_ = 0;

  // Servers: the command processors (cores and the policy that drives
  // them), the admin processor (one admin command at a time) and the data
  // path.
  std::unique_ptr<ProcessorCores> cores_;
  std::unique_ptr<ProcessorPolicy> processors_;
  std::function<Picoseconds(std::uint64_t)> copy_op_delay_;
  std::function<std::uint64_t()> cq_line_extra_pollers_;
  std::function<std::uint64_t()> cq_ring_extra_sweepers_;
  bool sweeps_counted_ = false;  // copy_op_ring_sweeper_ns > 0
  NextFreeServer admin_processor_;
  // Arbitration, command slots and SQ entry reads; paused by an injected
  // reset until the host would have brought the controller back.
  std::unique_ptr<FetchEngine> fetch_;
  // I/O commands from their intake to their completion: checks, faults,
  // media, data pointers' data and the data path.
  std::unique_ptr<IoExecution> io_;

  std::function<void(const DmaRecord&)> dma_observer_;
  std::function<void(const CommandSteps&)> command_observer_;
  DataGate data_gate_;

  // Statistics.
  std::uint64_t fetched_ = 0;
  std::uint64_t io_fetched_ = 0;
  std::uint64_t completed_ = 0;
  std::uint64_t admin_completed_ = 0;
  std::uint64_t doorbell_writes_ = 0;
  std::uint64_t errors_ = 0;
  // Commands fetched with a CID already outstanding on their SQ (the host
  // broke NVMe's rule; each completed with Command ID Conflict).
  std::uint64_t cid_conflicts_ = 0;
  Picoseconds first_io_doorbell_ = 0;
  Picoseconds last_io_completion_ = 0;
  std::vector<std::uint64_t> status_counts_;  // by (SCT << 8 | SC)
  LatencyHistogram fetch_wait_;               // SQ doorbell arrival -> entry in the controller
  LatencyHistogram service_;                  // entry in the controller -> CQE written
};

}  // namespace gpunvme::nvme
