// NVMe completion status: Status Code Type (SCT) and Status Code (SC).
//
// References are to the NVM Express Base Specification, revision 1.4
// (2019-06-10), section 4.6.1 "Status Field Definition": Figure 125 (Status
// Code Type values), Figures 126-127 (Generic Command Status), section
// 4.6.1.2.2 (Command Specific Status), 4.6.1.2.3 (Media and Data Integrity
// Errors) and 4.6.1.2.4 (Path Related Status). The numeric values match the
// Linux kernel's include/linux/nvme.h, which encodes a status the same way as
// this header: SCT in bits 10:8 and SC in bits 7:0 of a 16-bit value.
#pragma once

#include <cstdint>

#include "sim/core/protocol/portability.h"

namespace gpunvme::nvme {

// Status Code Type (Figure 125). Values 4h-6h are reserved.
enum class StatusCodeType : std::uint8_t {
  Generic = 0x0,
  CommandSpecific = 0x1,
  MediaAndDataIntegrity = 0x2,
  PathRelated = 0x3,
  VendorSpecific = 0x7,
};

// A status as (SCT << 8) | SC. This is not the CQE status half-word (which
// also carries the phase tag, CRD, M and DNR); see CompletionEntry.
enum class Status : std::uint16_t {
  // Generic Command Status, SCT 0h (Figures 126 and 127).
  Success = 0x000,
  InvalidCommandOpcode = 0x001,
  InvalidFieldInCommand = 0x002,
  CommandIdConflict = 0x003,
  DataTransferError = 0x004,
  AbortedPowerLoss = 0x005,
  InternalError = 0x006,
  CommandAbortRequested = 0x007,
  AbortedSqDeletion = 0x008,
  AbortedFailedFusedCommand = 0x009,
  AbortedMissingFusedCommand = 0x00A,
  InvalidNamespaceOrFormat = 0x00B,
  CommandSequenceError = 0x00C,
  InvalidSglSegmentDescriptor = 0x00D,
  InvalidNumberOfSglDescriptors = 0x00E,
  DataSglLengthInvalid = 0x00F,
  MetadataSglLengthInvalid = 0x010,
  SglDescriptorTypeInvalid = 0x011,
  InvalidUseOfControllerMemoryBuffer = 0x012,
  PrpOffsetInvalid = 0x013,
  AtomicWriteUnitExceeded = 0x014,
  OperationDenied = 0x015,
  SglOffsetInvalid = 0x016,
  HostIdentifierInconsistentFormat = 0x018,
  KeepAliveTimerExpired = 0x019,
  KeepAliveTimeoutInvalid = 0x01A,
  AbortedPreemptAndAbort = 0x01B,
  SanitizeFailed = 0x01C,
  SanitizeInProgress = 0x01D,
  SglDataBlockGranularityInvalid = 0x01E,
  CommandNotSupportedForQueueInCmb = 0x01F,
  NamespaceWriteProtected = 0x020,
  CommandInterrupted = 0x021,
  TransientTransportError = 0x022,
  // Generic Command Status, NVM command set specific range (Figure 127).
  LbaOutOfRange = 0x080,
  CapacityExceeded = 0x081,
  NamespaceNotReady = 0x082,
  ReservationConflict = 0x083,
  FormatInProgress = 0x084,

  // Command Specific Status, SCT 1h (section 4.6.1.2.2).
  CompletionQueueInvalid = 0x100,
  InvalidQueueIdentifier = 0x101,
  InvalidQueueSize = 0x102,
  AbortCommandLimitExceeded = 0x103,
  AsynchronousEventRequestLimitExceeded = 0x105,
  InvalidFirmwareSlot = 0x106,
  InvalidFirmwareImage = 0x107,
  InvalidInterruptVector = 0x108,
  InvalidLogPage = 0x109,
  InvalidFormat = 0x10A,
  FirmwareActivationRequiresConventionalReset = 0x10B,
  InvalidQueueDeletion = 0x10C,
  FeatureIdentifierNotSaveable = 0x10D,
  FeatureNotChangeable = 0x10E,
  FeatureNotNamespaceSpecific = 0x10F,
  // NVM command set specific command status (Read, Write and friends).
  ConflictingAttributes = 0x180,
  InvalidProtectionInformation = 0x181,
  AttemptedWriteToReadOnlyRange = 0x182,

