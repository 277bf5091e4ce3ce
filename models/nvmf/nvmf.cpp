#include "models/nvmf/nvmf.h"

#include <algorithm>
#include <stdexcept>

#include "models/network/network.h"

namespace gpunvme::nvmf {

NvmfTargetParams NvmfTargetParams::from(const ParamValues& values) {
  NvmfTargetParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/nvmf/nvmf_target_params.def"
#undef GPUNVME_PARAM
  return out;
}

DpuParams DpuParams::from(const ParamValues& values) {
  DpuParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/nvmf/dpu_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& nvmf_target_spec() {
  static const ComponentSpec spec{
      "nvmf_target",
      "An NVMe-oF RDMA target on host cores (SPDK-like), a DPU's Arm cores or offloaded to the "
      "NIC: per-I/O time, in-capsule data.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/nvmf/nvmf_target_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

const ComponentSpec& dpu_spec() {
  static const ComponentSpec spec{
      "dpu",
      "A DPU: an rdma_nic with its own Arm cores (NVMe-oF terminated on them) and PCIe switch.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/nvmf/dpu_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

const ComponentSpec& dpu_node_spec() {
  static const ComponentSpec spec = [] {
    ComponentSpec out = dpu_spec();
    for (const ParamSpec& p : nic::rdma_nic_spec().params) out.params.push_back(p);
    return out;
  }();
  return spec;
}

std::vector<ComponentSpec> remote_storage_specs() {
  return {network::network_link_spec(), network::network_switch_spec(), nic::rdma_nic_spec(),
          nvmf_target_spec(), dpu_spec()};
}

std::uint64_t command_capsule_bytes(bool write, std::uint64_t bytes,
                                    std::uint64_t in_capsule_data_bytes) {
  return kCommandCapsuleBytes + (write && bytes <= in_capsule_data_bytes ? bytes : 0);
}

TargetCores::TargetCores(std::int64_t cores, Picoseconds io_time) : io_time_(io_time) {
  if (cores < 1) throw std::invalid_argument("nvmf target: at least one core is needed");
  cores_.resize(static_cast<std::size_t>(cores));
}

NextFreeServer::Booking TargetCores::run(Picoseconds ready, Picoseconds work) {
  auto core = std::min_element(
      cores_.begin(), cores_.end(),
      [](const NextFreeServer& a, const NextFreeServer& b) { return a.free_at() < b.free_at(); });
  return core->book(ready, work);
}

Picoseconds TargetCores::busy_ps() const {
  Picoseconds total = 0;
  for (const NextFreeServer& c : cores_) total += c.busy_ps();
  return total;
}

double TargetCores::max_iops() const {
  if (io_time_ == 0) return 0.0;
  return static_cast<double>(cores_.size()) * 1e12 / static_cast<double>(io_time_);
}

namespace {

// When each packet's last bit reaches the far NIC: straight off the link,
// or forwarded by the switch onto the next cable.
std::vector<Picoseconds> tails(const nic::SentMessage& sent, SwitchHop* via, bool to_target,
                               Picoseconds cable) {
  std::vector<Picoseconds> out;
  out.reserve(sent.packets.size());
  for (const network::PacketTransit& p : sent.packets) {
    if (via == nullptr) {
      out.push_back(p.tail_arrival);
      continue;
    }
    const std::uint32_t port = to_target ? via->port_to_target : via->port_to_initiator;
    const network::PacketTransit f =
        via->network_switch.forward(port, p.head_arrival, p.tail_arrival, p.wire_bytes);
    out.push_back(f.tail_arrival + cable);
  }
  return out;
}

}  // namespace

RemoteRead remote_read(Picoseconds posted, std::uint64_t bytes, std::uint32_t memory_key,
                       std::uint64_t address, nic::RdmaNic& initiator, nic::RdmaNic& target_nic,
                       network::NetworkLink& link, TargetCores& target, Picoseconds ssd_time,
                       SwitchHop* via) {
  using network::RdmaOp;
  const auto mtu = static_cast<std::uint32_t>(link.params().mtu_bytes);
  const Picoseconds cable = link.params().latency_ns;
  // Capsule rings and the target's buffers are registered once, under keys
  // of their own, so their translations stay cached.
  constexpr std::uint32_t kInitiatorCapsules = kReservedMemoryKeys;
  constexpr std::uint32_t kTargetCapsules = kReservedMemoryKeys + 1;
  constexpr std::uint32_t kTargetBuffers = kReservedMemoryKeys + 2;

  RemoteRead r;
  r.posted = posted;
  const nic::RdmaMessage command{RdmaOp::send, kCommandCapsuleBytes, kInitiatorCapsules, 0};
  const nic::SentMessage sent_command = initiator.transmit(posted, command, link, 0);
  const nic::DeliveredMessage at_target =
      target_nic.receive(tails(sent_command, via, true, cable),
                         {RdmaOp::send, kCommandCapsuleBytes, kTargetCapsules, 0}, mtu);
  r.command_at_target = at_target.completed;
  r.target_core_done = target.serve(r.command_at_target).end;
  r.ssd_done = r.target_core_done + ssd_time;

  // Data into the initiator's buffer, then the response capsule behind it
  // on the same queue pair (RC ordering).
  const nic::SentMessage sent_data =
      target_nic.transmit(r.ssd_done, {RdmaOp::rdma_write, bytes, kTargetBuffers, 0}, link, 1);
  const nic::DeliveredMessage data = initiator.receive(
      tails(sent_data, via, false, cable), {RdmaOp::rdma_write, bytes, memory_key, address}, mtu);
  r.data_written = data.data_written;
  const nic::SentMessage sent_response = target_nic.transmit(
      r.ssd_done, {RdmaOp::send, kResponseCapsuleBytes, kTargetCapsules, 4096}, link, 1);
  const nic::DeliveredMessage response =
      initiator.receive(tails(sent_response, via, false, cable),
                        {RdmaOp::send, kResponseCapsuleBytes, kInitiatorCapsules, 4096}, mtu);
  r.completed = std::max(response.completed, r.data_written);

  r.wire_bytes_to_target = sent_command.wire_bytes;
  r.wire_bytes_to_initiator = sent_data.wire_bytes + sent_response.wire_bytes;
  r.packets = sent_command.packets.size() + sent_data.packets.size() + sent_response.packets.size();
  r.translation_misses = sent_command.translation_misses + at_target.translation_misses +
                         sent_data.translation_misses + data.translation_misses +
                         sent_response.translation_misses + response.translation_misses;
  return r;
}

}  // namespace gpunvme::nvmf
