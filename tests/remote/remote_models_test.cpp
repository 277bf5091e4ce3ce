// The network, RDMA NIC and NVMe-oF models against hand-worked cases:
// packet counts and wire bytes from the IBTA header sizes, serialisation
// times, queueing at a link and a switch port, a capsule's bytes, a
// registration miss's extra DMA read, and a NIC timeline added up by hand.
#include <gtest/gtest.h>

#include "models/network/network.h"
#include "models/nic/rdma_nic.h"
#include "models/nvmf/nvmf.h"
#include "sim/kernel/params/resolve.h"
#include "tests/remote/test_nic.h"

namespace gpunvme {
namespace {

using network::NetworkProtocol;
using network::RdmaOp;

network::NetworkLinkParams link_params(NetworkProtocol protocol, double gbps, std::int64_t mtu,
                                       double latency_ns) {
  network::NetworkLinkParams p;
  p.protocol = protocol;
  p.gbps = gbps;
  p.mtu_bytes = mtu;
  p.latency_ns = ns_to_ps(latency_ns);
  return p;
}

nic::RdmaNicParams nic_params() { return test::hand_worked_nic(2); }

TEST(Framing, PacketsAndWireBytesFollowTheHeaderSizes) {
  // LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26; RoCEv2 on the wire: 8 + 14 + 4 +
  // 20 + 8 + 12 + 4 + 4 + 12 = 86.
  EXPECT_EQ(network::header_bytes(NetworkProtocol::infiniband), 26u);
  EXPECT_EQ(network::header_bytes(NetworkProtocol::roce_v2), 86u);
  // 4096 B RDMA WRITE, MTU 4096: one packet with a RETH.
  EXPECT_EQ(network::packet_count(4096, 4096), 1u);
  EXPECT_EQ(
      network::message_wire_bytes(NetworkProtocol::infiniband, RdmaOp::rdma_write, 4096, 4096),
      4096u + 26u + 16u);
  // 10000 B SEND: 4096 + 4096 + 1808, three headers.
  EXPECT_EQ(network::packet_count(10000, 4096), 3u);
  EXPECT_EQ(network::packet_payload(10000, 4096, 2), 1808u);
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::infiniband, RdmaOp::send, 10000, 4096),
            10000u + 3u * 26u);
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::roce_v2, RdmaOp::rdma_write, 10000, 4096),
            10000u + 3u * 86u + 16u);
  // READ response: AETH on the first and last packets; one packet, one AETH.
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::infiniband, RdmaOp::rdma_read_response,
                                        10000, 4096),
            10000u + 3u * 26u + 8u);
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::infiniband, RdmaOp::rdma_read_response,
                                        100, 4096),
            100u + 26u + 4u);
  // READ request: a RETH, no payload, whatever length it asks for.
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::infiniband, RdmaOp::rdma_read_request,
                                        4096, 4096),
            26u + 16u);
  // A zero-length SEND is still one packet.
  EXPECT_EQ(network::message_wire_bytes(NetworkProtocol::roce_v2, RdmaOp::send, 0, 1024), 86u);
}

TEST(Framing, SerialisationTime) {
  // 4138 B at 400 Gb/s: 4138 * 8 / 400 = 82.76 ns.
  EXPECT_EQ(network::serialization_ps(4138, 400.0), 82760u);
  // 1000 B at 100 Gb/s: 80 ns.
  EXPECT_EQ(network::serialization_ps(1000, 100.0), 80000u);
}

TEST(NetworkLink, PacketsQueueInEachDirectionIndependently) {
  network::NetworkLink link(link_params(NetworkProtocol::infiniband, 100.0, 4096, 10.0));
  const auto a = link.transmit(0, 0, 1000);
  const auto b = link.transmit(0, 0, 1000);
  const auto c = link.transmit(1, 0, 1000);
  EXPECT_EQ(a.end, 80000u);
  EXPECT_EQ(a.tail_arrival, 90000u);
  EXPECT_EQ(b.start, 80000u);  // waited behind a
  EXPECT_EQ(b.tail_arrival, 170000u);
  EXPECT_EQ(c.start, 0u);  // the other direction is free
  EXPECT_EQ(link.packets(0), 2u);
  EXPECT_EQ(link.wire_bytes(0), 2000u);
}

