// RDMA queue structures a GPU writes and reads when it drives an RDMA NIC
// itself (InfiniBand GPUDirect Async, as NVSHMEM's IBGDA transport does): the
// mlx5 work-queue entry segments, the 64-byte completion entry, the doorbell
// records and the UAR doorbell register, with the byte layout and field
// encodings of rdma-core's providers/mlx5/mlx5dv.h (the mlx5 PRM's), and the
// NVMe-oF command capsule such a WQE sends: an NVMe SQE whose data pointer
// is a Keyed SGL Data Block descriptor naming the initiator's buffer and its
// remote key (NVMe over Fabrics 1.1, 2.3.1; NVMe Base 2.0, 4.1.8).
//
// mlx5 fields are big endian (the NIC's byte order): the structures hold
// them as stored, and the accessors swap. NVMe fields stay little endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "sim/core/protocol/nvme_commands.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::rdma {

GPUNVME_HD constexpr std::uint32_t byte_swap32(std::uint32_t v) {
  return ((v & 0xFFu) << 24) | ((v & 0xFF00u) << 8) | ((v >> 8) & 0xFF00u) | (v >> 24);
}
GPUNVME_HD constexpr std::uint16_t byte_swap16(std::uint16_t v) {
  return static_cast<std::uint16_t>(((v & 0xFFu) << 8) | (v >> 8));
}
GPUNVME_HD constexpr std::uint64_t byte_swap64(std::uint64_t v) {
  return (static_cast<std::uint64_t>(byte_swap32(static_cast<std::uint32_t>(v))) << 32) |
         byte_swap32(static_cast<std::uint32_t>(v >> 32));
}

// Send WQE opcodes (mlx5dv.h MLX5_OPCODE_*).
constexpr std::uint8_t kOpcodeRdmaWrite = 0x08;
constexpr std::uint8_t kOpcodeSend = 0x0a;
constexpr std::uint8_t kOpcodeRdmaRead = 0x10;
// CQE opcodes, op_own bits 7:4 (MLX5_CQE_*).
constexpr std::uint8_t kCqeRequester = 0x0;
constexpr std::uint8_t kCqeResponderSend = 0x2;
constexpr std::uint8_t kCqeRequesterError = 0xd;
constexpr std::uint8_t kCqeResponderError = 0xe;
constexpr std::uint8_t kCqeInvalid = 0xf;
// fm_ce_se: ask for a CQE of this WQE (MLX5_WQE_CTRL_CQ_UPDATE).
constexpr std::uint8_t kCtrlCqUpdate = 2u << 2;
// A send WQE is built of 16-byte segments (ds) in 64-byte basic blocks.
constexpr std::uint32_t kSegmentBytes = 16;
constexpr std::uint32_t kWqeBasicBlock = 64;
// The doorbell record's words: the receive queue's counter, then the send
// queue's (MLX5_RCV_DBR, MLX5_SND_DBR).
constexpr std::uint32_t kReceiveDoorbellRecord = 0;
constexpr std::uint32_t kSendDoorbellRecord = 4;
// The BlueFlame / doorbell register's offset in a 4 KiB UAR page
// (MLX5_BF_OFFSET), and the UAR page size.
constexpr std::uint32_t kUarDoorbellOffset = 0x800;
constexpr std::uint32_t kUarPageBytes = 4096;

// Control segment: the first 16 bytes of every send WQE.
struct CtrlSegment {
  std::uint32_t opmod_idx_opcode;  // opmod 31:24, WQE index 23:8, opcode 7:0
  std::uint32_t qpn_ds;            // QP number 31:8, 16-byte segments 5:0
  std::uint8_t signature;
  std::uint8_t reserved[2];
  std::uint8_t fm_ce_se;  // fence mode, completion request, solicited event
  std::uint32_t imm;

  GPUNVME_HD constexpr std::uint8_t opcode() const {
    return static_cast<std::uint8_t>(byte_swap32(opmod_idx_opcode) & 0xFFu);
  }
  GPUNVME_HD constexpr std::uint16_t wqe_index() const {
    return static_cast<std::uint16_t>((byte_swap32(opmod_idx_opcode) >> 8) & 0xFFFFu);
  }
  GPUNVME_HD constexpr std::uint32_t qpn() const { return byte_swap32(qpn_ds) >> 8; }
  GPUNVME_HD constexpr std::uint32_t ds() const { return byte_swap32(qpn_ds) & 0x3Fu; }
};

