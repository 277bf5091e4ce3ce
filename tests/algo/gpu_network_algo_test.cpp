// The GPU side of GPU-initiated networking (sim/core/algo/gpu_network.h) on
// the scripted platform: the bytes a warp leaves in its queue pair, checked
// against the mlx5 and NVMe-oF layouts written out by hand, and the CQ's
// owner-bit protocol.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <vector>

#include "sim/core/algo/gpu_network.h"
#include "sim/core/platform/scripted.h"

namespace gpunvme::gpu_network_algo_test {
namespace {

using platform::ScriptedMachine;
using platform::ScriptedWarp;

template <std::size_t N>
std::array<std::uint8_t, N> bytes_at(ScriptedMachine& m, std::uint64_t addr) {
  std::array<std::uint8_t, N> out{};
  const std::uint8_t* p = m.at(addr, N);
  for (std::size_t i = 0; i < N; ++i) out[i] = p[i];
  return out;
}

struct Fixture {
  ScriptedMachine m{0x100000, 1 << 20};
  algo::NicQueuePair q;
  Fixture() {
    q.send_entries = 8;
    q.send_queue = m.allocate(8 * 64, 4096);
    q.capsules = m.allocate(8 * 64, 4096);
    q.receive_entries = 4;
    q.receive_queue = m.allocate(4 * 16, 4096);
    q.receive_buffers = m.allocate(4 * 16, 4096);
    q.completion_entries = 4;
    q.completion_queue = m.allocate(4 * 64, 4096);
    q.doorbell_record = m.allocate(8, 64);
    q.cq_consumer_record = m.allocate(4, 64);
    q.doorbell = m.allocate(4096, 4096) + 0x800;  // stands for the NIC's UAR page
    q.qpn = 0x123;
    q.lkey = 0x11;
    q.rkey = 0x22;
    q.nsid_base = 1;
    for (std::uint32_t i = 0; i < 4; ++i) {
      m.put(q.completion_queue + i * 64u + 63u, std::uint8_t{0xF0});  // invalid, owner 0
    }
  }
};

TEST(GpuNetworkAlgo, TwoLanesLeaveCapsulesWqesARecordAndOneDoorbellAsTheLayoutsSay) {
  Fixture f;
  algo::NicQueueState state = algo::fresh_state(f.q);
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::Lanes<algo::NetRead> read{};
    read[0] = {0x1234, 7, 0, 0x7000000, 4096, 5};
    read[3] = {0x99, 0, 1, 0x7001000, 512, 9};
    algo::post_reads(p, f.q, state, 0b1001u, read);
  });
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  EXPECT_EQ(state.send_produced, 2u);

  // Lane 3's capsule in slot 1: NVMe Read (opcode 02h), PSDT 01b (CDW0 bits
  // 15:14), CID 9 (bits 31:16); NSID 2; SGL1 at bytes 31:24 address
  // 0x7001000, 34:32 length 512, 38:35 key 0x22, 39 identifier 40h; SLBA
  // 0x99 in CDW10; NLB 0 in CDW12.
  const auto capsule = bytes_at<64>(f.m, f.q.capsules + 64);
  const std::array<std::uint8_t, 40> head = {
      0x02, 0x40, 0x09, 0x00, 0x02, 0x00, 0x00, 0x00, 0,    0,    0,    0,    0,    0,
      0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0x00, 0x10, 0x00, 0x07,
      0,    0,    0,    0,    0x00, 0x02, 0x00, 0x22, 0x00, 0x00, 0x00, 0x40};
  for (std::size_t i = 0; i < head.size(); ++i) EXPECT_EQ(capsule[i], head[i]) << "byte " << i;
  EXPECT_EQ(capsule[40], 0x99);  // CDW10: SLBA 31:0
  EXPECT_EQ(capsule[48], 0x00);  // CDW12: NLB 0 (one block)