TEST(NetworkSwitch, CutThroughAndOutputQueue) {
  network::NetworkSwitchParams p;
  p.ports = 4;
  p.port_gbps = 100.0;
  p.cut_through_ns = ns_to_ps(130.0);
  p.port_buffer_bytes = 2097152;  // never fills here: no flow control
  p.pfc_xoff_bytes = 1572864;
  p.pfc_xon_bytes = 1048576;
  network::NetworkSwitch sw(p);
  // Head at 100 ns, tail at 180 ns (1000 B at 100 Gb/s): out from 230 to 310.
  const auto a = sw.forward(1, 100000, 180000, 1000);
  EXPECT_EQ(a.start, 230000u);
  EXPECT_EQ(a.end, 310000u);
  // A second packet for the same port queues behind the first.
  const auto b = sw.forward(1, 100000, 180000, 1000);
  EXPECT_EQ(b.start, 310000u);
  EXPECT_EQ(b.end, 390000u);
  EXPECT_EQ(sw.max_queued_ps(), 80000u);
  // A slow input (tail at 400 ns): the tail leaves 130 ns after it arrived.
  const auto c = sw.forward(2, 100000, 400000, 1000);
  EXPECT_EQ(c.start, 230000u);
  EXPECT_EQ(c.end, 530000u);
  for (const auto& t : {a, b, c}) EXPECT_EQ(t.stall, 0u);
  EXPECT_EQ(sw.port_flow(1).max_queue_bytes, 2000u);
}

// Incast: senders A and B each send four 1000 B packets back to back into
// output port 2 of a switch (all rates 100 Gb/s: 80 ns a packet, no
// cut-through latency, 10 ns cables). A sender starts a packet when it is
// free; one held back by flow control starts `stall` later, and the next
// one after it. Returns per sender the stall times, and the last tail out.
struct Incast {
  std::vector<Picoseconds> stalls[2];
  Picoseconds last_out = 0;
};
Incast incast(network::NetworkProtocol protocol, std::int64_t buffer, std::int64_t xoff,
              std::int64_t xon) {
  network::NetworkSwitchParams p;
  p.ports = 3;
  p.port_gbps = 100.0;
  p.cut_through_ns = 0;
  p.port_buffer_bytes = buffer;
  p.pfc_xoff_bytes = xoff;
  p.pfc_xon_bytes = xon;
  network::NetworkSwitch sw(p);
  const Picoseconds cable = ns_to_ps(10.0);
  const Picoseconds packet = ns_to_ps(80.0);
  Picoseconds free[2] = {0, 0};
  Incast out;
  for (int k = 0; k < 4; ++k) {
    for (int s = 0; s < 2; ++s) {  // A sends first: its sends are never later than B's
      const Picoseconds sent = free[s];
      const auto t = sw.forward(2, sent + cable, sent + packet + cable, 1000, {protocol, cable});
      out.stalls[s].push_back(t.stall);
      free[s] = sent + t.stall + packet;
      out.last_out = std::max(out.last_out, t.end);
    }
  }
  return out;
}

TEST(NetworkSwitch, IncastWaitsForCreditsOnInfiniband) {
  // A buffer of two packets. A0 and B0 arrive at 10 ns and fill it (out
  // 10-90 and 90-170). A1 (sent at 80) needs A0's credit: A0 leaves at 90,
  // the credit reaches A at 100, A1 arrives at 110: stall 20. B1 needs B0's
  // (leaves 170, back at 180, arrives 190): stall 100. From then on each
  // packet waits for the packet two ahead of it to leave, 80 ns: A2 sent
  // 180 -> 260, B2 260 -> 340, A3 340 -> 420, B3 420 -> 500. The port never
  // idles: the last tail leaves at 10 + 8 x 80 = 650 ns.
  const Incast r = incast(network::NetworkProtocol::infiniband, 2000, 2000, 0);
  const std::vector<Picoseconds> a = {0, 20000, 80000, 80000};
  const std::vector<Picoseconds> b = {0, 100000, 80000, 80000};
  EXPECT_EQ(r.stalls[0], a);
  EXPECT_EQ(r.stalls[1], b);
  EXPECT_EQ(r.last_out, 650000u);
  // A buffer of eight packets never fills: nobody waits, same finish.
  const Incast roomy = incast(network::NetworkProtocol::infiniband, 8000, 8000, 0);
  EXPECT_EQ(roomy.stalls[0], std::vector<Picoseconds>(4, 0));
  EXPECT_EQ(roomy.stalls[1], std::vector<Picoseconds>(4, 0));
  EXPECT_EQ(roomy.last_out, 650000u);
}