// Data segment: one scatter/gather entry (a send's payload, a receive's buffer).
struct DataSegment {
  std::uint32_t byte_count;
  std::uint32_t lkey;
  std::uint64_t addr;

  GPUNVME_HD constexpr std::uint32_t bytes() const { return byte_swap32(byte_count); }
  GPUNVME_HD constexpr std::uint32_t key() const { return byte_swap32(lkey); }
  GPUNVME_HD constexpr std::uint64_t address() const { return byte_swap64(addr); }
};

// Remote address segment of an RDMA READ or WRITE.
struct RemoteAddressSegment {
  std::uint64_t raddr;
  std::uint32_t rkey;
  std::uint32_t reserved;
};

// A SEND of one buffer: control and data segments (ds = 2), padded to the
// 64-byte basic block.
struct SendWqe {
  CtrlSegment ctrl;
  DataSegment data;
  std::uint8_t padding[32];
};

// An RDMA READ or WRITE of one local buffer: control, remote address and
// data segments (ds = 3), padded to the 64-byte basic block. READ: the
// remote bytes land in the data segment's buffer; WRITE: that buffer's
// bytes go to the remote address.
struct RdmaWqe {
  CtrlSegment ctrl;
  RemoteAddressSegment raddr;
  DataSegment data;
  std::uint8_t padding[16];

  GPUNVME_HD constexpr std::uint64_t remote_address() const { return byte_swap64(raddr.raddr); }
  GPUNVME_HD constexpr std::uint32_t remote_key() const { return byte_swap32(raddr.rkey); }
};

// A SEND gathering two buffers (ds = 3): an NVMe-oF command capsule and the
// in-capsule data behind it, padded to the 64-byte basic block.
struct SendGatherWqe {
  CtrlSegment ctrl;
  DataSegment capsule;
  DataSegment data;
  std::uint8_t padding[16];
};

// The 64-byte CQE (struct mlx5_cqe64); the fields the GPU reads are named.
struct Cqe64 {
  std::uint8_t reserved0[44];
  std::uint32_t byte_cnt;  // bytes received (a responder CQE)
  std::uint64_t timestamp;
  std::uint32_t sop_drop_qpn;  // QP number 23:0
  std::uint16_t wqe_counter;   // the WQE it completes (the receive queue's, for a receive)
  std::uint8_t signature;
  std::uint8_t op_own;  // opcode 7:4, solicited 1, owner 0

  GPUNVME_HD constexpr std::uint8_t opcode() const {
    return static_cast<std::uint8_t>(op_own >> 4);
  }
  GPUNVME_HD constexpr std::uint32_t bytes() const { return byte_swap32(byte_cnt); }
  GPUNVME_HD constexpr std::uint16_t counter() const { return byte_swap16(wqe_counter); }
  GPUNVME_HD constexpr std::uint32_t qpn() const { return byte_swap32(sop_drop_qpn) & 0xFFFFFFu; }
};

static_assert(sizeof(CtrlSegment) == 16, "mlx5_wqe_ctrl_seg is 16 bytes");
static_assert(offsetof(CtrlSegment, qpn_ds) == 4, "qpn_ds: bytes 7:4");
static_assert(offsetof(CtrlSegment, signature) == 8, "signature: byte 8");
static_assert(offsetof(CtrlSegment, fm_ce_se) == 11, "fm_ce_se: byte 11");
static_assert(offsetof(CtrlSegment, imm) == 12, "imm: bytes 15:12");
static_assert(sizeof(DataSegment) == 16, "mlx5_wqe_data_seg is 16 bytes");
static_assert(offsetof(DataSegment, lkey) == 4, "lkey: bytes 7:4");
static_assert(offsetof(DataSegment, addr) == 8, "addr: bytes 15:8");
static_assert(sizeof(RemoteAddressSegment) == 16, "mlx5_wqe_raddr_seg is 16 bytes");
static_assert(sizeof(SendWqe) == kWqeBasicBlock, "one send WQE basic block");
static_assert(offsetof(SendWqe, data) == kSegmentBytes, "the data segment follows the control");
static_assert(sizeof(RdmaWqe) == kWqeBasicBlock, "one RDMA READ/WRITE WQE basic block");
static_assert(offsetof(RdmaWqe, raddr) == kSegmentBytes, "the remote address follows the control");
static_assert(offsetof(RdmaWqe, data) == 2 * kSegmentBytes, "then the local data segment");
static_assert(offsetof(RemoteAddressSegment, rkey) == 8, "rkey: bytes 11:8");
static_assert(sizeof(SendGatherWqe) == kWqeBasicBlock, "one gathering SEND WQE basic block");
static_assert(offsetof(SendGatherWqe, data) == 2 * kSegmentBytes, "data after the capsule");
static_assert(sizeof(Cqe64) == 64, "mlx5_cqe64 is 64 bytes");
static_assert(offsetof(Cqe64, byte_cnt) == 44, "byte_cnt: bytes 47:44");
static_assert(offsetof(Cqe64, sop_drop_qpn) == 56, "sop_drop_qpn: bytes 59:56");
static_assert(offsetof(Cqe64, wqe_counter) == 60, "wqe_counter: bytes 61:60");
static_assert(offsetof(Cqe64, op_own) == 63, "op_own: the last byte");
static_assert(std::is_trivial<SendWqe>::value && std::is_trivial<Cqe64>::value &&
                  std::is_trivial<RdmaWqe>::value && std::is_trivial<SendGatherWqe>::value,
              "copied byte for byte onto simulated and real memory");

