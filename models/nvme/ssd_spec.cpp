// The declared parameters of an NVMe SSD: the controller's, then the flash
// back end's (models/flash/flash_params.cpp).
#include "models/flash/flash_params.h"
#include "models/nvme/controller.h"
#include "models/pcie/dma_engine.h"
#include "models/pcie/pcie_specs.h"

namespace gpunvme::nvme {

namespace {
std::vector<ParamSpec> controller_params() {
  return {
      // --- queues, registers and identify data
      integer_param(
          "max_io_queues", "", 128, 1, 65535,
          "I/O queue pairs the controller grants at most (Set Features, Number of "
          "Queues, grants min(requested, this))",
          "calibration notes: real drives grant 8-135; 128 is common [calibration-notes]"),
      integer_param("mqes", "entries", 16384, 2, 65536,
                    "largest queue the controller accepts (CAP.MQES + 1)",
                    "calibration notes: MQES seen from 128 to 16,384 [calibration-notes]"),
      integer_param("mdts", "", 5, 0, 15,
                    "maximum data transfer size as a power of two of 4 KiB pages (0 = no limit)",
                    "NVMe base spec 2.0 Identify Controller byte 77; 5 (128 KiB) is common "
                    "[nvme-base-2.0]"),
      integer_param("dstrd", "", 0, 0, 15, "doorbell stride: doorbells are 4 << DSTRD bytes apart",
                    "NVMe base spec 2.0 CAP.DSTRD; physical controllers report 0 [nvme-base-2.0]"),
      integer_choice_param(
          "lba_bytes", "B", 512, {512, 4096}, "namespace LBA size",
          "NVMe namespaces are formatted with 512 B or 4 KiB LBAs [nvme-base-2.0]"),
      real_param("ready_delay_us", "us", 20.0, 0.0, 1e7,
                 "time from CC.EN = 1 to CSTS.RDY = 1 (CAP.TO is derived from it)",
                 "estimate: not published by drive vendors; the spec bounds it only by CAP.TO (500 "
                 "ms units) and QEMU's emulated controller is ready at once; kept short so "
                 "bring-up stays small against workload time: set a drive's measured figure where "
                 "known [nvme-base-2.0] [qemu-nvme]"),
      real_param("admin_command_ns", "ns", 2000.0, 0.0, 1e9,
                 "processor time of one admin command (Identify, Set Features, Create/Delete "
                 "queue); admin commands run one at a time",
                 "estimate: of the order of an I/O command's processing (command_overhead_ns "
                 "default); not published"),
      bool_param(
          "wrr_supported", false,
          "weighted round robin with urgent priority class offered (CAP.AMS bit 17)",
          "NVMe base spec 1.4 4.13: optional; client drives commonly omit it [nvme-base-1.4]"),
      integer_param("arbitration_burst_log2", "", 3, 0, 7,
                    "arbitration burst at reset: 2^AB commands per SQ turn, 7 = no limit "
                    "(also reported as Identify RAB)",
                    "estimate: 8 commands, one 512 B SQ fetch read (sq_fetch_burst)"),
      bool_param("sgl_supported", false,
                 "SGLs accepted for NVM commands (Identify SGLS bits 1:0 = 01b); otherwise "
                 "an SGL command gets Invalid Field in Command",
                 "estimate: client drives (980 PRO class) report no SGL support; many "
                 "data-centre drives support them"),
      integer_param("msix_vectors", "", 0, 0, 2048,
                    "MSI-X vectors (0 = one per queue pair plus the admin queue)",
                    "estimate: Linux asks one vector per I/O queue; drives offer 32-130 [linux]"),
      bool_param("volatile_write_cache", true,
                 "a volatile write cache is present (Identify VWC): Flush and FUA writes wait "
                 "until buffered data is programmed; without one (a power-loss protected "
                 "buffer) they complete once the data is in the buffer",
                 "NVMe base spec 1.4 Identify VWC; data-centre drives with power-loss protection "
                 "report none [nvme-base-1.4]"),
      // --- controller memory buffer and shadow doorbells
      integer_param("cmb_mib", "MiB", 0, 0, 4096,
                    "controller memory buffer size (0 = none); SQs, CQs, PRP lists and data "
                    "may be placed there",
                    "estimate: CMBs of a few MiB to 1 GiB are offered by some data-centre and "
                    "computational-storage controllers; most drives have none"),
      real_param("cmb_access_ns", "ns", 100.0, 0.0, 1e6,
                 "latency of the controller's own access to its CMB (an SQE fetch, a CQE post "
                 "or data there costs this instead of a PCIe transaction)",
                 "estimate: one on-controller SRAM/DRAM access"),
      bool_param("shadow_doorbells", false,
                 "Doorbell Buffer Config supported (Identify OACS bit 8): the controller polls "
                 "shadow doorbells in host or GPU memory and publishes EventIdx",
                 "calibration notes: intended for emulated controllers; physical SSDs rarely "
                 "support it [calibration-notes]"),
      real_param("shadow_poll_ns", "ns", 1000.0, 1.0, 1e9,
                 "interval of the controller's shadow doorbell poll: an update is read at the "
                 "next multiple of this after the host writes it",
                 "estimate: a firmware polling loop over the active queues of about 1 us"),
      // --- command processing
      integer_param("controller_cores", "", 4, 1, 256, "command processors working in parallel",
                    "estimate; device profiles calibrate it with command_overhead_ns"),
      real_list_param("processor_time_scale", "", {}, 0.01, 100.0,
                      "each command processor's time for its work relative to the nominal "
                      "(command_overhead_ns, command_ns_per_kib, batch_overhead_ns): one entry "
                      "per processor (controller_cores), or none for all 1",
                      "SSD firmware cores are taken as equal (none); gpunvme validate fits it per "
                      "case to each software-controller thread's busy time relative to the "
                      "others', which differ by up to 2x within one run "
                      "(configs/measurements/hw-strategies-h100-2026-11-24.json, "
                      "target.threads)"),
      real_param("command_overhead_ns", "ns", 2000.0, 0.0, 1e7,
                 "processor time per command (parse, translate, schedule media, post completion)",
                 "estimate; device profiles calibrate it from their datasheet IOPS"),
      real_param("command_ns_per_kib", "ns/KiB", 0.0, 0.0, 1e6,
                 "processor time per KiB of data a command moves, added to command_overhead_ns",
                 "estimate: 0 unless a profile calibrates a size-dependent cost from datasheet "
                 "IOPS at two transfer sizes (see intel-optane-p5800x)"),
      bool_param("batch_service", false,
                 "processors poll their own I/O queues (queue q: processor (q - 1) mod "
                 "controller_cores) and, when free, fetch up to sq_fetch_burst entries as one "
                 "batch that finishes together, after batch_overhead_ns plus each command's "
                 "processor time; the processor takes no other batch until the batch's "
                 "completions are posted, and batch_gap_ns after that",
                 "sim/hardware/soft_controller.cpp: thread t polls queues t+1, t+1+threads, ... "
                 "and serves up to 64 SQEs of a queue per pass with one copy synchronisation; "
                 "SSD firmware fetches ahead and processes commands one by one (false)"),
      real_param("batch_gap_ns", "ns", 0.0, 0.0, 1e7,
                 "processor time after each batch before it takes the next (batch_service "
                 "only): the software controller's pass to its next queue",
                 "measured per case by gpunvme validate from the software controller's "
                 "back-to-back batches (configs/measurements/hw-strategies-h100-2026-11-24.json, "
                 "target.batch_gap_ns); 0 for SSDs"),
      real_param("batch_overhead_ns", "ns", 0.0, 0.0, 1e7,
                 "processor time per batch on top of its commands' (batch_service only)",
                 "measured per case by gpunvme validate from the software controller's service "
                 "time (configs/measurements/hw-strategies-h100-2026-11-24.json); 0 for SSDs"),
      real_param("datapath_gbps", "GB/s", 0.0, 0.0, 1e4,
                 "throughput of the controller's data path (buffers, ECC, DMA engines), shared "
                 "by reads and writes (0 = not a limit)",
                 "estimate: 0 unless a profile's datasheet sequential figure lies below its "
                 "flash and link limits (see samsung-pm1743)"),
      integer_param("max_active_commands", "", 256, 1, 1e6,
                    "command slots: I/O commands the controller holds at once, each from the "
                    "request for its SQE until its completion is posted; the fetch engine reads "
                    "an SQE only into a free slot, so with every slot busy further commands wait "
                    "in their SQ (ssd_fetch_wait) and the arbiter picks the SQ served when one "
                    "frees (results: ssds.*.slots)",
                    "estimate: drives do not publish their internal command queue depth; by "
                    "Little's law a drive needs at least its peak IOPS x QD1 latency commands in "
                    "flight, about 130 for a 2.5 M IOPS NAND drive at 52 us, and 256 leaves about "
                    "2x headroom; device profiles set their own "
                    "(configs/measurements/published-ssd-reads.json)"),
      integer_param("sq_fetch_burst", "entries", 8, 1, 64,
                    "submission entries one SQ fetch reads at most (one PCIe read request)",
                    "estimate: 8 x 64 B = one 512 B read request at the common MRRS (PCIe table of "
                    "the calibration notes) [calibration-notes]"),
      integer_param("max_outstanding_fetches", "", 16, 1, 1024,
                    "SQ fetch reads the controller keeps in flight",
                    "estimate; PCIe tags allow up to 256 (10-bit tags: 768) [pcie-base-5.0]"),
      // --- injected faults
      real_param("fault_media_error_rate", "", 0.0, 0.0, 1.0,
                 "probability that an I/O command fails on the media (reads: Unrecovered Read "
                 "Error, writes: Write Fault)",
                 "user: fault injection, off by default [user-choice]"),
      real_param("fault_command_error_rate", "", 0.0, 0.0, 1.0,
                 "probability that an I/O command fails with Internal Error after processing",
                 "user: fault injection, off by default [user-choice]"),
      integer_param("fault_seed", "", 1, 0, 9.007199254740992e15,
                    "seed of the fault draws (each command's draw depends only on it and the "
                    "command's index)",
                    "user [user-choice]"),
      string_list_param("fault_schedule", {},
                        "faults: KIND@cmd=N (the N-th I/O command fetched, from 0) or "
                        "KIND@us=T (the first fetched at or after T us); KIND media, command, "
                        "timeout (the command is lost until the host aborts it), reset (the "
                        "controller aborts every outstanding command and recovers) or "
                        "link_down (the SSD's link retrains for link_retrain_us)",
                        "user: fault injection, empty by default [user-choice]"),
      real_param("link_retrain_us", "us", 50.0, 0.0, 1e6,
                 "time the SSD's PCIe link takes to retrain after an injected link_down; "
                 "traffic on the link waits meanwhile",
                 "estimate: PCIe Base Spec 5.0 4.2.6.4 bounds each Recovery substate by a 24 ms "
                 "timeout; a retrain at the same rate (TS1/TS2 exchange, no equalization) takes "
                 "tens of microseconds [pcie-base-5.0]"),
      real_param("io_timeout_us", "us", 10000.0, 1.0, 1e9,
                 "the host's per-command timeout for this SSD: a command outstanding longer "
                 "is aborted (NVMe Abort) and reported failed, on the host paths by the "
                 "driver, on the GPU path as the warps' deadline; armed only when the "
                 "fault_schedule can lose a command (timeout, reset, link_down)",
                 "Linux nvme_core.io_timeout is 30 s; 10 ms here keeps a simulated run with a lost "
                 "command short while staying far above any command's latency in the shipped "
                 "scenarios (p99 < 1 ms) [linux]"),
      // --- datasheet figures the calibration tests hold the model to
      integer_param("datasheet_read_iops_4k", "IOPS", 0, 0, 1e9,
                    "datasheet 4 KiB random-read IOPS (0 = unknown); checked by the calibration "
                    "tests, not used by the model",
                    "device profile [device-profiles]"),
      integer_param("datasheet_write_iops_4k", "IOPS", 0, 0, 1e9,
                    "datasheet 4 KiB random-write IOPS (0 = unknown)",
                    "device profile "
                    "[device-profiles]"),
      real_param("datasheet_seq_read_gbps", "GB/s", 0.0, 0.0, 1e3,
                 "datasheet sequential read bandwidth (0 = unknown)",
                 "device profile "
                 "[device-profiles]"),
      real_param("datasheet_seq_write_gbps", "GB/s", 0.0, 0.0, 1e3,
                 "datasheet sequential write bandwidth (0 = unknown)",
                 "device profile "
                 "[device-profiles]"),
  };
}
}  // namespace

const ComponentSpec& nvme_ssd_spec() {
  static const ComponentSpec spec = [] {
    ComponentSpec s{"nvme_ssd",
                    "An NVMe SSD: the controller (registers, admin and I/O queues, doorbells, "
                    "arbitration, DMA, interrupts, faults) and its flash back end. Device "
                    "profiles in configs/ssd/ set these per drive.",
                    controller_params()};
    for (const ParamSpec& p : flash::flash_param_specs()) s.params.push_back(p);
    for (ParamSpec& p : pcie::dma_engine_params(
             "dma_", "controller's data DMA engine (read data out, write data in)", 131072,
             "estimate: 128 KiB = 32 pages, the transfer limit of the common MDTS 5 (NVMe base "
             "spec 1.4 §3.1.1; the shipped profiles' mdts), so one command's contiguous data is "
             "one burst: one event per hop per command, as before the engine existed; the fabric "
             "still splits it into MPS-sized TLPs [nvme-base-1.4] [nvme-base-2.0]",
             64,
             "estimate: 64 chunks of up to 128 KiB in flight exceed what an x4 drive's "
             "data path keeps busy (a 4 KiB posted write lands in ~1 us at ~1.5 M IOPS: ~2 in "
             "flight); the fabric's read_tags limit binds first for write commands")) {
      s.params.push_back(std::move(p));
    }
    for (ParamSpec& p : pcie::endpoint_credit_params("SSD")) s.params.push_back(std::move(p));
    return s;
  }();
  return spec;
}

}  // namespace gpunvme::nvme