TEST(NetworkSwitch, IncastPausesOnRoceAboveXoffUntilXon) {
  // XOFF at 1500 B, XON at 500 B. B0 arrives at 10 ns with A0 queued: 2000 B
  // > 1500, XOFF reaches the senders at 20. A1 (sent at 80) is paused: the
  // queue falls to 0 <= 500 when B0 leaves at 170, the XON reaches A at 180,
  // A1 arrives at 190 (stall 100) and B1 with it (stall 100, a new XOFF at
  // 190). Each round repeats 180 ns later: A2/B2 arrive at 370, A3/B3 at
  // 550, the last tail leaves at 550 + 2 x 80 = 710 ns; the port idles 20 ns
  // a round waiting for the XON (unpaused, 650 ns).
  const Incast r = incast(network::NetworkProtocol::roce_v2, 4000, 1500, 500);
  const std::vector<Picoseconds> each = {0, 100000, 100000, 100000};
  EXPECT_EQ(r.stalls[0], each);
  EXPECT_EQ(r.stalls[1], each);
  EXPECT_EQ(r.last_out, 710000u);
  // Thresholds the incast never passes: no pause, 650 ns.
  const Incast calm = incast(network::NetworkProtocol::roce_v2, 8000, 8000, 4000);
  EXPECT_EQ(calm.stalls[0], std::vector<Picoseconds>(4, 0));
  EXPECT_EQ(calm.last_out, 650000u);
}

TEST(Nvmf, CapsuleBytes) {
  // SQE 64 B; a write up to the in-capsule size carries its data.
  EXPECT_EQ(nvmf::command_capsule_bytes(true, 4096, 4096), 4160u);
  EXPECT_EQ(nvmf::command_capsule_bytes(true, 8192, 4096), 64u);
  EXPECT_EQ(nvmf::command_capsule_bytes(false, 4096, 4096), 64u);
  EXPECT_EQ(nvmf::kResponseCapsuleBytes, 16u);
}

TEST(RdmaNic, DoorbellTimelineAddsUpByHand) {
  nic::RdmaNic nic(nic_params());
  network::NetworkLink link(link_params(NetworkProtocol::infiniband, 400.0, 4096, 10.0));
  const nic::SentMessage s = nic.transmit(0, {RdmaOp::rdma_write, 4096, 7, 0}, link, 0);
  // Doorbell one way 285 ns, WQE fetch 570 -> 855 (processing); pipeline
  // 123 -> 978; translation miss 570 -> 1548; first read 570 -> 2118; 4096 B
  // at 460 Gb/s = 71.235 ns -> 2189.235; 4138 B at 400 Gb/s = 82.76 ns ->
  // 2271.995; 10 ns of cable -> 2281.995.
  EXPECT_EQ(s.processing, 855000u);
  ASSERT_EQ(s.packets.size(), 1u);
  EXPECT_EQ(s.packets[0].start, 2189235u);
  EXPECT_EQ(s.packets[0].tail_arrival, 2281995u);
  EXPECT_EQ(s.translation_misses, 1u);
  EXPECT_EQ(s.mmio_bytes, 8u);
  EXPECT_EQ(s.dma_read_bytes, 64u + 4096u + 8u);  // WQE, payload, one translation entry
  EXPECT_EQ(s.wire_bytes, 4138u);
}

