// Embedding-style gather: batches of random lookups of fixed-size rows in a
// table stored on the SSDs (DLRM's embedding tables, BaM's gather).
//
// Rows are packed whole into bs-sized units (floor(bs / row_bytes) rows per
// unit); a row larger than bs takes ceil(row_bytes / bs) units of its own.
// A lookup reads the extent holding its row (one unit, or the row's units)
// with one I/O; extent e lives on SSD e mod ssds. With coalesce, lookups of
// one batch that hit the same extent share one I/O. The next batch starts
// once every I/O of the batch is in. Reports lookups per second, bytes read
// against bytes used (read amplification) and IOPS.
//
// A failed I/O fails every lookup it served (not retried): those lookups
// count in failed_lookups, not in lookups_per_s or useful_bytes, and the
// result says data_complete false.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/system/workload/address_stream.h"
#include "sim/system/workload/workload.h"

namespace gpunvme {

// Checks the gather fields against the SSDs; returns the bytes of one I/O.
std::uint64_t check_gather(const RunConfig& config);

struct GatherLayout {
  std::uint64_t rows_per_extent;  // rows sharing one extent (1 when a row spans units)
  std::uint64_t extent_bytes;     // bytes one lookup reads
  std::uint64_t extents;
};
GatherLayout gather_layout(std::uint64_t rows, std::uint64_t row_bytes, std::uint64_t bs);

class GatherWorkload : public PathWorkload {
 public:
  GatherWorkload(const sc_core::sc_module_name& name, const RunConfig& config, Machine& machine);
  nlohmann::json summary(Picoseconds elapsed) const override;
  nlohmann::json sections(Picoseconds elapsed) const override;

  std::uint64_t lookups_done() const { return lookups_done_; }
  std::uint64_t batches() const { return batches_; }
  std::uint64_t gather_ios() const { return ios_; }
  std::uint64_t failed_lookups() const { return failed_lookups_; }

 private:
  void begin() override;
  void next_batch();

  GatherLayout layout_;
  std::uint64_t row_bytes_;
  std::uint64_t lookups_;
  std::uint64_t batch_lookups_;
  bool coalesce_;
  std::uint32_t threads_;
  std::uint64_t buffers_ = 0;
  std::uint64_t buffer_stride_ = 0;
  AddressStream rows_;
  std::vector<std::uint32_t> lbas_per_extent_;
  std::uint64_t lookups_done_ = 0;
  std::uint64_t batches_ = 0;
  std::uint64_t ios_ = 0;
  std::uint64_t failed_ios_ = 0;
  std::uint64_t failed_lookups_ = 0;
  std::uint64_t outstanding_ = 0;
};

}  // namespace gpunvme
