#include "models/network/network.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace gpunvme::network {

std::uint32_t header_bytes(NetworkProtocol protocol) {
  return protocol == NetworkProtocol::infiniband ? kInfinibandHeaderBytes : kRoceV2HeaderBytes;
}

std::uint64_t packet_count(std::uint64_t payload, std::uint32_t mtu) {
  if (mtu == 0) throw std::invalid_argument("network: an MTU of 0 bytes");
  return payload == 0 ? 1 : (payload + mtu - 1) / mtu;
}

std::uint64_t message_packets(RdmaOp op, std::uint64_t payload, std::uint32_t mtu) {
  if (op == RdmaOp::rdma_read_request || op == RdmaOp::ack) return 1;
  return packet_count(payload, mtu);
}

std::uint32_t packet_payload(std::uint64_t payload, std::uint32_t mtu, std::uint64_t index) {
  const std::uint64_t before = index * mtu;
  if (before >= payload) return 0;
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(mtu, payload - before));
}

std::uint64_t packet_wire_bytes(NetworkProtocol protocol, RdmaOp op, std::uint64_t payload,
                                std::uint32_t mtu, std::uint64_t index) {
  const std::uint64_t count = message_packets(op, payload, mtu);
  const bool first = index == 0;
  const bool last = index + 1 == count;
  std::uint64_t extended = 0;
  switch (op) {
    case RdmaOp::send: break;
    case RdmaOp::rdma_write:
    case RdmaOp::rdma_read_request: extended = first ? kRethBytes : 0; break;
    case RdmaOp::rdma_read_response:
      // First and last carry an AETH; a single packet carries one.
      extended = (first || last) ? kAethBytes : 0;
      break;
    case RdmaOp::ack: extended = kAethBytes; break;
  }
  const std::uint64_t carried = (op == RdmaOp::rdma_read_request || op == RdmaOp::ack)
                                    ? 0
                                    : packet_payload(payload, mtu, index);
  return carried + header_bytes(protocol) + extended;
}

std::uint64_t message_wire_bytes(NetworkProtocol protocol, RdmaOp op, std::uint64_t payload,
                                 std::uint32_t mtu) {
  std::uint64_t total = 0;
  const std::uint64_t count = message_packets(op, payload, mtu);
  for (std::uint64_t i = 0; i < count; ++i) {
    total += packet_wire_bytes(protocol, op, payload, mtu, i);
  }
  return total;
}

Picoseconds serialization_ps(std::uint64_t bytes, double gbps) {
  // bytes * 8 bits / (gbps bits per ns) ns, in picoseconds.
  return static_cast<Picoseconds>(std::llround(static_cast<double>(bytes) * 8000.0 / gbps));
}

NetworkLinkParams NetworkLinkParams::from(const ParamValues& values) {
  NetworkLinkParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/network/network_link_params.def"
#undef GPUNVME_PARAM
  return out;
}