TEST(RdmaNic, RegistrationMissCostsOneDmaReadOfItsEntries) {
  nic::RdmaNic nic(nic_params());
  network::NetworkLink link(link_params(NetworkProtocol::infiniband, 400.0, 4096, 10.0));
  const nic::SentMessage cold = nic.transmit(0, {RdmaOp::send, 4096, 7, 0}, link, 0);
  const Picoseconds later = 100'000'000;
  const nic::SentMessage warm = nic.transmit(later, {RdmaOp::send, 4096, 7, 0}, link, 0);
  EXPECT_EQ(warm.translation_misses, 0u);
  EXPECT_EQ(cold.dma_read_bytes - warm.dma_read_bytes, 8u);
  EXPECT_EQ((cold.packets[0].start - cold.posted) - (warm.packets[0].start - warm.posted), 570000u);
  // Three pages through a two-entry cache: three misses, 24 B of entries.
  const nic::SentMessage spread = nic.transmit(2 * later, {RdmaOp::send, 12288, 9, 0}, link, 0);
  EXPECT_EQ(spread.translation_misses, 3u);
  EXPECT_EQ(spread.dma_read_bytes, 64u + 12288u + 24u);
  EXPECT_EQ(spread.packets.size(), 3u);
}

TEST(RdmaNic, BlueFlameSkipsTheWqeFetchAndInlineSkipsThePayloadRead) {
  nic::RdmaNicParams p = nic_params();
  p.wqe_posting = nic::WqePosting::blueflame;
  p.max_inline_bytes = 188;
  nic::RdmaNic nic(p);
  network::NetworkLink link(link_params(NetworkProtocol::infiniband, 400.0, 4096, 10.0));
  const nic::SentMessage s = nic.transmit(0, {RdmaOp::send, 32, 7, 0}, link, 0);
  // 285 ns to the NIC, 123 of processing, no reads: on the link at 408 ns.
  EXPECT_EQ(s.processing, 285000u);
  EXPECT_EQ(s.packets[0].start, 408000u);
  EXPECT_EQ(s.mmio_bytes, 64u + 32u);
  EXPECT_EQ(s.dma_read_bytes, 0u);
  EXPECT_EQ(s.translation_misses, 0u);
}

TEST(RdmaNic, MessageRateLimitSpacesMessages) {
  nic::RdmaNicParams p = nic_params();
  p.wqe_posting = nic::WqePosting::blueflame;
  p.message_rate_mpps = 1.0;  // one message per microsecond
  nic::RdmaNic nic(p);
  network::NetworkLink link(link_params(NetworkProtocol::infiniband, 400.0, 4096, 10.0));
  EXPECT_EQ(nic.transmit(0, {RdmaOp::send, 0, 7, 0}, link, 0).processing, 285000u);
  EXPECT_EQ(nic.transmit(0, {RdmaOp::send, 0, 7, 0}, link, 0).processing, 1285000u);
  EXPECT_EQ(nic.transmit(0, {RdmaOp::send, 0, 7, 0}, link, 0).processing, 2285000u);
  EXPECT_EQ(nic.messages(), 3u);
}

TEST(RdmaNic, ReceiveWritesPayloadThenCqe) {
  nic::RdmaNic nic(nic_params());
  // A 4096 B SEND whose packet arrived at 1000 ns: 123 ns of processing,
  // then the translation miss's read (570 ns): the write starts at 1693;
  // 4096 B at 460 Gb/s -> 1764.235; lands 285 ns later: 2049.235. CQE:
  // 64 B at 460 Gb/s -> 1765.348, lands at 2050.348.
  const nic::DeliveredMessage d = nic.receive({1000000}, {RdmaOp::send, 4096, 3, 0}, 4096);
  EXPECT_EQ(d.translation_misses, 1u);
  EXPECT_EQ(d.data_written, 2049235u);
  EXPECT_EQ(d.completed, 2050348u);
  EXPECT_EQ(d.dma_write_bytes, 4096u + 64u);
  // An RDMA WRITE leaves no CQE at the responder.
  const nic::DeliveredMessage w = nic.receive({10000000}, {RdmaOp::rdma_write, 4096, 3, 0}, 4096);
  EXPECT_EQ(w.completed, w.data_written);
  EXPECT_EQ(w.dma_write_bytes, 4096u);
}