  // Its WQE in slot 1, big endian: opmod 0, WQE index 1, opcode 0Ah; QP
  // 0x123, ds 2; unsignaled (fm_ce_se 0); then byte_count 64, lkey 0x11 and
  // the capsule's address.
  const auto wqe = bytes_at<32>(f.m, f.q.send_queue + 64);
  const std::uint64_t a = f.q.capsules + 64;
  const std::array<std::uint8_t, 32> expected_wqe = {0x00,
                                                     0x00,
                                                     0x01,
                                                     0x0a,
                                                     0x00,
                                                     0x01,
                                                     0x23,
                                                     0x02,
                                                     0,
                                                     0,
                                                     0,
                                                     0,
                                                     0,
                                                     0,
                                                     0,
                                                     0,
                                                     0x00,
                                                     0x00,
                                                     0x00,
                                                     0x40,
                                                     0x00,
                                                     0x00,
                                                     0x00,
                                                     0x11,
                                                     static_cast<std::uint8_t>(a >> 56),
                                                     static_cast<std::uint8_t>(a >> 48),
                                                     static_cast<std::uint8_t>(a >> 40),
                                                     static_cast<std::uint8_t>(a >> 32),
                                                     static_cast<std::uint8_t>(a >> 24),
                                                     static_cast<std::uint8_t>(a >> 16),
                                                     static_cast<std::uint8_t>(a >> 8),
                                                     static_cast<std::uint8_t>(a)};
  for (std::size_t i = 0; i < expected_wqe.size(); ++i) {
    EXPECT_EQ(wqe[i], expected_wqe[i]) << "byte " << i;
  }
  // Send doorbell record (the second word): 2, big endian.
  const auto record = bytes_at<4>(f.m, f.q.doorbell_record + 4);
  EXPECT_EQ(record, (std::array<std::uint8_t, 4>{0, 0, 0, 2}));
  // The doorbell: the first 8 bytes of the last WQE's control segment.
  const auto doorbell = bytes_at<8>(f.m, f.q.doorbell);
  EXPECT_EQ(doorbell,
            (std::array<std::uint8_t, 8>{0x00, 0x00, 0x01, 0x0a, 0x00, 0x01, 0x23, 0x02}));
}

TEST(GpuNetworkAlgo, BlueFlameWritesTheWholeWqeForOneLane) {
  Fixture f;
  f.q.blueflame = true;
  algo::NicQueueState state = algo::fresh_state(f.q);
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::Lanes<algo::NetRead> read{};
    read[2] = {1, 0, 0, 0x7000000, 512, 4};
    algo::post_reads(p, f.q, state, 0b100u, read);
  });
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  const auto in_queue = bytes_at<64>(f.m, f.q.send_queue);
  const auto in_register = bytes_at<64>(f.m, f.q.doorbell);
  EXPECT_EQ(in_queue, in_register);
  EXPECT_EQ(in_register[3], 0x0a);  // SEND
}

TEST(GpuNetworkAlgo, TheWarpWaitsForTheOwnerBitOfItsLapAndRepostsTheReceive) {
  Fixture f;
  algo::NicQueueState state = algo::fresh_state(f.q);
  state.cq_consumed = 4;  // the CQ's second lap: a valid CQE carries owner 1
  state.send_produced = 1;
  std::vector<std::pair<std::uint16_t, std::uint16_t>> seen;
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::reap_responses(p, f.q, state, 1, [&](std::uint16_t cid, std::uint16_t status) {
      seen.emplace_back(cid, status);
    });
  });
  // A CQE of the first lap (owner 0) in slot 0 is not the warp's.
  f.m.put(f.q.completion_queue + 60, std::uint32_t{0x20000300u});  // RESP_SEND, owner 0
  f.m.run(w);
  EXPECT_FALSE(f.m.done(w));
  EXPECT_TRUE(seen.empty());
  // The NIC's response to CID 7 in receive buffer 3 (status: LBA Out of
  // Range, 80h, in bits 8:1 of the status field), then its CQE: RESP_SEND,
  // owner 1, wqe_counter 3 (big endian: bytes 00 03).
  nvme::CompletionEntry response{};
  response.cid = 7;
  response.status_field = 0x80 << 1;
  f.m.put(f.q.receive_buffers + 3 * 16u, response);
  f.m.put(f.q.completion_queue + 60, std::uint32_t{0x21000300u});
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, 7);
  EXPECT_EQ(seen[0].second, 0x80);
  EXPECT_EQ(state.cq_consumed, 5u);
  // Receive WQE 3 posted again: 16 B, lkey 0x11, its buffer; the records:
  // CQ consumer 5 and receive counter 4 + 1, big endian.
  const auto again = bytes_at<8>(f.m, f.q.receive_queue + 3 * 16u);
  EXPECT_EQ(again, (std::array<std::uint8_t, 8>{0, 0, 0, 0x10, 0, 0, 0, 0x11}));
  EXPECT_EQ(bytes_at<4>(f.m, f.q.cq_consumer_record), (std::array<std::uint8_t, 4>{0, 0, 0, 5}));
  EXPECT_EQ(bytes_at<4>(f.m, f.q.doorbell_record), (std::array<std::uint8_t, 4>{0, 0, 0, 5}));
}

