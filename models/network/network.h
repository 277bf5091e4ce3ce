// The network between hosts: RDMA packet framing (InfiniBand and RoCEv2),
// links that serialise packets in each direction, and cut-through switches
// with one output queue and packet buffer per port.
//
// Packets are timed without events: a link direction and a switch output port
// are next-available-time servers (sim/kernel/server.h), so a packet booked
// while the one before it is still leaving waits in that port's queue. The
// fabric is lossless: a packet is never dropped, and a full buffer holds the
// sender back instead. On an InfiniBand cable the sender needs credits (room
// in the buffer of the output port the packet is headed for, returned one
// cable delay after a packet leaves it); on a RoCEv2 cable the sender pauses
// when that port's queue passes pfc_xoff_bytes (priority flow control) and
// resumes after it falls to pfc_xon_bytes. Packets are admitted in the order
// they are booked; a packet counts in a buffer from when it is booked until
// its tail leaves the port.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "sim/kernel/params/param_table.h"
#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme::network {

// How packets are framed on the wire.
GPUNVME_ENUM(NetworkProtocol, infiniband, roce_v2)

// The RDMA operations whose packets differ in their extended headers.
enum class RdmaOp : std::uint8_t {
  send,                // SEND: payload only
  rdma_write,          // RDMA WRITE: RETH (16 B) on the first packet
  rdma_read_request,   // RDMA READ request: one packet with a RETH, no payload
  rdma_read_response,  // RDMA READ response: AETH (4 B) on the first and last packet
  ack,                 // acknowledgement: one packet with an AETH
};

// Per-packet framing, bytes (IBTA Vol. 1 9.2-9.3; RoCEv2 annex A17; IEEE 802.3).
inline constexpr std::uint32_t kInfinibandHeaderBytes = 8 + 12 + 4 + 2;  // LRH BTH ICRC VCRC
// Preamble+SFD, Ethernet header, 802.1Q tag, IPv4, UDP, BTH, ICRC, FCS, inter-frame gap.
inline constexpr std::uint32_t kRoceV2HeaderBytes = 8 + 14 + 4 + 20 + 8 + 12 + 4 + 4 + 12;
inline constexpr std::uint32_t kRethBytes = 16;
inline constexpr std::uint32_t kAethBytes = 4;

std::uint32_t header_bytes(NetworkProtocol protocol);
// Packets a message of `payload` bytes takes (at least one).
std::uint64_t packet_count(std::uint64_t payload, std::uint32_t mtu);
// Packets of one message: an RDMA READ request or an ACK is one packet
// whatever length it names; other messages carry `payload` in MTU pieces.
std::uint64_t message_packets(RdmaOp op, std::uint64_t payload, std::uint32_t mtu);
// Payload of packet `index` of such a message.
std::uint32_t packet_payload(std::uint64_t payload, std::uint32_t mtu, std::uint64_t index);
// Bytes on the wire of packet `index`: payload, framing and extended headers.
std::uint64_t packet_wire_bytes(NetworkProtocol protocol, RdmaOp op, std::uint64_t payload,
                                std::uint32_t mtu, std::uint64_t index);
// Bytes on the wire of the whole message.
std::uint64_t message_wire_bytes(NetworkProtocol protocol, RdmaOp op, std::uint64_t payload,
                                 std::uint32_t mtu);
// Time `bytes` take at `gbps`, rounded to the picosecond.
Picoseconds serialization_ps(std::uint64_t bytes, double gbps);

struct NetworkLinkParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/network/network_link_params.def"
#undef GPUNVME_PARAM
  static NetworkLinkParams from(const ParamValues& values);
};

struct NetworkSwitchParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/network/network_switch_params.def"
#undef GPUNVME_PARAM
  static NetworkSwitchParams from(const ParamValues& values);
};

const ComponentSpec& network_link_spec();
const ComponentSpec& network_switch_spec();

// When one packet crossed a hop: its first bit left (start), its last bit
// left (end), and its first and last bits reached the far side.
struct PacketTransit {
  Picoseconds start = 0;
  Picoseconds end = 0;
  Picoseconds head_arrival = 0;
  Picoseconds tail_arrival = 0;
  std::uint64_t wire_bytes = 0;
  // Time the sender held the packet back because the buffer it was headed
  // for was full (credits) or its port was paused (PFC).
  Picoseconds stall = 0;
};

