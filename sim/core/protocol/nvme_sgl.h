// Scatter Gather Lists: controller-side walker over SGL segments.
//
// NVM Express Base Specification 1.4, section 4.4 "Scatter Gather List
// (SGL)". The command's DPTR holds one descriptor (SGL1, see
// SubmissionEntry::sgl1()): a Data Block or Bit Bucket describes the whole
// transfer; a Segment or Last Segment descriptor points to an SGL segment, an
// array of 16-byte descriptors in host memory.
//   * A segment pointed to by a Segment descriptor may end with a Segment or
//     Last Segment descriptor that continues the list; a chain descriptor
//     anywhere but in the last position is invalid.
//   * The segment pointed to by a Last Segment descriptor holds only Data
//     Block and Bit Bucket descriptors.
//   * A (Last) Segment descriptor's length is the segment size in bytes: a
//     non-zero multiple of 16.
//   * Bit Bucket descriptors discard read data; they have no meaning for data
//     sent to the controller.
// Error statuses are the Generic Command Status values of section 4.6.1.2.1.
// Builders for the descriptors are in nvme_entries.h (make_sgl_*).
#pragma once

#include <cstdint>

#include "sim/core/protocol/nvme_entries.h"
#include "sim/core/protocol/nvme_status.h"
#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

constexpr std::uint32_t kSglDescriptorSize = 16;

// What the controller supports; mirrors the Identify Controller SGLS field.
struct SglWalkOptions {
  // Bit Bucket descriptors accepted (SGLS bit 16). Set only for transfers from
  // controller to host (reads); otherwise a Bit Bucket is an invalid type.
  bool allow_bit_bucket = false;
  // An SGL describing more bytes than the command moves is accepted and the
  // excess ignored (SGLS bit 18); otherwise Data SGL Length Invalid.
  bool allow_longer_sgl = false;
  // Data Blocks must be dword aligned in address and length (SGLS 1:0 = 10b);
  // otherwise SGL Data Block Granularity Invalid.
  bool dword_granularity = false;
  // Upper bound on descriptors fetched from host memory, which also stops a
  // cyclic list; exceeding it is Invalid Number of SGL Descriptors.
  std::uint32_t max_descriptors = 65536;
};

namespace detail {

// Consume one Data Block or Bit Bucket descriptor against the bytes still to
// transfer.
GPUNVME_EXEC_CHECK_DISABLE
template <typename OnSegment>
GPUNVME_HD Status sgl_take_data(const SglDescriptor& d, std::uint64_t* remaining,
                                const SglWalkOptions& opts, OnSegment& on_segment) {
  const bool bucket = d.type() == SglDescriptorType::BitBucket;
  if (bucket && !opts.allow_bit_bucket) return Status::SglDescriptorTypeInvalid;
  if (!bucket && d.subtype() != SglDescriptorSubtype::Address) {
    return Status::SglDescriptorTypeInvalid;
  }
  if (!bucket && opts.dword_granularity && ((d.address | d.length) & 0x3u) != 0) {
    return Status::SglDataBlockGranularityInvalid;
  }
  std::uint64_t bytes = d.length;
  if (bytes > *remaining) {
    if (!opts.allow_longer_sgl) return Status::DataSglLengthInvalid;
    bytes = *remaining;
  }
  if (bytes > 0) on_segment(bucket ? 0 : d.address, bytes, bucket);
  *remaining -= bytes;
  return Status::Success;
}

GPUNVME_HD constexpr bool sgl_is_data(SglDescriptorType t) {
  return t == SglDescriptorType::DataBlock || t == SglDescriptorType::BitBucket;
}

GPUNVME_HD constexpr bool sgl_is_chain(SglDescriptorType t) {
  return t == SglDescriptorType::Segment || t == SglDescriptorType::LastSegment;
}

}  // namespace detail

// Resolves an SGL for a command moving `length` bytes into segments, in
// transfer order, through `on_segment(uint64_t address, uint64_t bytes,
// bool bit_bucket)` (address is 0 for bit buckets). Segment descriptors are
// fetched one at a time with `read_descriptor(uint64_t address) ->
// SglDescriptor`, in list order.
//
// Returns Success when the data descriptors cover exactly `length` bytes (or
// at least `length` with allow_longer_sgl), otherwise:
//   SglDescriptorTypeInvalid       reserved/unsupported type or sub type, a
//                                  Bit Bucket where not allowed;
//   InvalidSglSegmentDescriptor    a (Last) Segment descriptor with a length
//                                  that is zero or not a multiple of 16, a
//                                  chain descriptor that is not the last in
//                                  its segment, or one inside the last segment;
//   InvalidNumberOfSglDescriptors  more than opts.max_descriptors fetched;
//   DataSglLengthInvalid           the SGL describes too few or too many bytes;
//   SglDataBlockGranularityInvalid misaligned Data Block under dword
//                                  granularity.
GPUNVME_EXEC_CHECK_DISABLE
template <typename ReadDescriptor, typename OnSegment>
GPUNVME_HD Status walk_sgl(const SglDescriptor& sgl1, std::uint64_t length,
                           ReadDescriptor&& read_descriptor, OnSegment&& on_segment,
                           const SglWalkOptions& opts = SglWalkOptions{}) {
  std::uint64_t remaining = length;
  const SglDescriptorType first_type = sgl1.type();

  if (detail::sgl_is_data(first_type)) {
    const Status s = detail::sgl_take_data(sgl1, &remaining, opts, on_segment);
    if (s != Status::Success) return s;
    return remaining == 0 ? Status::Success : Status::DataSglLengthInvalid;
  }
  if (!detail::sgl_is_chain(first_type)) return Status::SglDescriptorTypeInvalid;

  SglDescriptor seg = sgl1;
  std::uint64_t fetched = 0;
  for (;;) {
    if (seg.subtype() != SglDescriptorSubtype::Address) return Status::SglDescriptorTypeInvalid;
    if (seg.length == 0 || (seg.length % kSglDescriptorSize) != 0) {
      return Status::InvalidSglSegmentDescriptor;
    }
    const bool last_segment = seg.type() == SglDescriptorType::LastSegment;
    const std::uint32_t count = seg.length / kSglDescriptorSize;
    bool chained = false;
    SglDescriptor next{};
    for (std::uint32_t i = 0; i < count; ++i) {
      if (++fetched > opts.max_descriptors) return Status::InvalidNumberOfSglDescriptors;
      const SglDescriptor d =
          read_descriptor(seg.address + static_cast<std::uint64_t>(i) * kSglDescriptorSize);
      const SglDescriptorType t = d.type();
      if (detail::sgl_is_data(t)) {
        const Status s = detail::sgl_take_data(d, &remaining, opts, on_segment);
        if (s != Status::Success) return s;
      } else if (detail::sgl_is_chain(t)) {
        if (last_segment || i + 1 != count) return Status::InvalidSglSegmentDescriptor;
        chained = true;
        next = d;
      } else {
        return Status::SglDescriptorTypeInvalid;
      }
    }
    // A segment that ends with a data descriptor ends the list.
    if (!chained) break;
    seg = next;
  }
  return remaining == 0 ? Status::Success : Status::DataSglLengthInvalid;
}

}  // namespace gpunvme::nvme
