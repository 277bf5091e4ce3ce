// Geometry and timing of the SSD media back end (NAND flash or 3D XPoint), and
// their declared parameters.
//
// Times are integer picoseconds, the simulator's time base. The declared
// parameters carry human units (µs, MT/s, MiB, GiB); flash_params_from()
// converts them once, so the hot path never does unit arithmetic beyond the
// per-byte transfer rate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/flash/ftl.h"
#include "sim/kernel/params/param_table.h"

namespace gpunvme::flash {

// The storage medium. The four NAND kinds differ in timing only; xpoint is
// Intel/Micron 3D XPoint (Optane): written in place, so there is no erase and
// no block structure, and reads take about a microsecond.
GPUNVME_ENUM(Media, nand_slc, nand_mlc, nand_tlc, nand_qlc, xpoint)

// The state a run starts from: a fresh (erased) drive, every logical unit
// written once in order, or that followed by random overwrites until the
// write amplification settles (steady state).
GPUNVME_ENUM(Precondition, none, sequential, steady_state)
const char* to_string(Precondition precondition);

const char* to_string(Media media);
// Throws std::invalid_argument for a name that is not one of the above.
Media media_from_string(const std::string& name);

// Typical array timings of a medium, used when a profile leaves read_us,
// program_us or erase_us at 0. Each figure's source is beside it in
// flash_params.cpp.
struct MediaTiming {
  double read_us;
  double program_us;
  double erase_us;
};
MediaTiming typical_timing(Media media);

// The member defaults equal the declared defaults of flash_param_specs(),
// where each one's source is recorded (a test holds them together); the
// timings are the nand_tlc typical figures.
struct FlashParams {
  Media media = Media::nand_tlc;

  // Geometry. A die has planes_per_die planes; each plane has its own page
  // register, so a page read in one plane does not disturb another's.
  std::uint32_t channels = 8;
  std::uint32_t dies_per_channel = 4;
  std::uint32_t planes_per_die = 2;
  std::uint32_t page_bytes = 16384;
  // Logical bytes are striped over (channel, die, plane) in units of
  // stripe_bytes, channel fastest, then die, then plane, so consecutive
  // stripe units land on different channels.
  std::uint32_t stripe_bytes = 16384;
  // true: every plane is an independent read unit (asynchronous independent
  // plane reads). false: a die runs one array operation at a time; pages of
  // one command that fall in different planes of a die share one tR
  // (synchronous multi-plane read).
  bool independent_plane_reads = false;

  // Array timing, picoseconds. Garbage collection erases (NAND only).
  std::uint64_t read_ps = 81'000'000;
  std::uint64_t program_ps = 800'000'000;
  std::uint64_t erase_ps = 3'800'000'000;

  // Channel (NAND bus) rate: channel_mts mega-transfers per second times
  // channel_bus_bytes per transfer.
  double channel_mts = 1200.0;
  std::uint32_t channel_bus_bytes = 1;

  // Write buffer (controller DRAM or SLC cache) and the rate at which write
  // data enters it.
  std::uint64_t write_buffer_bytes = 64ull << 20;
  double write_buffer_gbps = 7.0;

  std::uint64_t capacity_bytes = 1024ull << 30;

  // Flash translation layer (NAND; 3D XPoint writes in place). The FTL maps
  // mapping_unit_bytes at a time; a write that covers part of a mapped unit
  // reads the unit first (read-modify-write), on XPoint too, where the unit
  // is the media's write granule.
  std::uint32_t mapping_unit_bytes = 4096;
  std::uint32_t pages_per_block = 256;
  double over_provisioning = 0.07;
  GcPolicy gc_policy = GcPolicy::greedy;
  std::uint32_t gc_foreground_free_blocks = 2;
  std::uint32_t gc_background_free_blocks = 4;
  Precondition precondition = Precondition::none;
  std::uint64_t ftl_max_slots = 8u << 20;

  // Derived figures.
  std::uint32_t dies() const { return channels * dies_per_channel; }
  std::uint32_t planes() const { return dies() * planes_per_die; }
  // Units that can run an array operation at the same time.
  std::uint32_t array_units() const { return independent_plane_reads ? planes() : dies(); }
  // Bytes one array unit programs in one tPROG: a page per plane, all planes of
  // a die together when the die is the unit (multi-plane program).
  std::uint32_t program_chunk_bytes() const {
    return page_bytes * (independent_plane_reads ? 1u : planes_per_die);
  }
  double channel_bytes_per_s() const { return channel_mts * 1e6 * channel_bus_bytes; }
  bool has_ftl() const { return media != Media::xpoint; }
  // The FTL's geometry: one frontier per array unit, a "page" being the
  // bytes one program moves on a unit.
  FtlGeometry ftl_geometry() const;
  // Memory the FTL's map takes once a run writes (0 for XPoint).
  std::uint64_t ftl_memory_bytes() const;

  // Throws std::invalid_argument when the geometry cannot be simulated (zero
  // sizes, a buffer smaller than one program chunk, ...).
  void validate() const;
};

// The flash back end's parameters as declared (flash_params.def), typed:
// what FlashParams is built from.
struct FlashParamValues {
#define GPUNVME_PARAM GPUNVME_PARAM_MEMBER
#include "models/flash/flash_params.def"
#undef GPUNVME_PARAM
  static FlashParamValues from(const ParamValues& values);
};

// The declared parameters of the flash back end, in the order `describe`
// prints them.
const std::vector<ParamSpec>& flash_param_specs();

// Builds FlashParams from values resolved against flash_param_specs() (every
// declared name present). A 0 in read_us, program_us or erase_us selects the
// medium's typical figure. Validates the result.
FlashParams flash_params_from(const ParamValues& values);

// Every declared flash parameter at its default value.
ParamValues flash_param_defaults();

}  // namespace gpunvme::flash