  // Media and Data Integrity Errors, SCT 2h (section 4.6.1.2.3).
  WriteFault = 0x280,
  UnrecoveredReadError = 0x281,
  EndToEndGuardCheckError = 0x282,
  EndToEndApplicationTagCheckError = 0x283,
  EndToEndReferenceTagCheckError = 0x284,
  CompareFailure = 0x285,
  AccessDenied = 0x286,
  DeallocatedOrUnwrittenLogicalBlock = 0x287,

  // Path Related Status, SCT 3h (section 4.6.1.2.4).
  InternalPathError = 0x300,
  AsymmetricAccessPersistentLoss = 0x301,
  AsymmetricAccessInaccessible = 0x302,
  AsymmetricAccessTransition = 0x303,
  ControllerPathingError = 0x360,
  HostPathingError = 0x370,
  CommandAbortedByHost = 0x371,
};

GPUNVME_HD constexpr Status make_status(StatusCodeType sct, std::uint8_t sc) {
  return static_cast<Status>(static_cast<std::uint16_t>((static_cast<unsigned>(sct) & 0x7u) << 8) |
                             sc);
}

GPUNVME_HD constexpr StatusCodeType status_code_type(Status s) {
  return static_cast<StatusCodeType>((static_cast<std::uint16_t>(s) >> 8) & 0x7u);
}

GPUNVME_HD constexpr std::uint8_t status_code(Status s) {
  return static_cast<std::uint8_t>(static_cast<std::uint16_t>(s) & 0xFFu);
}

GPUNVME_HD constexpr bool is_success(Status s) { return s == Status::Success; }

// A short human-readable name, for traces and results. Returns "Unknown" for
// values this header does not name (vendor specific codes, newer revisions).
GPUNVME_HD constexpr const char* status_name(Status s) {
  switch (s) {
    case Status::Success: return "Success";
    case Status::InvalidCommandOpcode: return "Invalid Command Opcode";
    case Status::InvalidFieldInCommand: return "Invalid Field in Command";
    case Status::CommandIdConflict: return "Command ID Conflict";
    case Status::DataTransferError: return "Data Transfer Error";
    case Status::AbortedPowerLoss: return "Commands Aborted due to Power Loss Notification";
    case Status::InternalError: return "Internal Error";
    case Status::CommandAbortRequested: return "Command Abort Requested";
    case Status::AbortedSqDeletion: return "Command Aborted due to SQ Deletion";
    case Status::AbortedFailedFusedCommand: return "Command Aborted due to Failed Fused Command";
    case Status::AbortedMissingFusedCommand: return "Command Aborted due to Missing Fused Command";
    case Status::InvalidNamespaceOrFormat: return "Invalid Namespace or Format";
    case Status::CommandSequenceError: return "Command Sequence Error";
    case Status::InvalidSglSegmentDescriptor: return "Invalid SGL Segment Descriptor";
    case Status::InvalidNumberOfSglDescriptors: return "Invalid Number of SGL Descriptors";
    case Status::DataSglLengthInvalid: return "Data SGL Length Invalid";
    case Status::MetadataSglLengthInvalid: return "Metadata SGL Length Invalid";
    case Status::SglDescriptorTypeInvalid: return "SGL Descriptor Type Invalid";
    case Status::InvalidUseOfControllerMemoryBuffer:
      return "Invalid Use of Controller Memory Buffer";
    case Status::PrpOffsetInvalid: return "PRP Offset Invalid";
    case Status::AtomicWriteUnitExceeded: return "Atomic Write Unit Exceeded";
    case Status::OperationDenied: return "Operation Denied";
    case Status::SglOffsetInvalid: return "SGL Offset Invalid";
    case Status::HostIdentifierInconsistentFormat: return "Host Identifier Inconsistent Format";
    case Status::KeepAliveTimerExpired: return "Keep Alive Timer Expired";
    case Status::KeepAliveTimeoutInvalid: return "Keep Alive Timeout Invalid";
    case Status::AbortedPreemptAndAbort: return "Command Aborted due to Preempt and Abort";
    case Status::SanitizeFailed: return "Sanitize Failed";
    case Status::SanitizeInProgress: return "Sanitize In Progress";
    case Status::SglDataBlockGranularityInvalid: return "SGL Data Block Granularity Invalid";
    case Status::CommandNotSupportedForQueueInCmb: return "Command Not Supported for Queue in CMB";
    case Status::NamespaceWriteProtected: return "Namespace is Write Protected";
    case Status::CommandInterrupted: return "Command Interrupted";
    case Status::TransientTransportError: return "Transient Transport Error";
    case Status::LbaOutOfRange: return "LBA Out of Range";
    case Status::CapacityExceeded: return "Capacity Exceeded";
    case Status::NamespaceNotReady: return "Namespace Not Ready";
    case Status::ReservationConflict: return "Reservation Conflict";
    case Status::FormatInProgress: return "Format In Progress";
    case Status::CompletionQueueInvalid: return "Completion Queue Invalid";
    case Status::InvalidQueueIdentifier: return "Invalid Queue Identifier";
    case Status::InvalidQueueSize: return "Invalid Queue Size";
    case Status::AbortCommandLimitExceeded: return "Abort Command Limit Exceeded";
    case Status::AsynchronousEventRequestLimitExceeded:
      return "Asynchronous Event Request Limit Exceeded";
    case Status::InvalidFirmwareSlot: return "Invalid Firmware Slot";
    case Status::InvalidFirmwareImage: return "Invalid Firmware Image";
    case Status::InvalidInterruptVector: return "Invalid Interrupt Vector";
    case Status::InvalidLogPage: return "Invalid Log Page";
    case Status::InvalidFormat: return "Invalid Format";
    case Status::FirmwareActivationRequiresConventionalReset:
      return "Firmware Activation Requires Conventional Reset";
    case Status::InvalidQueueDeletion: return "Invalid Queue Deletion";
    case Status::FeatureIdentifierNotSaveable: return "Feature Identifier Not Saveable";
    case Status::FeatureNotChangeable: return "Feature Not Changeable";
    case Status::FeatureNotNamespaceSpecific: return "Feature Not Namespace Specific";
    case Status::ConflictingAttributes: return "Conflicting Attributes";
    case Status::InvalidProtectionInformation: return "Invalid Protection Information";
    case Status::AttemptedWriteToReadOnlyRange: return "Attempted Write to Read Only Range";
    case Status::WriteFault: return "Write Fault";
    case Status::UnrecoveredReadError: return "Unrecovered Read Error";
    case Status::EndToEndGuardCheckError: return "End-to-end Guard Check Error";
    case Status::EndToEndApplicationTagCheckError: return "End-to-end Application Tag Check Error";
    case Status::EndToEndReferenceTagCheckError: return "End-to-end Reference Tag Check Error";
    case Status::CompareFailure: return "Compare Failure";
    case Status::AccessDenied: return "Access Denied";
    case Status::DeallocatedOrUnwrittenLogicalBlock:
      return "Deallocated or Unwritten Logical Block";
    case Status::InternalPathError: return "Internal Path Error";
    case Status::AsymmetricAccessPersistentLoss: return "Asymmetric Access Persistent Loss";
    case Status::AsymmetricAccessInaccessible: return "Asymmetric Access Inaccessible";
    case Status::AsymmetricAccessTransition: return "Asymmetric Access Transition";
    case Status::ControllerPathingError: return "Controller Pathing Error";
    case Status::HostPathingError: return "Host Pathing Error";
    case Status::CommandAbortedByHost: return "Command Aborted By Host";
  }
  return "Unknown";
}

}  // namespace gpunvme::nvme