// An RDMA READ of the remote-memory tier: 48 B of control, remote address
// and data segments, mlx5 byte order, written out by hand: opcode 10h,
// QP 123h with ds 3, CQ update requested (fm_ce_se 08h); remote address
// 1000h under rkey 3; 4096 B into 7000000h under the GPU buffers' key 22h.
// No capsule; the doorbell carries the control segment's first 8 bytes.
TEST(GpuNetworkAlgo, AnRdmaReadLaneLeavesTheReadWqeAsTheLayoutSays) {
  Fixture f;
  algo::NicQueueState state = algo::fresh_state(f.q);
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::Lanes<algo::NetOp> ops{};
    ops[0].kind = algo::NetOpKind::memory_read;
    ops[0].buffer = 0x7000000;
    ops[0].bytes = 4096;
    ops[0].remote_address = 0x1000;
    ops[0].remote_key = 3;
    algo::post_ops(p, f.q, state, 0b1u, ops);
  });
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  const auto wqe = bytes_at<48>(f.m, f.q.send_queue);
  const std::array<std::uint8_t, 48> expected = {
      0x00, 0x00, 0x00, 0x10, 0x00, 0x01, 0x23, 0x03, 0x00, 0x00, 0x00, 0x08,  // ctrl
      0x00, 0x00, 0x00, 0x00,                                                  // imm
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x03,  // raddr, rkey
      0x00, 0x00, 0x00, 0x00,                                                  // reserved
      0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x22, 0x00, 0x00, 0x00, 0x00,  // bytes, lkey
      0x07, 0x00, 0x00, 0x00};                                                 // address
  EXPECT_EQ(wqe, expected);
  EXPECT_EQ(bytes_at<8>(f.m, f.q.doorbell),
            (std::array<std::uint8_t, 8>{0x00, 0x00, 0x00, 0x10, 0x00, 0x01, 0x23, 0x03}));
  // Nothing in the capsule slot.
  EXPECT_EQ(bytes_at<8>(f.m, f.q.capsules), (std::array<std::uint8_t, 8>{}));
}

// A 512 B write fits 4096 B of in-capsule data: the capsule is a Write (01h)
// whose SGL is a Data Block (Offset) descriptor (identifier 01h, length 512),
// and the SEND gathers it (ds 3) with the GPU buffer (512 B under key 22h).
TEST(GpuNetworkAlgo, AnInCapsuleWriteGathersCapsuleAndData) {
  Fixture f;
  algo::NicQueueState state = algo::fresh_state(f.q);
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::Lanes<algo::NetOp> ops{};
    ops[0].kind = algo::NetOpKind::nvmf_write;
    ops[0].slba = 0x10;
    ops[0].buffer = 0x7000000;
    ops[0].bytes = 512;
    ops[0].cid = 6;
    ops[0].in_capsule_bytes = 4096;
    algo::post_ops(p, f.q, state, 0b1u, ops);
  });
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  const auto capsule = bytes_at<64>(f.m, f.q.capsules);
  EXPECT_EQ(capsule[0], 0x01);                       // Write
  EXPECT_EQ(capsule[1] >> 6, 1);                     // PSDT: SGL
  EXPECT_EQ(capsule[2] | (capsule[3] << 8), 6);      // CID
  EXPECT_EQ(capsule[32] | (capsule[33] << 8), 512);  // SGL length
  EXPECT_EQ(capsule[39], 0x01);                      // Data Block, Offset
  EXPECT_EQ(capsule[40], 0x10);                      // SLBA
  const auto wqe = bytes_at<48>(f.m, f.q.send_queue);
  EXPECT_EQ(wqe[3], 0x0a);   // SEND
  EXPECT_EQ(wqe[7], 0x03);   // ds 3
  EXPECT_EQ(wqe[11], 0x00);  // unsignaled
  // Second data segment: 512 B (00 00 02 00), key 22h, address 7000000h.
  const std::array<std::uint8_t, 16> data = {0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x22,
                                             0x00, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00};
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(wqe[32 + i], data[i]) << i;
}

// A requester CQE (opcode 0, wqe_counter naming the send WQE) completes an
// RDMA READ: the warp hands the WQE index on and re-posts no receive.
TEST(GpuNetworkAlgo, ARequesterCqeNamesItsWqeAndUsesNoReceive) {
  Fixture f;
  algo::NicQueueState state = algo::fresh_state(f.q);
  state.send_produced = 6;
  std::vector<std::uint16_t> seen;
  bool response = false;
  const int w = f.m.spawn([&](ScriptedWarp& p) {
    algo::reap_completions(
        p, f.q, state, 1, [&](std::uint16_t, std::uint16_t) { response = true; },
        [&](std::uint16_t wqe) { seen.push_back(wqe); });
  });
  // REQ, owner 0, wqe_counter 5 (big endian 00 05).
  f.m.put(f.q.completion_queue + 60, std::uint32_t{0x00000500u});
  f.m.run(w);
  ASSERT_TRUE(f.m.done(w));
  EXPECT_FALSE(response);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], 5);
  EXPECT_EQ(state.cq_consumed, 1u);
  EXPECT_EQ(state.receive_produced, 4u);  // the driver's four, none re-posted
  EXPECT_EQ(bytes_at<4>(f.m, f.q.cq_consumer_record), (std::array<std::uint8_t, 4>{0, 0, 0, 1}));
  EXPECT_EQ(bytes_at<4>(f.m, f.q.doorbell_record), (std::array<std::uint8_t, 4>{0, 0, 0, 4}));
}

}  // namespace
}  // namespace gpunvme::gpu_network_algo_test
