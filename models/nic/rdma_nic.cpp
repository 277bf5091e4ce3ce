#include "models/nic/rdma_nic.h"

#include <algorithm>
#include <cmath>

namespace gpunvme::nic {

using network::RdmaOp;

RdmaNicParams RdmaNicParams::from(const ParamValues& values) {
  RdmaNicParams out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/nic/rdma_nic_params.def"
#undef GPUNVME_PARAM
  return out;
}

const ComponentSpec& rdma_nic_spec() {
  static const ComponentSpec spec{
      "rdma_nic",
      "An RDMA NIC on PCIe: queue pairs, WQEs by DMA or BlueFlame, CQEs, registration "
      "translation cache, DMA engine, MTU segmentation, message-rate limit.",
      {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/nic/rdma_nic_params.def"
#undef GPUNVME_PARAM
      }};
  return spec;
}

RdmaNic::RdmaNic(const RdmaNicParams& params)
    : params_(params),
      translations_(static_cast<std::uint32_t>(params.translation_entries),
                    static_cast<std::uint64_t>(params.registration_page_bytes)) {}

bool RdmaNic::reads_payload(const RdmaMessage& message) const {
  if (message.op == RdmaOp::rdma_read_request || message.op == RdmaOp::ack) return false;
  if (message.bytes == 0) return false;
  return message.bytes > static_cast<std::uint64_t>(params_.max_inline_bytes);
}

SentMessage RdmaNic::transmit(Picoseconds posted, const RdmaMessage& message,
                              network::NetworkLink& link, int direction) {
  return transmit_rung(posted, posted + params_.host_read_ns / 2,
                       params_.wqe_posting == WqePosting::blueflame, message, link, direction);
}

SentMessage RdmaNic::transmit_rung(Picoseconds posted, Picoseconds rung, bool wqe_in_hand,
                                   const RdmaMessage& message, network::NetworkLink& link,
                                   int direction) {
  const bool inline_payload = message.bytes > 0 && !reads_payload(message) &&
                              message.op != RdmaOp::rdma_read_request && message.op != RdmaOp::ack;
  const auto wqe = static_cast<std::uint64_t>(params_.wqe_bytes);

  SentMessage sent;
  sent.posted = posted;
  sent.rung = rung;
  sent.wqe_fetched = !wqe_in_hand;
  Picoseconds ready = rung;  // the doorbell or the WQE is at the NIC
  if (wqe_in_hand) {
    sent.mmio_bytes = wqe + (inline_payload ? message.bytes : 0);
  } else {
    sent.mmio_bytes = 8;  // the doorbell
    ready += params_.host_read_ns;
    sent.dma_read_bytes += wqe + (inline_payload ? message.bytes : 0);
  }
  send(sent, ready, message, link, direction);
  return sent;
}

SentMessage RdmaNic::originate(Picoseconds ready, const RdmaMessage& message,
                               network::NetworkLink& link, int direction) {
  SentMessage sent;
  sent.posted = ready;
  sent.rung = ready;  // no doorbell: the NIC has the work request
  send(sent, ready, message, link, direction);
  return sent;
}

void RdmaNic::send(SentMessage& sent, Picoseconds ready, const RdmaMessage& message,
                   network::NetworkLink& link, int direction) {
  const auto& link_params = link.params();
  const auto mtu = static_cast<std::uint32_t>(link_params.mtu_bytes);
  const auto slot = static_cast<Picoseconds>(std::llround(1e6 / params_.message_rate_mpps));
  sent.processing = rate_.book(ready, slot).start;
  ready = sent.processing + params_.pipeline_ns;

  const bool dma_payload = reads_payload(message);
  if (dma_payload) {
    sent.translation_misses =
        translations_.translate(message.memory_key, message.address, message.bytes);
    if (sent.translation_misses > 0) {
      ready += params_.host_read_ns;
      sent.dma_read_bytes +=
          sent.translation_misses * static_cast<std::uint64_t>(params_.translation_entry_bytes);
    }
    ready += params_.host_read_ns;  // the first read completion
  }

  const std::uint64_t count = network::message_packets(message.op, message.bytes, mtu);
  sent.packets.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    Picoseconds packet_ready = ready;
    if (dma_payload) {
      const std::uint32_t payload = network::packet_payload(message.bytes, mtu, i);
      packet_ready =
          dma_read_.book(ready, network::serialization_ps(payload, params_.host_dma_gbps)).end;
      sent.dma_read_bytes += payload;
    }
    const std::uint64_t wire =
        network::packet_wire_bytes(link_params.protocol, message.op, message.bytes, mtu, i);
    sent.wire_bytes += wire;
    sent.packets.push_back(link.transmit(direction, packet_ready, wire));
  }
}

DeliveredMessage RdmaNic::receive(const std::vector<Picoseconds>& tail_arrivals,
                                  const RdmaMessage& message, std::uint32_t mtu) {
  DeliveredMessage out;
  const Picoseconds one_way = params_.host_read_ns / 2;
  const bool writes_payload =
      message.bytes > 0 && message.op != RdmaOp::rdma_read_request && message.op != RdmaOp::ack;
  Picoseconds translated = 0;
  if (writes_payload) {
    out.translation_misses =
        translations_.translate(message.memory_key, message.address, message.bytes);
    if (out.translation_misses > 0 && !tail_arrivals.empty()) {
      translated = tail_arrivals.front() + params_.pipeline_ns + params_.host_read_ns;
    }
  }
  Picoseconds last_end = 0;
  for (std::size_t i = 0; i < tail_arrivals.size(); ++i) {
    const Picoseconds ready = std::max(tail_arrivals[i] + params_.pipeline_ns, translated);
    const std::uint32_t payload =
        writes_payload ? network::packet_payload(message.bytes, mtu, i) : 0;
    const NextFreeServer::Booking b =
        dma_write_.book(ready, network::serialization_ps(payload, params_.host_dma_gbps));
    out.dma_write_bytes += payload;
    last_end = b.end;
  }
  out.data_written = last_end + one_way;
  // A SEND and an RDMA READ response complete a work request here; so does
  // the acknowledgement of a signaled RDMA WRITE (its requester CQE).
  const bool writes_cqe = message.op == RdmaOp::send || message.op == RdmaOp::rdma_read_response ||
                          message.op == RdmaOp::ack;
  if (writes_cqe) {
    const auto cqe = static_cast<std::uint64_t>(params_.cqe_bytes);
    const NextFreeServer::Booking b =
        dma_write_.book(last_end, network::serialization_ps(cqe, params_.host_dma_gbps));
    out.dma_write_bytes += cqe;
    out.completed = b.end + one_way;
  } else {
    out.completed = out.data_written;
  }
  return out;
}

}  // namespace gpunvme::nic