// A full-duplex link: one serialising server per direction (0 and 1).
class NetworkLink {
 public:
  explicit NetworkLink(const NetworkLinkParams& params) : params_(params) {}

  // A packet of `wire_bytes`, ready to leave at `ready` in `direction`.
  PacketTransit transmit(int direction, Picoseconds ready, std::uint64_t wire_bytes);

  const NetworkLinkParams& params() const { return params_; }
  std::uint64_t packets(int direction) const { return packets_[direction]; }
  std::uint64_t wire_bytes(int direction) const { return bytes_[direction]; }
  // Keeps `direction` from starting another packet before `until` (its
  // sender was held back by flow control).
  void hold(int direction, Picoseconds until) { servers_[direction].hold_until(until); }
  Picoseconds busy_ps(int direction) const { return servers_[direction].busy_ps(); }

 private:
  NetworkLinkParams params_;
  NextFreeServer servers_[2];
  std::uint64_t packets_[2] = {0, 0};
  std::uint64_t bytes_[2] = {0, 0};
};

// The cable a packet reaches a switch by: its framing picks the flow control
// (credits on InfiniBand, PFC on RoCEv2) and its propagation delay is how
// late credits and pauses reach the sender.
struct SwitchIngress {
  NetworkProtocol protocol = NetworkProtocol::infiniband;
  Picoseconds cable_ps = 0;
};

// A cut-through switch: a packet's head leaves its output port
// cut_through_ns after it arrived when the port is free, else when the port
// is free (the output queue); its tail cannot leave before it has arrived
// plus the cut-through latency. Each output port has a buffer of
// port_buffer_bytes that flow control keeps from overflowing (see the top of
// this file).
class NetworkSwitch {
 public:
  explicit NetworkSwitch(const NetworkSwitchParams& params);

  // Forwards a packet to `port`; the returned times are those of its
  // leaving the port (head_arrival and tail_arrival equal start and end:
  // the link after the port adds its own propagation delay). `stall` is how
  // long its sender had to hold it back: its arrival (head and tail) is that
  // much later than the times given.
  PacketTransit forward(std::uint32_t port, Picoseconds head_arrival, Picoseconds tail_arrival,
                        std::uint64_t wire_bytes, SwitchIngress ingress = {});
  // The packet last forwarded by `port` leaves `delay` later (the next hop
  // held it back): it stays that much longer in the port's buffer, and the
  // port sends nothing before it has left.
  void delay_last(std::uint32_t port, Picoseconds delay);

  const NetworkSwitchParams& params() const { return params_; }
  // Longest wait of a packet in an output queue so far.
  Picoseconds max_queued_ps() const { return max_queued_; }

  // Flow-control results of one output port.
  struct PortFlow {
    std::uint64_t max_queue_bytes = 0;  // most bytes in its buffer, packets included on arrival
    std::uint64_t pauses = 0;           // PFC: times the queue passed pfc_xoff_bytes
  };
  const PortFlow& port_flow(std::uint32_t port) const { return ports_.at(port).flow; }

 private:
  // A packet in a port's buffer until its tail leaves.
  struct Held {
    Picoseconds leaves = 0;
    std::uint64_t bytes = 0;
  };
  struct Port {
    NextFreeServer server;
    std::deque<Held> held;  // in booking order; `leaves` never decreases along it
    std::uint64_t held_bytes = 0;
    bool paused = false;             // PFC: XOFF sent, XON not yet
    Picoseconds pause_reaches = 0;   // when the XOFF reaches the senders
    Picoseconds resume_arrives = 0;  // the first arrival after the XON, once known
    PortFlow flow;
  };
  // Bytes in the buffer at `t`: those of packets whose tail leaves after it.
  static std::uint64_t bytes_at(const Port& port, Picoseconds t);
  // The earliest time from which the buffer holds at most `limit` bytes.
  static Picoseconds drained_to(const Port& port, std::uint64_t limit);

  NetworkSwitchParams params_;
  std::vector<Port> ports_;
  Picoseconds max_queued_ = 0;
};

}  // namespace gpunvme::network
