#include "models/nvme/io_execution.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <utility>

#include "sim/core/protocol/nvme_commands.h"

namespace gpunvme::nvme {

IoExecution::IoExecution(QueueSet& queues, ProcessorPolicy& processors, FaultInjector& faults,
                         IoLimits limits, IoHooks hooks)
    : queues_(queues),
      processors_(processors),
      faults_(faults),
      limits_(limits),
      hooks_(std::move(hooks)) {}

// The data path limits throughput only: a transfer starts once the path is
// free and occupies it for its bytes, while the data flows on cut-through.
Picoseconds IoExecution::book_datapath(Picoseconds ready, std::uint64_t bytes) {
  if (limits_.datapath_ps_per_byte <= 0) return ready;
  return datapath_
      .book(ready, static_cast<Picoseconds>(std::llround(limits_.datapath_ps_per_byte * bytes)))
      .start;
}

void IoExecution::execute(CommandPtr command) {
  const SubmissionEntry& sqe = command->sqe;
  const auto opcode = static_cast<NvmOpcode>(sqe.opcode());
  const bool rw = opcode == NvmOpcode::Read || opcode == NvmOpcode::Write;
  const ReadWriteFields fields = decode_read_write(sqe);
  const std::uint64_t bytes = limits_.cost.data_bytes(sqe);
  const Picoseconds processed =
      processors_.processed(command->batch_processed, bytes, hooks_.now());
  command->processed_at = processed;
  auto finish_at = [this, command](Picoseconds when, Status status) {
    hooks_.schedule_at(when, [this, command, status] { complete(*command, status); });
  };
  if (queues_.sq(command->qid).on_drained) {
    finish_at(processed, Status::AbortedSqDeletion);
    return;
  }
  if (opcode == NvmOpcode::Flush) {
    if (sqe.nsid != 1 && sqe.nsid != 0xFFFFFFFFu) {
      finish_at(processed, Status::InvalidNamespaceOrFormat);
      return;
    }
    // Without a volatile write cache, buffered data is already safe.
    finish_at(hooks_.volatile_cache() ? hooks_.media_flush(hooks_.now(), processed) : processed,
              Status::Success);
    return;
  }
  if (opcode == NvmOpcode::DatasetManagement && sqe.nsid == 1) {
    execute_dataset_management(std::move(command), processed);
    return;
  }
  Status status = Status::Success;
  if (!rw) {
    status = Status::InvalidCommandOpcode;
  } else if (sqe.nsid != 1) {
    status = Status::InvalidNamespaceOrFormat;
  } else if (fields.slba + fields.block_count > limits_.capacity_lbas ||
             fields.slba + fields.block_count < fields.slba) {
    status = Status::LbaOutOfRange;
  } else if (limits_.max_transfer_bytes != 0 && bytes > limits_.max_transfer_bytes) {
    status = Status::InvalidFieldInCommand;  // beyond MDTS
  } else if (sqe.psdt() != Psdt::Prp &&
             (!limits_.sgl_supported || sqe.psdt() == Psdt::SglMetadataSegment ||
              static_cast<int>(sqe.psdt()) == 3)) {
    status = Status::InvalidFieldInCommand;  // SGLs not offered, or a reserved PSDT
  }
  if (status != Status::Success) {
    finish_at(processed, status);
    return;
  }
  std::vector<FaultKind> events;
  command->fault = faults_.decide(command->io_index, hooks_.now(), &events);
  for (FaultKind event : events) hooks_.device_event(event);
  if (command->fault == FaultKind::Command) {
    ++command_faults_;
    finish_at(processed, Status::InternalError);
    return;
  }
  if (command->fault == FaultKind::Timeout) {
    // Lost: processed, then never completed; it keeps its CID until an
    // Abort or a reset completes it.
    ++timeout_faults_;
    hooks_.schedule_at(processed, [this, command] {
      if (command->cancelled || command->generation != hooks_.generation()) return;
      hooks_.lose(command);
    });
    return;
  }
  if (opcode == NvmOpcode::Read) {
    execute_read(std::move(command), bytes, processed);
  } else {
    execute_write(std::move(command), bytes, processed);
  }
}

// A read: the media read and the data pointer (PRP or SGL lists fetched from
// host or GPU memory) proceed in parallel once the command is processed; the
// data then passes the data path and moves to its buffer as posted writes,
// and the completion follows them on the same path.
void IoExecution::execute_read(CommandPtr command, std::uint64_t bytes, Picoseconds processed) {
  const ReadWriteFields f = decode_read_write(command->sqe);
  const Picoseconds media_done = hooks_.media_read(
      hooks_.now(), processed, f.slba * limits_.lba_bytes, static_cast<std::uint32_t>(bytes));
  bytes_read_ += bytes;
  if (command->fault == FaultKind::Media) {
    ++media_faults_;
    hooks_.schedule_at(media_done, [this, command] {
      complete(*command, Status::UnrecoveredReadError, 0, /*dnr=*/true);
    });
    return;
  }
  auto proceed = [this, command, bytes] {
    Command::ReadJoin& join = command->read;
    if (--join.left != 0) return;
    if (join.status != Status::Success) {
      complete(*command, join.status);
      return;
    }
    command->data_ready_at = hooks_.now();
    const DataAdmission admission =
        hooks_.admit_data ? hooks_.admit_data(*command, join.segments, true) : DataAdmission{};
    if (admission.refused) {
      complete(*command, Status::DataTransferError, 0, /*dnr=*/true);
      return;
    }
    hooks_.check_segments(*command, join.segments, bytes);
    auto move = [this, command, tenant = admission.tenant] {
      // The completion entry is a posted write on the same path: it may go once the last data
      // chunk has entered the fabric, and PCIe's posted ordering keeps it behind the data.
      auto issued = [this, command] {
        if (--command->read.unissued == 0) complete(*command, Status::Success);
      };
      for (const Segment& s : command->read.segments) {
        if (s.bit_bucket) continue;
        hooks_.observe_dma({command->qid, command->cid(), s.addr, s.len, true});
        if (hooks_.in_own_cmb(s.addr, s.len)) {
          hooks_.write(s.addr, static_cast<std::uint32_t>(s.len), nullptr, nullptr);
        } else {
          ++command->read.unissued;
          hooks_.dma_write(s.addr, s.len, issued, tenant);
        }
      }
      issued();
    };
    const Picoseconds start = book_datapath(hooks_.now(), bytes);
    if (start > hooks_.now()) {
      hooks_.schedule_at(start, std::move(move));
    } else {
      move();
    }
  };
  hooks_.schedule_at(media_done, proceed);
  hooks_.resolve(command, bytes, /*to_host=*/true, processed,
                 [command, proceed](Status status, std::vector<Segment> segments) {
                   command->read.status = status;
                   command->read.segments = std::move(segments);
                   proceed();
                 });
}

// A write: once processed, the data pointer is resolved and the data read
// from its buffer; it passes the data path into the write buffer, and the
// command completes when the buffer holds it (or, for FUA with a volatile
// cache, when the buffer has been programmed).
void IoExecution::execute_write(CommandPtr command, std::uint64_t bytes, Picoseconds processed) {
  hooks_.resolve(
      command, bytes, /*to_host=*/false, processed,
      [this, command, bytes, processed](Status status, std::vector<Segment> segments) {
        auto transfer = [this, command, bytes, status, segments = std::move(segments)]() mutable {
          if (status != Status::Success) {
            complete(*command, status);
            return;
          }
          const DataAdmission admission =
              hooks_.admit_data ? hooks_.admit_data(*command, segments, false) : DataAdmission{};
          if (admission.refused) {
            complete(*command, Status::DataTransferError, 0, /*dnr=*/true);
            return;
          }
          hooks_.check_segments(*command, segments, bytes);
          auto left = std::make_shared<std::size_t>(segments.size());
          for (const Segment& s : segments) {
            hooks_.observe_dma({command->qid, command->cid(), s.addr, s.len, false});
            if (hooks_.in_own_cmb(s.addr, s.len)) {
              hooks_.read(s.addr, static_cast<std::uint32_t>(s.len),
                          [this, command, left, bytes](const std::uint8_t*, std::uint32_t) {
                            if (--*left == 0) store_write(command, bytes);
                          });
            } else {
              hooks_.dma_read(
                  s.addr, s.len,
                  [this, command, left, bytes] {
                    if (--*left == 0) store_write(command, bytes);
                  },
                  admission.tenant);
            }
          }
        };
        if (hooks_.now() < processed) {
          hooks_.schedule_at(processed, std::move(transfer));
        } else {
          transfer();
        }
      });
}

// The write's data has arrived: through the data path into the write buffer.
void IoExecution::store_write(CommandPtr command, std::uint64_t bytes) {
  command->data_ready_at = hooks_.now();
  const ReadWriteFields f = decode_read_write(command->sqe);
  const Picoseconds in = book_datapath(hooks_.now(), bytes);
  Picoseconds stored =
      hooks_.media_write(in, f.slba * limits_.lba_bytes, static_cast<std::uint32_t>(bytes));
  bytes_written_ += bytes;
  Status result = Status::Success;
  if (command->fault == FaultKind::Media) {
    ++media_faults_;
    result = Status::WriteFault;
  } else if (f.fua && hooks_.volatile_cache()) {
    // FUA waits for the data to reach the media; the model programs the
    // whole buffer (an upper bound on the wait).
    stored = hooks_.media_flush(hooks_.now(), stored);
  }
  hooks_.schedule_at(stored, [this, command, result] {
    complete(*command, result, 0, /*dnr=*/result == Status::WriteFault);
  });
}

// Dataset Management (NVMe base spec 1.4, 6.7): CDW10 bits 7:0 hold the
// number of 16 B ranges less one, CDW11 bit 2 (AD) asks to deallocate them.
// The range list is read from the data pointer; each range (context
// attributes, length in LBAs, starting LBA) is deallocated in the flash back
// end, which unmaps the mapping units it covers wholly.
void IoExecution::execute_dataset_management(CommandPtr command, Picoseconds processed) {
  constexpr std::uint32_t kRangeBytes = 16;
  const std::uint32_t ranges = (command->sqe.cdw10 & 0xFFu) + 1;
  const bool deallocate = (command->sqe.cdw11 & (1u << 2)) != 0;
  const std::uint64_t bytes = std::uint64_t{ranges} * kRangeBytes;
  hooks_.resolve(command, bytes, /*to_host=*/false, processed,
                 [this, command, bytes, deallocate](Status status, std::vector<Segment> segments) {
                   if (status != Status::Success) {
                     complete(*command, status);
                     return;
                   }
                   hooks_.check_segments(*command, segments, bytes);
                   struct Gather {
                     std::vector<std::uint8_t> list;
                     std::size_t left;
                   };
                   auto gather = std::make_shared<Gather>();
                   gather->list.resize(bytes);
                   gather->left = segments.size();
                   std::uint64_t at = 0;
                   for (const Segment& s : segments) {
                     hooks_.read(s.addr, static_cast<std::uint32_t>(s.len),
                                 [this, command, gather, at, deallocate](const std::uint8_t* data,
                                                                         std::uint32_t len) {
                                   std::memcpy(gather->list.data() + at, data, len);
                                   if (--gather->left != 0) return;
                                   Status result = Status::Success;
                                   for (std::size_t r = 0; r + 16 <= gather->list.size(); r += 16) {
                                     std::uint32_t nlb = 0;
                                     std::uint64_t slba = 0;
                                     std::memcpy(&nlb, gather->list.data() + r + 4, sizeof nlb);
                                     std::memcpy(&slba, gather->list.data() + r + 8, sizeof slba);
                                     if (slba + nlb > limits_.capacity_lbas || slba + nlb < slba) {
                                       result = Status::LbaOutOfRange;
                                       break;
                                     }
                                     if (deallocate) {
                                       hooks_.media_trim(slba * limits_.lba_bytes,
                                                         std::uint64_t{nlb} * limits_.lba_bytes);
                                     }
                                   }
                                   complete(*command, result);
                                 });
                     at += s.len;
                   }
                 });
}

}  // namespace gpunvme::nvme
