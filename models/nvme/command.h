// A command inside the controller, from the fetch of its entry to its
// completion, and the data segments its data pointer resolves to.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "models/nvme/command_processors.h"
#include "models/nvme/fault_injector.h"
#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/nvme_wide_cid.h"
#include "sim/kernel/inplace_function.h"
#include "sim/kernel/time.h"

namespace gpunvme::nvme {

// One physically contiguous piece of a command's data (or a bit bucket of
// an SGL read: bytes that are dropped).
struct Segment {
  std::uint64_t addr;
  std::uint64_t len;
  bool bit_bucket;
};

struct Command {
  std::uint16_t qid = 0;
  std::uint32_t slot = 0;
  SubmissionEntry sqe{};
  // Its steps inside the controller, for traces (CommandSteps).
  Picoseconds rung_at = 0;                   // its SQ tail doorbell arrived
  Picoseconds fetched_at = 0;                // its entry was fetched
  std::optional<Picoseconds> processed_at;   // a processor finished with it
  std::optional<Picoseconds> data_ready_at;  // read: media and data pointer both done;
                                             // write: its data arrived from the host
  std::uint64_t generation = 0;              // controller resets drop older commands
  std::uint64_t io_index = 0;                // I/O commands in fetch order, for faults
  bool lap_phase = true;                     // phase tag of the SQ lap it was fetched in
  // Fetched from an SQ created with wide CIDs (nvme_wide_cid.h): identified
  // by the 32-bit CID in CDW2, echoed in its completion's DW1.
  bool wide = false;
  FaultKind fault = FaultKind::None;
  // Completed early by an injected reset: its own completion, when its
  // work ends, is dropped.
  bool cancelled = false;
  // With batch_service: when its batch's processing ends (booked for the
  // whole fetch at once); otherwise the command books a processor itself.
  std::optional<Picoseconds> batch_processed;
  // With batch_service: the batch, whose processor stays busy until the
  // last of its completions is posted.
  std::shared_ptr<BatchHold> batch;
  // A read's media read and data pointer meet here (IoExecution::execute_read):
  // held in the command, which every step of the read keeps alive anyway,
  // rather than in a shared record of its own (an allocation per read).
  struct ReadJoin {
    int left = 2;
    Status status = Status::Success;
    std::vector<Segment> segments;
    // DMA writes not yet issued, plus one for the loop issuing them.
    std::size_t unissued = 1;
  } read;

  // The identifier the controller knows the command by.
  std::uint32_t cid() const { return wide ? wide_cid(sqe) : std::uint32_t{sqe.cid()}; }
};
using CommandPtr = std::shared_ptr<Command>;

// What a command's data pointer resolved to: its status, and on success the
// segments. In place: a read's continuation (its command and the step it
// joins) would not fit std::function's two words.
using Resolved = InplaceFunction<void(Status, std::vector<Segment>), 48>;

// An I/O command's steps through the controller, as a trace sees them when
// it completes: the SQ entry waits for its fetch (rung to fetched), a
// processor handles it (to processed), then a read waits for the media and
// its data pointer (to data_ready) and moves its data to the host (to
// completed); a write moves its data in from the host (to data_ready) and
// stores it (to completed). Steps a command did not reach are empty.
struct CommandSteps {
  std::uint16_t qid;
  std::uint32_t cid;  // Command::cid()
  std::uint8_t opcode;
  Picoseconds rung;
  Picoseconds fetched;
  std::optional<Picoseconds> processed;
  std::optional<Picoseconds> data_ready;
  Picoseconds completed;  // the completion entry is posted
};

// A data DMA the controller issues (a burst of physically contiguous bytes),
// as a trace sees it before it enters the fabric.
struct DmaRecord {
  std::uint16_t qid;
  std::uint32_t cid;  // Command::cid()
  std::uint64_t addr;
  std::uint64_t len;
  bool to_host;  // controller to memory (read data, Identify data)
};

// What the IOMMU domain of a command's queue says of its data segments
// before any byte moves (Controller::admit_data). `tenant` tags the data
// DMAs (Fabric::write's `tenant`, 0: none). A refused command moves no data
// and completes with Data Transfer Error: with ATS the device asks the IOMMU
// for each translation before it issues the DMA (PCIe Base 5.0, 10.2), and a
// refused translation is an error the device sees, not a DMA that lands.
struct DataAdmission {
  bool refused = false;
  std::uint32_t tenant = 0;
};

}  // namespace gpunvme::nvme
