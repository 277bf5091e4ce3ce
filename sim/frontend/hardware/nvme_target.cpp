#include "sim/frontend/hardware/nvme_target.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_status.h"

namespace gpunvme::hw {

Distribution summarize(std::vector<double> v) {
  Distribution d;
  d.count = v.size();
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto at = [&](double q) {
    return v[std::min<std::size_t>(v.size() - 1,
                                   static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
  };
  d.mean = sum / static_cast<double>(v.size());
  d.min = v.front();
  d.max = v.back();
  d.p50 = at(0.50);
  d.p90 = at(0.90);
  d.p99 = at(0.99);
  return d;
}

nvme::Cap target_cap(std::uint32_t max_entries, std::uint8_t dstrd) {
  nvme::Cap cap{};
  cap.mqes = static_cast<std::uint16_t>(max_entries - 1);
  cap.cqr = true;
  cap.ams = 0;
  cap.to = 1;
  cap.dstrd = dstrd;
  cap.css = nvme::kCapCssNvm;
  cap.mpsmin = 0;
  cap.mpsmax = 0;
  return cap;
}

std::vector<unsigned char> bar0_image(const nvme::Cap& cap, std::uint32_t max_queues) {
  std::vector<unsigned char> image(
      nvme::cq_head_doorbell_offset(static_cast<std::uint16_t>(max_queues), cap.dstrd) + 4, 0);
  const std::uint64_t cap_value = cap.encode();
  std::memcpy(image.data() + nvme::reg::kCap, &cap_value, 8);
  const std::uint32_t vs = nvme::make_version(2, 0);
  std::memcpy(image.data() + nvme::reg::kVs, &vs, 4);
  nvme::Cc cc{};
  cc.en = true;
  cc.iosqes = nvme::kSqEntrySizeLog2;
  cc.iocqes = nvme::kCqEntrySizeLog2;
  const std::uint32_t cc_value = cc.encode();
  std::memcpy(image.data() + nvme::reg::kCc, &cc_value, 4);
  nvme::Csts csts{};
  csts.rdy = true;
  const std::uint32_t csts_value = csts.encode();
  std::memcpy(image.data() + nvme::reg::kCsts, &csts_value, 4);
  return image;
}

void fit_batch_line(const std::vector<std::pair<double, double>>& batches, TargetStats& out) {
  std::vector<double> sizes;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [commands, ns] : batches) {
    sizes.push_back(commands);
    n += 1;
    sx += commands;
    sy += ns;
    sxx += commands * commands;
    sxy += commands * ns;
  }
  out.batches = static_cast<std::uint64_t>(n);
  out.batch_commands = summarize(std::move(sizes));
  const double spread = n * sxx - sx * sx;
  if (n >= 2 && spread > 0) {
    out.batch_per_command_ns = (n * sxy - sx * sy) / spread;
    out.batch_fixed_ns = (sy - out.batch_per_command_ns * sx) / n;
  } else if (n >= 1) {
    out.batch_fixed_ns = sy / n;  // one batch size only: no slope to fit
  }
}

IoQueueRings NvmeTarget::create_io_queue_pair(const nvme::SubmissionEntry& create_cq,
                                              const nvme::SubmissionEntry& create_sq) {
  const QueuePairCreation c = check_queue_pair(create_cq, create_sq, extensions());
  if (c.status != nvme::Status::Success) {
    throw std::runtime_error(kind() + ": Create I/O queue " + std::to_string(c.qid) + " refused (" +
                             std::string(nvme::status_name(c.status)) + "): " + c.reason);
  }
  return create_extended_io_queue(c.qid, c.entries, c.ext);
}

void NvmeTarget::configure_doorbell_buffer(const nvme::SubmissionEntry& doorbell_buffer_config) {
  const ShadowBuffers b = check_doorbell_buffer_config(doorbell_buffer_config, extensions());
  if (b.status != nvme::Status::Success) {
    throw std::runtime_error(kind() + ": Doorbell Buffer Config refused (" +
                             std::string(nvme::status_name(b.status)) + "): " + b.reason);
  }
  use_shadow_doorbells(b);
}

}  // namespace gpunvme::hw