GPUNVME_HD constexpr CtrlSegment make_ctrl(std::uint8_t opcode, std::uint16_t wqe_index,
                                           std::uint32_t qpn, std::uint32_t ds, bool signaled) {
  CtrlSegment c{};
  c.opmod_idx_opcode = byte_swap32((static_cast<std::uint32_t>(wqe_index) << 8) | opcode);
  c.qpn_ds = byte_swap32((qpn << 8) | (ds & 0x3Fu));
  c.fm_ce_se = signaled ? kCtrlCqUpdate : 0;
  return c;
}

GPUNVME_HD constexpr DataSegment make_data(std::uint64_t addr, std::uint32_t bytes,
                                           std::uint32_t lkey) {
  DataSegment d{};
  d.byte_count = byte_swap32(bytes);
  d.lkey = byte_swap32(lkey);
  d.addr = byte_swap64(addr);
  return d;
}

// A SEND of `bytes` at `addr` (registered under `lkey`) as WQE `wqe_index`.
GPUNVME_HD constexpr SendWqe make_send(std::uint16_t wqe_index, std::uint32_t qpn,
                                       std::uint64_t addr, std::uint32_t bytes, std::uint32_t lkey,
                                       bool signaled) {
  SendWqe w{};
  w.ctrl = make_ctrl(kOpcodeSend, wqe_index, qpn, 2, signaled);
  w.data = make_data(addr, bytes, lkey);
  return w;
}

// An RDMA READ (`opcode` kOpcodeRdmaRead) or WRITE (kOpcodeRdmaWrite) of
// `bytes` between `local` (registered under `lkey`) and `remote` (under
// `rkey`) as WQE `wqe_index`; signaled, so its completion is a requester CQE.
GPUNVME_HD constexpr RdmaWqe make_rdma(std::uint8_t opcode, std::uint16_t wqe_index,
                                       std::uint32_t qpn, std::uint64_t remote, std::uint32_t rkey,
                                       std::uint64_t local, std::uint32_t bytes,
                                       std::uint32_t lkey) {
  RdmaWqe w{};
  w.ctrl = make_ctrl(opcode, wqe_index, qpn, 3, true);
  w.raddr.raddr = byte_swap64(remote);
  w.raddr.rkey = byte_swap32(rkey);
  w.data = make_data(local, bytes, lkey);
  return w;
}

// A SEND of a capsule (`capsule_bytes` at `capsule`, under `capsule_key`)
// followed by `bytes` of in-capsule data at `data` (under `data_key`).
GPUNVME_HD constexpr SendGatherWqe make_send_gather(std::uint16_t wqe_index, std::uint32_t qpn,
                                                    std::uint64_t capsule,
                                                    std::uint32_t capsule_bytes,
                                                    std::uint32_t capsule_key, std::uint64_t data,
                                                    std::uint32_t bytes, std::uint32_t data_key) {
  SendGatherWqe w{};
  w.ctrl = make_ctrl(kOpcodeSend, wqe_index, qpn, 3, false);
  w.capsule = make_data(capsule, capsule_bytes, capsule_key);
  w.data = make_data(data, bytes, data_key);
  return w;
}