TEST(TargetCores, EachIoTakesTheCoreFreeFirst) {
  nvmf::TargetCores cores(2, ns_to_ps(731.0));
  EXPECT_EQ(cores.serve(0).end, 731000u);
  EXPECT_EQ(cores.serve(0).end, 731000u);
  EXPECT_EQ(cores.serve(0).end, 1462000u);
  EXPECT_EQ(cores.ios(), 3u);
  EXPECT_EQ(cores.busy_ps(), 3u * 731000u);
  EXPECT_NEAR(cores.max_iops(), 2.0 / 731e-9, 1.0);
}

TEST(RemoteRead, SeamsInOrderAndBytesCounted) {
  nic::RdmaNic initiator(nic_params());
  nic::RdmaNic target_nic(nic_params());
  network::NetworkLink link(link_params(NetworkProtocol::roce_v2, 200.0, 4096, 10.0));
  nvmf::TargetCores cores(1, ns_to_ps(731.0));
  const nvmf::RemoteRead r =
      nvmf::remote_read(0, 4096, 5, 0, initiator, target_nic, link, cores, ns_to_ps(10000.0));
  EXPECT_LT(r.posted, r.command_at_target);
  EXPECT_EQ(r.target_core_done, r.command_at_target + 731000u);
  EXPECT_EQ(r.ssd_done, r.target_core_done + 10000000u);
  EXPECT_LT(r.ssd_done, r.data_written);
  EXPECT_LE(r.data_written, r.completed);
  // Command SEND 64 B; data WRITE 4096 B with a RETH; response SEND 16 B.
  EXPECT_EQ(r.wire_bytes_to_target, 64u + 86u);
  EXPECT_EQ(r.wire_bytes_to_initiator, (4096u + 86u + 16u) + (16u + 86u));
  EXPECT_EQ(r.packets, 3u);
}

TEST(RemoteRead, ASwitchAddsCutThroughAndCablePerCrossing) {
  // Port rate = link rate: a packet's tail leaves the switch cut_through_ns
  // after it arrived, then crosses one more cable. The command crosses once
  // toward the target, the data and response once back: 2 x (130 + 10) ns.
  auto read = [](bool through_switch) {
    nic::RdmaNic initiator(nic_params());
    nic::RdmaNic target_nic(nic_params());
    network::NetworkLink link(link_params(NetworkProtocol::roce_v2, 200.0, 4096, 10.0));
    nvmf::TargetCores cores(1, ns_to_ps(731.0));
    network::NetworkSwitchParams p;
    p.ports = 2;
    p.port_gbps = 200.0;
    p.cut_through_ns = ns_to_ps(130.0);
    p.port_buffer_bytes = 2097152;
    p.pfc_xoff_bytes = 1572864;
    p.pfc_xon_bytes = 1048576;
    network::NetworkSwitch sw(p);
    nvmf::SwitchHop hop{sw, 0, 1};
    return nvmf::remote_read(0, 8192, 5, 0, initiator, target_nic, link, cores, ns_to_ps(10000.0),
                             through_switch ? &hop : nullptr);
  };
  const nvmf::RemoteRead direct = read(false);
  const nvmf::RemoteRead switched = read(true);
  EXPECT_EQ(switched.command_at_target - direct.command_at_target, 140000u);
  EXPECT_EQ(switched.completed - direct.completed, 280000u);
  EXPECT_EQ(switched.wire_bytes_to_initiator, direct.wire_bytes_to_initiator);
}

TEST(RemoteStorageSpecs, EveryKindResolvesItsDefaults) {
  for (const ComponentSpec& spec : nvmf::remote_storage_specs()) {
    EXPECT_FALSE(spec.params.empty()) << spec.kind;
    for (const ParamSpec& p : spec.params) {
      EXPECT_FALSE(p.source.empty()) << spec.kind << "." << p.name;
      EXPECT_FALSE(p.default_value.is_null()) << spec.kind << "." << p.name;
    }
  }
}

}  // namespace
}  // namespace gpunvme
