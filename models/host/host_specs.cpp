#include "models/host/host_specs.h"

namespace gpunvme::host {

const ComponentSpec& cpu_spec() {
  static const ComponentSpec spec{
      "cpu",
      "A CPU socket: cores that run the host's I/O stack; its root complexes and memory name it "
      "as their socket.",
      {
          integer_param("cores", "", 32, 1, 1024, "cores available to the I/O path",
                        "Intel Xeon Platinum 8480+ has 56; 32 is a common partition "
                        "[intel-ark-8480]"),
          real_param("clock_ghz", "GHz", 2.0, 0.1, 10.0, "core clock",
                     "Intel Xeon Platinum 8480+ base clock 2.0 GHz (Intel ARK) [intel-ark-8480]"),
          // Per-I/O costs of the CPU-initiated paths (gds, bounce), stage by
          // stage of the real stack. With the defaults a 4 KiB read from the
          // GPU with a system call and an interrupt to itself costs a core
          // 4.5 us on the gds path and 5.8 us on the bounce path.
          enum_param("completion", "interrupt", {"polling", "interrupt"},
                     "how a core learns that a command completed: the SSD's MSI-X interrupt wakes "
                     "it, or it polls the CQ (io_uring IOPOLL, SPDK, cuFile use_poll_mode)",
                     "Linux's nvme driver completes through interrupts unless poll queues are "
                     "configured (nvme.poll_queues) and the I/O asks for polling; cuFile's "
                     "use_poll_mode is false by default (GDS cufile.json) [linux] [nvidia-gds]"),
          real_param(
              "submit_ns", "ns", 550.0, 0.0, 1e6,
              "core time of the block layer and NVMe driver to turn one request into an NVMe "
              "command in the SQ (tag, request setup, SQE, doorbell)",
              "fitted with complete_irq_ns: fio 4 KiB random reads of an Optane P5800X, 6 jobs "
              "QD32, 2.589 M IOPS at 60.26 % system CPU of 6 cores = 1.40 us of kernel time per "
              "I/O (Level1Techs forum, 'Toward 20 Million I/Ops', 2021), with fio's 4 I/Os per "
              "submit and per reap: 550 + 400 + (syscall_ns + interrupt_ns) / 4 = 1.40 us. "
              "io_uring polled with registered files and buffers is leaner: 2.58 M IOPS per core, "
              "388 ns per I/O (J. Axboe, linux-block, Aug 2020) [fio] [level1techs-2021] "
              "[axboe-linux-block-2020]"),
          real_param("syscall_ns", "ns", 300.0, 0.0, 1e6,
                     "core time of one submission system call (io_uring_enter, ioctl), paid once "
                     "per batch of commands a core submits together",
                     "estimate: system call entry and exit with speculative-execution "
                     "mitigations costs a few hundred ns on current x86 servers; the page-cache "
                     "pread of 4 KiB measured 852 ns in all "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          real_param("complete_poll_ns", "ns", 40.0, 0.0, 1e6,
                     "core time to reap one completion entry by polling (CQE, request "
                     "completion, CQ head)",
                     "estimate: io_uring polled at 10 M IOPS per core spends ~100 ns per I/O in "
                     "all (io_uring author's results, 2021) [axboe-phoronix-2021]"),
          real_param("interrupt_ns", "ns", 1500.0, 0.0, 1e6,
                     "core time of one interrupt handler run: MSI-X delivery, hard and soft "
                     "interrupt, waking the waiting task (completion = interrupt)",
                     "estimate: interrupt entry plus a task wake-up and context switch, ~1-2 us on "
                     "Linux (lmbench lat_ctx class measurements) [linux] [lmbench]"),
          real_param(
              "complete_irq_ns", "ns", 400.0, 0.0, 1e6,
              "core time per completion entry handled in an interrupt (CQE, block-layer "
              "completion in softirq, the waiter's completion event)",
              "fitted with submit_ns to fio's 1.40 us of kernel time per I/O (see submit_ns) "
              "[level1techs-2021] [fio]"),
          real_param("dma_map_ns", "ns", 400.0, 0.0, 1e6,
                     "core time to map and unmap one command's buffer in the IOMMU",
                     "seed 000: ~8-12 M IOPS per core in IOMMU passthrough, ~2 M with DMA mapping, "
                     "i.e. ~100 ns vs ~500 ns per I/O [seed-000]"),
          enum_param("iommu_dma_map", "auto", {"auto", "on", "off"},
                     "charge dma_map_ns per command: auto = when the SSD's DMA enters a root "
                     "complex whose IOMMU translates (root_complex iommu = translate)",
                     "Linux DMA API: streaming mappings cost an IOMMU map only when the device is "
                     "translated (not with iommu=pt) [linux]"),
          real_param("fs_ns", "ns", 450.0, 0.0, 1e6,
                     "core time of the file system per I/O (O_DIRECT read or write: file to "
                     "block mapping, bio set-up), on the gds and bounce paths",
                     "measured: pread of 4 KiB from the page cache of ext4, median 852 ns, minus "
                     "syscall_ns and a 4 KiB copy (~100 ns), H100 machine, 2026-11-26 "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          real_param("cufile_ns", "ns", 1000.0, 0.0, 1e7,
                     "core time of the cuFile library per I/O on the gds path (cuFileRead or "
                     "cuFileBatchIOSubmit with nvidia-fs: argument checks, handle and buffer "
                     "look-ups, the call into the kernel, the completion's return)",
                     "fitted: gdsio GPU_BATCH 4 KiB random reads, 1 thread, I/O depth 128, 1.33 "
                     "GiB/s = 348 K IOPS on a Samsung PM983 (540 K IOPS) with nvidia-fs (NVIDIA "
                     "developer forum, 'Getting the best performance from NVIDIA GPUDirect Storage "
                     "APIs: batch IO', 2023): 2.87 us of that thread per I/O, minus this model's "
                     "driver, file system, look-up and completion costs at that depth (~1.9 us) = "
                     "~1.0 us. Measured without nvidia-fs (compatibility mode) on the lent H100: "
                     "4.5 us per cuFileRead beyond the pread and the copy it makes, 4.2 us per "
                     "read through cuFileBatchIOSubmit "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json): use 4500 "
                     "for cuFile in compatibility mode [nvidia-gds] [nvidia-forum-gds-batch-2023]"),
          real_param("gpu_buffer_lookup_ns", "ns", 200.0, 0.0, 1e6,
                     "core time per gds I/O to resolve the registered GPU buffer to bus addresses "
                     "for the command (nvidia-fs or P2PDMA page look-up)",
                     "estimate: a look-up in the registration table plus one GPU page (64 KiB) per "
                     "4 KiB I/O; not measurable on the lent machines, which have no nvidia-fs "
                     "(cuFile ran in compatibility mode) [nvidia-gds]"),
          real_param("request_notice_ns", "ns", 280.0, 0.0, 1e6,
                     "time from a GPU request landing in host memory to a polling core having "
                     "it: the cache-line transfer of the GPU's flag to the CPU",
                     "measured: GPU->CPU->GPU flag round trip 1936 ns minus the GPU's poll read of "
                     "host memory 1051 ns and the host's store 80 ns = 806 ns one way, minus the "
                     "model's 529 ns PCIe flight of the 64 B posted write; H100 machine, "
                     "2026-11-26 (configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          real_param("poll_period_ns", "ns", 0.0, 0.0, 1e7,
                     "period of the host thread's poll loop over its request rings; a request "
                     "waits half a period on average before the loop reaches its ring",
                     "measured setup: one thread spinning on one flag, whose loop adds nothing "
                     "beyond request_notice_ns "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json); a thread "
                     "that scans n rings has a period "
                     "of about n x request_notice_ns"),
          real_param("request_ns", "ns", 50.0, 0.0, 1e6,
                     "core time to take one GPU request from its ring (read the descriptor, find "
                     "the blocks)",
                     "estimate: one 64 B descriptor already in cache plus a table lookup"),
          real_param("notify_ns", "ns", 80.0, 0.0, 1e6,
                     "core time to post a completion flag to the GPU (the store and its fence)",
                     "measured: host store of the reply word plus fence, median 80 ns, H100 "
                     "machine, 2026-11-26 "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          real_param(
              "copy_launch_ns", "ns", 2200.0, 0.0, 1e7,
              "core time to start one copy between a pinned bounce buffer and GPU memory "
              "(cudaMemcpyAsync)",
              "measured: cudaMemcpyAsync per call, medians 1.4-2.4 us over sizes 4 KiB-1 MiB "
              "and directions, median of medians 2.2 us, H100 machine, 2026-11-26 "
              "(configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          real_param("copy_sync_ns", "ns", 330.0, 0.0, 1e7,
                     "core time to learn that such a copy has finished (cudaStreamSynchronize or "
                     "an event query once the copy engine is done)",
                     "measured: cudaStreamSynchronize of a stream whose copy had finished, median "
                     "329 ns, H100 machine, 2026-11-26 "
                     "(configs/measurements/host-software-costs-h100-2026-11-26.json)"),
          integer_param("irq_coalescing_threshold", "entries", 1, 1, 256,
                        "NVMe Interrupt Coalescing (Set Features 08h) Aggregation Threshold as the "
                        "driver programs it: completion entries per interrupt (THR + 1)",
                        "NVMe Base Specification 2.0, Interrupt Coalescing; Linux's nvme driver "
                        "leaves the feature at its reset value (off) [nvme-base-2.0] [linux]"),
          integer_param("irq_coalescing_time_100us", "100 us", 0, 0, 255,
                        "NVMe Interrupt Coalescing Aggregation Time: the longest a completion "
                        "waits for its interrupt, in 100 us units (0 = no delay: coalescing off)",
                        "NVMe Base Specification 2.0, Interrupt Coalescing (TIME, 100 us units); "
                        "off by default as in Linux [nvme-base-2.0] [linux]"),
      }};
  return spec;
}

const ComponentSpec& host_memory_spec() {
  static const ComponentSpec spec{
      "host_memory",
      "DRAM behind a CPU socket, reachable by DMA through that socket's root complexes.",
      {
          string_param("socket", "", "id of the cpu node this memory belongs to",
                       "topology vocabulary [topology-file]"),
          real_param("capacity_gib", "GiB", 512.0, 1.0, 1e6, "capacity",
                     "seed 000: host DRAM tier 512 GB - 2 TB [seed-000]"),
          real_param("dma_latency_ns", "ns", 200.0, 0.0, 1e5,
                     "time memory takes to serve an inbound DMA read or absorb a write (DRAM "
                     "access plus coherence)",
                     "estimate: with the link and root complex defaults, a 64 B DMA read on Gen3 "
                     "x8 takes ~570 ns round trip, pcie-bench's measured median (Neugebauer et "
                     "al., SIGCOMM 2018) [pcie-bench]"),
          real_param("bandwidth_gbps", "GB/s", 300.0, 1.0, 1e4, "DRAM bandwidth of the socket",
                     "8 channels DDR5-4800 x 38.4 GB/s = 307 GB/s (JEDEC DDR5; Intel 4th gen Xeon) "
                     "[jedec-ddr5] [intel-xeon-4th-gen]"),
      }};
  return spec;
}

}  // namespace gpunvme::host