// The doorbell record value of a queue whose producer counter is `counter`.
GPUNVME_HD constexpr std::uint32_t doorbell_record(std::uint32_t counter) {
  return byte_swap32(counter & 0xFFFFu);
}
// The CQ's consumer index record (24 bits).
GPUNVME_HD constexpr std::uint32_t cq_consumer_record(std::uint32_t consumer) {
  return byte_swap32(consumer & 0xFFFFFFu);
}
GPUNVME_HD constexpr std::uint32_t record_value(std::uint32_t record) {
  return byte_swap32(record);
}

// The owner bit a CQE at consumer index `ci` of a ring of `entries` (a power
// of two) carries once the NIC has written it on that lap: it flips each lap,
// and a CQ starts with every entry invalid.
GPUNVME_HD constexpr std::uint8_t cqe_owner(std::uint32_t ci, std::uint32_t entries) {
  return (ci & entries) != 0 ? 1 : 0;
}
// Whether the CQE word `last_word` (bytes 63:60 of the entry, as one
// little-endian load reads them) holds a CQE the software at `ci` may consume.
GPUNVME_HD constexpr bool cqe_ready(std::uint32_t last_word, std::uint32_t ci,
                                    std::uint32_t entries) {
  const auto op_own = static_cast<std::uint8_t>(last_word >> 24);
  return (op_own >> 4) != kCqeInvalid && (op_own & 1u) == cqe_owner(ci, entries);
}

// ---------------------------------------------------------------------------
// NVMe-oF command capsule
// ---------------------------------------------------------------------------

// SGL identifier of a Keyed SGL Data Block descriptor, type 4h, sub type 0h.
constexpr std::uint8_t kKeyedDataBlock = 0x40;
// A command capsule without in-capsule data, and a response capsule.
constexpr std::uint32_t kCommandCapsuleBytes = 64;
constexpr std::uint32_t kResponseCapsuleBytes = 16;

// The upper 8 bytes of a Keyed SGL Data Block (SGL bytes 39:32, in the SQE's
// PRP2 word): 24-bit length, 32-bit remote key, identifier in the top byte.
GPUNVME_HD constexpr std::uint64_t keyed_data_block_upper(std::uint32_t bytes, std::uint32_t rkey) {
  return (static_cast<std::uint64_t>(bytes) & 0xFFFFFFull) |
         (static_cast<std::uint64_t>(rkey) << 24) |
         (static_cast<std::uint64_t>(kKeyedDataBlock) << 56);
}

// A Read whose data the target RDMA WRITEs to `addr` (`bytes`, remote key
// `rkey`): SGL1 is a Keyed SGL Data Block (bytes 31:24 address, 34:32
// length, 38:35 key, 39 identifier).
GPUNVME_HD constexpr nvme::SubmissionEntry make_keyed_read(std::uint16_t cid, std::uint32_t nsid,
                                                           std::uint64_t slba,
                                                           std::uint16_t nlb_zero_based,
                                                           std::uint64_t addr, std::uint32_t bytes,
                                                           std::uint32_t rkey) {
  nvme::SubmissionEntry e = nvme::make_read(cid, nsid, slba, nlb_zero_based, addr, 0);
  e.set_psdt(nvme::Psdt::SglContiguousMetadata);
  e.prp2 = keyed_data_block_upper(bytes, rkey);
  return e;
}

// A Write whose data the target RDMA READs from `addr` (a Keyed SGL Data
// Block as for a read).
GPUNVME_HD constexpr nvme::SubmissionEntry make_keyed_write(std::uint16_t cid, std::uint32_t nsid,
                                                            std::uint64_t slba,
                                                            std::uint16_t nlb_zero_based,
                                                            std::uint64_t addr, std::uint32_t bytes,
                                                            std::uint32_t rkey) {
  nvme::SubmissionEntry e = nvme::make_write(cid, nsid, slba, nlb_zero_based, addr, 0);
  e.set_psdt(nvme::Psdt::SglContiguousMetadata);
  e.prp2 = keyed_data_block_upper(bytes, rkey);
  return e;
}

// SGL identifier of a Data Block descriptor with the Offset sub type (type
// 0h, sub type 1h): in-capsule data at an offset into the capsule's data
// area (NVMe over Fabrics 1.1, 2.3.1).
constexpr std::uint8_t kDataBlockOffset = 0x01;

