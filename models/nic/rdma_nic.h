// An RDMA NIC as a PCIe endpoint: work-queue entries posted by a doorbell
// and fetched by DMA, or written whole through the MMIO window
// (BlueFlame); a message-rate limit; a translation cache of registered
// memory whose misses cost a DMA read; a DMA engine that reads payloads from
// (and writes them to) memory at the PCIe rate; segmentation into MTU-sized
// packets on the network link; completion entries written back.
//
// One message's timeline on the sending NIC:
//   doorbell (or BlueFlame WQE) crosses PCIe, host_read_ns / 2
//   -> WQE fetched by DMA (doorbell posting), host_read_ns
//   -> message-rate slot, then pipeline_ns of processing
//   -> translation misses: one DMA read of their entries, host_read_ns
//   -> payload DMA: first bytes host_read_ns later, then each packet's
//      payload at host_dma_gbps (a server shared by all messages)
//   -> each packet serialised on the link as soon as its payload is in.
// On the receiving NIC each packet takes pipeline_ns, then the DMA engine
// writes its payload (host_dma_gbps), which lands host_read_ns / 2 later;
// a SEND, an RDMA READ response or the ACK of an RDMA WRITE then writes a
// CQE the same way. Packets
// pipeline through these stages, so a long message runs at the slowest
// stage's rate.
//
// Memory addresses are those of the registered buffers (host or GPU
// memory, which the NIC reaches the same way over PCIe); where the bytes
// go is the caller's to count.
#pragma once

#include <cstdint>
#include <vector>

#include "models/network/network.h"
#include "models/pcie/iotlb.h"
#include "sim/kernel/params/param_table.h"
#include "sim/kernel/server.h"
#include "sim/kernel/time.h"

namespace gpunvme::nic {

// How a work-queue entry reaches the NIC.
GPUNVME_ENUM(WqePosting, doorbell, blueflame)

struct RdmaNicParams {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/nic/rdma_nic_params.def"
#undef GPUNVME_PARAM
  static RdmaNicParams from(const ParamValues& values);
};

const ComponentSpec& rdma_nic_spec();

// One message as the verbs post it: the operation and the registered buffer
// its payload is read from (sender) or written to (receiver).
struct RdmaMessage {
  network::RdmaOp op = network::RdmaOp::send;
  std::uint64_t bytes = 0;
  std::uint32_t memory_key = 0;
  std::uint64_t address = 0;
};

struct SentMessage {
  Picoseconds posted = 0;      // the host (or GPU) wrote the doorbell
  Picoseconds rung = 0;        // the doorbell (or BlueFlame WQE) reached the NIC
  bool wqe_fetched = false;    // the NIC read the WQE by DMA
  Picoseconds processing = 0;  // the NIC started its processing (WQE in hand, rate slot)
  std::vector<network::PacketTransit> packets;  // on the link
  std::uint64_t wire_bytes = 0;
  std::uint64_t mmio_bytes = 0;      // doorbell or BlueFlame WQE written by the poster
  std::uint64_t dma_read_bytes = 0;  // WQE, payload and translation entries read by DMA
  std::uint64_t translation_misses = 0;
};

struct DeliveredMessage {
  Picoseconds data_written = 0;  // the last payload byte is in memory
  Picoseconds completed = 0;     // the CQE is in memory (data_written for an RDMA WRITE)
  std::uint64_t dma_write_bytes = 0;
  std::uint64_t translation_misses = 0;
};

class RdmaNic {
 public:
  explicit RdmaNic(const RdmaNicParams& params);

  // Sends `message` posted at `posted` onto `link` in `direction`.
  SentMessage transmit(Picoseconds posted, const RdmaMessage& message, network::NetworkLink& link,
                       int direction);
  // Sends a message the NIC starts itself at `ready`: the response to an
  // RDMA READ request whose last bit reached its port then, or a transfer of
  // a target offloaded to it. No doorbell or WQE fetch; the rate slot,
  // pipeline, translation and payload reads are those of transmit().
  SentMessage originate(Picoseconds ready, const RdmaMessage& message, network::NetworkLink& link,
                        int direction);
  // The same, for a poster whose doorbell write the caller has timed (a GPU
  // ringing the NIC through the PCIe fabric): it landed at `rung`;
  // `wqe_in_hand` when the write carried the whole WQE (BlueFlame), else the
  // NIC fetches it by DMA first.
  SentMessage transmit_rung(Picoseconds posted, Picoseconds rung, bool wqe_in_hand,
                            const RdmaMessage& message, network::NetworkLink& link, int direction);
  // Receives the packets of a message (their last bits' arrival times at
  // this NIC's port, in order) into `message`'s buffer.
  DeliveredMessage receive(const std::vector<Picoseconds>& tail_arrivals,
                           const RdmaMessage& message, std::uint32_t mtu);

  const RdmaNicParams& params() const { return params_; }
  std::uint64_t messages() const { return rate_.bookings(); }
  const pcie::Iotlb& translations() const { return translations_; }

 private:
  bool reads_payload(const RdmaMessage& message) const;
  // From the moment the NIC has the work request: rate slot, pipeline,
  // translation, payload reads and packets onto the link.
  void send(SentMessage& sent, Picoseconds ready, const RdmaMessage& message,
            network::NetworkLink& link, int direction);

  RdmaNicParams params_;
  NextFreeServer rate_;       // message-rate slots
  NextFreeServer dma_read_;   // payload reads over PCIe
  NextFreeServer dma_write_;  // payload and CQE writes over PCIe
  pcie::Iotlb translations_;
};

}  // namespace gpunvme::nic
