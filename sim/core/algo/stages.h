// The steps of a GPU-initiated I/O, from the request to its completion being
// seen (seed 003's per-stage breakdown). Algorithms mark each step as they
// finish it; platforms record the time. Each interval runs from the previous
// step to the named one: completion_wait is the SSD's part (fetch, service,
// data and CQE over PCIe), completion_polling the time until a GPU thread
// notices the CQE.
#pragma once

#include <cstdint>

namespace gpunvme::algo {

enum class Stage : std::uint8_t {
  Request = 0,     // the thread has a request (start of the I/O)
  CidAllocated,    // a command identifier and SQ slot are held
  SqeBuilt,        // the 64 B entry is in the SQ and ordered by a fence
  SqTailSynced,    // it is this submitter's turn to publish the tail
  DoorbellRung,    // the SQ tail doorbell write is posted
  CqePosted,       // the controller's CQE has landed in the CQ (recorded by the platform)
  CompletionSeen,  // a GPU thread has seen its CQE (phase tag matches)
  CqHeadSynced,    // the CQ head doorbell covering it is posted
  Delivered,       // the requesting thread knows its I/O is done
  kCount
};

constexpr const char* stage_interval_name(Stage end) {
  switch (end) {
    case Stage::CidAllocated: return "cid_allocation";
    case Stage::SqeBuilt: return "sqe_construction";
    case Stage::SqTailSynced: return "sq_tail_sync";
    case Stage::DoorbellRung: return "doorbell";
    case Stage::CqePosted: return "completion_wait";
    case Stage::CompletionSeen: return "completion_polling";
    case Stage::CqHeadSynced: return "cq_head_sync";
    case Stage::Delivered: return "delivery";
    default: return "";
  }
}

}  // namespace gpunvme::algo