// A Write whose `bytes` of data travel in the capsule at offset 0 of its data
// area: SGL1 is a Data Block (Offset) descriptor (bytes 31:24 the offset,
// 35:32 the length, 39 identifier).
GPUNVME_HD constexpr nvme::SubmissionEntry make_in_capsule_write(std::uint16_t cid,
                                                                 std::uint32_t nsid,
                                                                 std::uint64_t slba,
                                                                 std::uint16_t nlb_zero_based,
                                                                 std::uint32_t bytes) {
  nvme::SubmissionEntry e = nvme::make_write(cid, nsid, slba, nlb_zero_based, 0, 0);
  e.set_psdt(nvme::Psdt::SglContiguousMetadata);
  e.prp2 = static_cast<std::uint64_t>(bytes) | (static_cast<std::uint64_t>(kDataBlockOffset) << 56);
  return e;
}

struct KeyedDataBlock {
  std::uint64_t address;
  std::uint32_t length;
  std::uint32_t key;
  std::uint8_t identifier;
};

GPUNVME_HD constexpr KeyedDataBlock keyed_data_block(const nvme::SubmissionEntry& e) {
  return KeyedDataBlock{e.prp1, static_cast<std::uint32_t>(e.prp2 & 0xFFFFFFull),
                        static_cast<std::uint32_t>((e.prp2 >> 24) & 0xFFFFFFFFull),
                        static_cast<std::uint8_t>(e.prp2 >> 56)};
}

static_assert(byte_swap32(0x11223344u) == 0x44332211u, "32-bit swap");
static_assert(byte_swap64(0x1122334455667788ull) == 0x8877665544332211ull, "64-bit swap");
static_assert(make_ctrl(kOpcodeSend, 0x1234, 0x56, 2, true).wqe_index() == 0x1234, "index 23:8");
static_assert(make_ctrl(kOpcodeSend, 0x1234, 0x56, 2, true).opmod_idx_opcode == 0x0A341200u,
              "stored big endian: bytes 00 12 34 0a");
static_assert(make_ctrl(kOpcodeSend, 0, 0x56, 2, false).qpn() == 0x56, "QP number 31:8");
static_assert(make_ctrl(kOpcodeSend, 0, 0x56, 2, false).ds() == 2, "ds 5:0");
static_assert(cqe_ready(0x20000000u, 0, 64), "first lap: RESP_SEND with owner 0");
static_assert(!cqe_ready(0xF0000000u, 0, 64), "invalid opcode: not yet written");
static_assert(!cqe_ready(0x20000000u, 64, 64), "second lap wants owner 1");
static_assert(cqe_ready(0x21000000u, 64, 64), "second lap, owner 1");
static_assert(keyed_data_block(make_keyed_read(7, 1, 100, 7, 0xABCD000, 4096, 0x1234)).key ==
                  0x1234,
              "key: bytes 38:35");
static_assert(keyed_data_block(make_keyed_read(7, 1, 100, 7, 0xABCD000, 4096, 0x1234)).length ==
                  4096,
              "length: bytes 34:32");
static_assert(keyed_data_block(make_keyed_read(7, 1, 100, 7, 0xABCD000, 4096, 0x1234)).identifier ==
                  kKeyedDataBlock,
              "identifier: byte 39");

static_assert(make_rdma(kOpcodeRdmaRead, 3, 0x56, 0x1122334455667788ull, 0xAB, 0x9000, 4096, 7)
                      .raddr.raddr == 0x8877665544332211ull,
              "remote address stored big endian");
static_assert(make_rdma(kOpcodeRdmaRead, 3, 0x56, 0x1000, 0xAB, 0x9000, 4096, 7).ctrl.ds() == 3,
              "ctrl, remote address and data: 3 segments");
static_assert(make_rdma(kOpcodeRdmaWrite, 3, 0x56, 0x1000, 0xAB, 0x9000, 4096, 7).ctrl.fm_ce_se ==
                  kCtrlCqUpdate,
              "signaled: the requester gets a CQE");
static_assert(make_rdma(kOpcodeRdmaWrite, 3, 0x56, 0x1000, 0xAB, 0x9000, 4096, 7).remote_key() ==
                  0xAB,
              "rkey round trip");
static_assert(keyed_data_block(make_in_capsule_write(7, 1, 100, 0, 512)).identifier ==
                  kDataBlockOffset,
              "in-capsule data: Data Block, Offset sub type");
static_assert(keyed_data_block(make_keyed_write(7, 1, 100, 7, 0xABCD000, 4096, 0x1234)).key ==
                  0x1234,
              "a write's key: bytes 38:35");

}  // namespace gpunvme::rdma
