// A GPU-resident NVMe target for the hardware backend: a persistent kernel
// whose serving warps, on SMs they hold alone, poll the SQ tail doorbells of
// a BAR0 image in GPU memory, fetch 64 B submission entries from rings in GPU
// memory, copy each read's data from a namespace image in HBM into the buffer
// its PRPs name, and post 16 B completion entries with phase tags, SQ head
// (SQHD) and status, byte-exactly as the host-thread target
// (soft_controller.h) lays them out. The GPU code runs unchanged against it.
//
// A serving warp takes up to 32 SQEs of one queue per pass (one per lane),
// copies their data together (the whole warp streams each command's bytes)
// and posts their CQEs after a device-scope fence, so that no CQE overtakes
// its data. Its ceiling is HBM and the serving warps, tens of millions of
// commands per second rather than the host threads' ~2 million: the
// strategies' own GPU-side costs (atomics, tickets, CQ scans, doorbell
// serialisation) then set the pace.
//
// It offers the proposed NVMe extensions a target that polls memory can
// implement (target_extensions.h): indexed completion, batch completion
// notification, wide CIDs and controller-polled shadow doorbells; it refuses
// warp doorbells.
//
// It checks the host side as the software target does (doorbell values
// outside the ring, SQ overruns, CQ heads moved past the tail, CIDs repeated
// within a batch) and gives bad commands the statuses a controller gives.
#pragma once

#include <cstdint>
#include <string>

#include "sim/frontend/hardware/nvme_target.h"

namespace gpunvme::hw {

class GpuTarget : public NvmeTarget {
 public:
  struct Options {
    std::uint64_t capacity_bytes = 256ull << 20;  // namespace image in HBM
    std::uint32_t lba_bytes = 512;
    std::uint32_t sms = 8;             // SMs the serving kernel holds, one block each
    std::uint32_t serving_warps = 32;  // spread over those SMs; queue q by warp (q - 1) % warps
    std::uint8_t dstrd = 0;            // CAP.DSTRD: doorbell stride 4 << dstrd bytes
    std::uint32_t max_queues = 1024;
    std::uint32_t max_entries = 65536;     // CAP.MQES + 1
    std::uint32_t max_transfer = 1 << 17;  // MDTS: 128 KiB (32 pages)
    // GPU memory the controller may DMA to (PRPs must fall inside).
    std::uint64_t dma_base = 0;
    std::uint64_t dma_bytes = 0;
    std::uint64_t command_log = 1 << 21;  // commands whose times are kept per run
  };

  explicit GpuTarget(Options options);
  ~GpuTarget() override;
  GpuTarget(const GpuTarget&) = delete;
  GpuTarget& operator=(const GpuTarget&) = delete;

  std::string kind() const override { return "gpu_target"; }
  std::string description() const override;
  nvme::Cap cap() const override { return cap_; }
  std::uint64_t bar0_device() const override { return bar0_; }
  IoQueueRings create_io_queue(std::uint16_t qid, std::uint32_t entries) override;
  ExtensionSupport extensions() const override;
  void delete_io_queues() override;
  void start() override;
  void stop() override;
  TargetStats stats() const override;  // call while stopped
  void reset_stats() override;
  std::uint64_t capacity_lbas() const override { return capacity_lbas_; }
  std::uint32_t lba_bytes() const override { return options_.lba_bytes; }
  std::uint32_t reserved_sms() const override { return options_.sms; }

  // The per-run records the serving kernel keeps in GPU memory.
  struct DeviceState;

 protected:
  IoQueueRings create_extended_io_queue(std::uint16_t qid, std::uint32_t entries,
                                        const QueueExtensions& extensions) override;
  void use_shadow_doorbells(const ShadowBuffers& buffers) override;

 private:
  Options options_;
  nvme::Cap cap_{};
  std::uint64_t capacity_lbas_ = 0;
  std::uint64_t bar0_ = 0;  // device address
  std::uint64_t bar0_bytes_ = 0;
  unsigned char* namespace_ = nullptr;
  DeviceState* state_ = nullptr;  // host-side bookkeeping of the device buffers
  bool running_ = false;
  ShadowBuffers shadow_{};  // shadow == 0: the doorbell registers
};

}  // namespace gpunvme::hw
