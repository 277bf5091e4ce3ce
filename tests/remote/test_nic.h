// The RDMA NIC the remote tests work by hand: a 400 Gb/s port, 570 ns host
// DMA reads (pcie-bench), 123 ns of pipeline, doorbell posting of 64 B WQEs,
// no inline payloads. Only the translation cache's size differs by test.
#pragma once

#include <cstdint>

#include "models/nic/rdma_nic.h"

namespace gpunvme::test {

inline nic::RdmaNicParams hand_worked_nic(std::int64_t translation_entries) {
  nic::RdmaNicParams p;
  p.port_gbps = 400.0;
  p.host_dma_gbps = 460.0;
  p.host_read_ns = ns_to_ps(570.0);
  p.pipeline_ns = ns_to_ps(123.0);
  p.message_rate_mpps = 200.0;
  p.wqe_posting = nic::WqePosting::doorbell;
  p.wqe_bytes = 64;
  p.cqe_bytes = 64;
  p.max_inline_bytes = 0;
  p.translation_entries = translation_entries;
  p.registration_page_bytes = 4096;
  p.translation_entry_bytes = 8;
  return p;
}

}  // namespace gpunvme::test