NetworkSwitchParams NetworkSwitchParams::from(const ParamValues& values) {
  NetworkSwitchParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/network/network_switch_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& network_link_spec() {
  static const ComponentSpec spec{
      "network_link",
      "A network cable between RDMA ports or a switch: framing, MTU, serialisation and "
      "propagation in each direction.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/network/network_link_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

const ComponentSpec& network_switch_spec() {
  static const ComponentSpec spec{
      "network_switch",
      "An InfiniBand or Ethernet switch: cut-through forwarding, per-port rate, output "
      "queues and a packet buffer per port; lossless: InfiniBand senders wait for credits, "
      "RoCEv2 senders pause (PFC) when a queue passes pfc_xoff_bytes.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/network/network_switch_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

PacketTransit NetworkLink::transmit(int direction, Picoseconds ready, std::uint64_t wire_bytes) {
  if (direction != 0 && direction != 1) {
    throw std::invalid_argument("network link: direction " + std::to_string(direction));
  }
  const NextFreeServer::Booking b =
      servers_[direction].book(ready, serialization_ps(wire_bytes, params_.gbps));
  ++packets_[direction];
  bytes_[direction] += wire_bytes;
  return {b.start, b.end, b.start + params_.latency_ns, b.end + params_.latency_ns, wire_bytes};
}

NetworkSwitch::NetworkSwitch(const NetworkSwitchParams& params)
    : params_(params), ports_(static_cast<std::size_t>(params.ports)) {}

std::uint64_t NetworkSwitch::bytes_at(const Port& port, Picoseconds t) {
  std::uint64_t bytes = 0;
  // `leaves` never decreases along the buffer: count from the newest.
  for (auto it = port.held.rbegin(); it != port.held.rend() && it->leaves > t; ++it) {
    bytes += it->bytes;
  }
  return bytes;
}

Picoseconds NetworkSwitch::drained_to(const Port& port, std::uint64_t limit) {
  std::uint64_t remaining = port.held_bytes;
  if (remaining <= limit) return 0;
  for (const Held& h : port.held) {
    remaining -= h.bytes;
    if (remaining <= limit) return h.leaves;
  }
  return port.held.empty() ? 0 : port.held.back().leaves;
}

PacketTransit NetworkSwitch::forward(std::uint32_t port, Picoseconds head_arrival,
                                     Picoseconds tail_arrival, std::uint64_t wire_bytes,
                                     SwitchIngress ingress) {
  if (port >= ports_.size()) {
    throw std::invalid_argument("network switch: port " + std::to_string(port) + " of " +
                                std::to_string(ports_.size()));
  }
  const auto buffer = static_cast<std::uint64_t>(params_.port_buffer_bytes);
  if (wire_bytes > buffer) {
    throw std::invalid_argument("network switch: a packet of " + std::to_string(wire_bytes) +
                                " B and a port buffer of " + std::to_string(buffer) + " B");
  }
  Port& out = ports_[port];
  const Picoseconds cable = ingress.cable_ps;
  // Space freed before the sender could have learned of it (a credit or an
  // XON travels one cable delay back, the next packet one cable delay on)
  // no longer matters to this packet or any booked after it.
  while (!out.held.empty() && out.held.front().leaves + 2 * cable <= head_arrival) {
    out.held_bytes -= out.held.front().bytes;
    out.held.pop_front();
  }
  // The earliest the packet can arrive: when the sender was free to send it.
  Picoseconds admitted = head_arrival;
  if (ingress.protocol == NetworkProtocol::infiniband) {
    // Credits: room for the whole packet when the sender starts it.
    if (out.held_bytes + wire_bytes > buffer) {
      admitted = std::max(admitted, drained_to(out, buffer - wire_bytes) + 2 * cable);
    }
  } else if (head_arrival >= out.pause_reaches + cable) {
    // PFC: the sender started the packet after the XOFF reached it; it
    // waits for the XON, sent when the queue falls to pfc_xon_bytes.
    if (out.paused) {
      out.resume_arrives =
          drained_to(out, static_cast<std::uint64_t>(params_.pfc_xon_bytes)) + 2 * cable;
      out.paused = false;
    }
    admitted = std::max(admitted, out.resume_arrives);
  }
  const Picoseconds stall = admitted - head_arrival;
  const Picoseconds eligible = admitted + params_.cut_through_ns;
  const NextFreeServer::Booking b =
      out.server.book(eligible, serialization_ps(wire_bytes, params_.port_gbps));
  max_queued_ = std::max(max_queued_, b.queued());
  // A slower input feeds the port no faster than the packet arrives.
  const Picoseconds tail_out = std::max(b.end, tail_arrival + stall + params_.cut_through_ns);
  out.server.hold_until(tail_out);
  out.held.push_back({tail_out, wire_bytes});
  out.held_bytes += wire_bytes;
  const std::uint64_t queue = bytes_at(out, admitted);
  out.flow.max_queue_bytes = std::max(out.flow.max_queue_bytes, queue);
  if (ingress.protocol == NetworkProtocol::roce_v2 && !out.paused &&
      queue > static_cast<std::uint64_t>(params_.pfc_xoff_bytes)) {
    out.paused = true;
    out.pause_reaches = admitted + cable;
    out.resume_arrives = 0;
    ++out.flow.pauses;
  }
  PacketTransit result{b.start, tail_out, b.start, tail_out, wire_bytes};
  result.stall = stall;
  return result;
}

void NetworkSwitch::delay_last(std::uint32_t port, Picoseconds delay) {
  Port& out = ports_.at(port);
  if (out.held.empty() || delay == 0) return;
  out.held.back().leaves += delay;
  out.server.hold_until(out.held.back().leaves);
}

}  // namespace gpunvme::network
