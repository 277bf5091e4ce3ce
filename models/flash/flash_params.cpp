#include "models/flash/flash_params.h"

#include <cmath>
#include <stdexcept>

namespace gpunvme::flash {

namespace {

constexpr double kPsPerUs = 1e6;

std::uint64_t us_to_ps(double us) {
  return static_cast<std::uint64_t>(std::llround(us * kPsPerUs));
}

constexpr const char* kMediaNames[] = {"nand_slc", "nand_mlc", "nand_tlc", "nand_qlc", "xpoint"};

}  // namespace

const char* to_string(Media media) { return kMediaNames[static_cast<int>(media)]; }

const char* to_string(Precondition precondition) {
  switch (precondition) {
    case Precondition::none: return "none";
    case Precondition::sequential: return "sequential";
    case Precondition::steady_state: return "steady_state";
  }
  return "none";
}

FtlGeometry FlashParams::ftl_geometry() const {
  FtlGeometry g;
  g.units = array_units();
  g.slots_per_page = program_chunk_bytes() / mapping_unit_bytes;
  g.pages_per_block = pages_per_block;
  g.logical_slots = capacity_bytes / mapping_unit_bytes;
  g.over_provisioning = over_provisioning;
  g.max_slots = ftl_max_slots;
  g.gc_foreground_free_blocks = gc_foreground_free_blocks;
  g.gc_background_free_blocks = gc_background_free_blocks;
  g.gc_policy = gc_policy;
  return g;
}

std::uint64_t FlashParams::ftl_memory_bytes() const {
  if (!has_ftl()) return 0;
  const FtlLayout l = ftl_layout(ftl_geometry());
  const std::uint64_t blocks = std::uint64_t{l.units} * l.blocks_per_unit;
  // Map and reverse map at 4 B a slot, 24 B of state and 4 B of free list
  // per block.
  return 4 * (l.logical_slots + blocks * l.slots_per_block) + 28 * blocks;
}

Media media_from_string(const std::string& name) {
  for (int i = 0; i < 5; ++i) {
    if (name == kMediaNames[i]) return static_cast<Media>(i);
  }
  throw std::invalid_argument("unknown flash media: " + name);
}

MediaTiming typical_timing(Media media) {
  switch (media) {
    // SLC: tR 40 µs (CALIBRATION.md SSD internals; FEMU's default page read
    // latency); tPROG 200 µs and erase 2 ms are FEMU's BBSSD defaults.
    case Media::nand_slc: return {40.0, 200.0, 2000.0};
    // MLC: MQSim's default flash parameters (its default technology is MLC):
    // page read 75 µs, page program 750 µs, block erase 3.8 ms.
    case Media::nand_mlc: return {75.0, 750.0, 3800.0};
    // TLC: tR is the mean of the lower- and upper-page figures in
    // CALIBRATION.md (56 and 106 µs), since random reads land on every page
    // type; tPROG is the low end of its 0.8–5.7 ms range (one-shot TLC
    // program); erase 3.8 ms as MQSim.
    case Media::nand_tlc: return {81.0, 800.0, 3800.0};
    // QLC: tR is the middle of CALIBRATION.md's 48–228 µs. tPROG and erase are
    // estimates: 2.5× the TLC figures, as a QLC cell programs 16 levels
    // instead of 8 with finer verify steps.
    case Media::nand_qlc: return {138.0, 2000.0, 9500.0};
    // 3D XPoint: estimate. The Optane P5800X reads 512 B in about 3.4 µs end
    // to end at QD1 (CALIBRATION.md); about 2.4 µs of that is PCIe round
    // trips and command handling, leaving ~1 µs for the media. Writes are in
    // place, about twice a read (estimate); there is no erase.
    case Media::xpoint: return {1.0, 2.0, 0.0};
  }
  return {0.0, 0.0, 0.0};
}

void FlashParams::validate() const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("flash: " + what); };
  if (channels == 0 || dies_per_channel == 0 || planes_per_die == 0) fail("empty geometry");
  if (page_bytes == 0 || stripe_bytes == 0) fail("page_bytes and stripe_bytes must be positive");
  // Planes are tracked in a 64-bit mask per die for multi-plane merging.
  if (planes_per_die > 64) fail("planes_per_die above 64");
  if (read_ps == 0) fail("read time must be positive");
  if (program_ps == 0) fail("program time must be positive");
  if (!(channel_mts > 0) || channel_bus_bytes == 0) fail("channel rate must be positive");
  if (!(write_buffer_gbps > 0)) fail("write buffer rate must be positive");
  if (write_buffer_bytes < program_chunk_bytes()) {
    fail("write buffer smaller than one program chunk (" + std::to_string(program_chunk_bytes()) +
         " B)");
  }
  if (capacity_bytes == 0) fail("capacity must be positive");
  if (mapping_unit_bytes == 0 || (mapping_unit_bytes & (mapping_unit_bytes - 1)) != 0) {
    fail("mapping_unit_bytes must be a power of two");
  }
  if (has_ftl()) {
    if (program_chunk_bytes() % mapping_unit_bytes != 0 || page_bytes < mapping_unit_bytes) {
      fail("mapping_unit_bytes (" + std::to_string(mapping_unit_bytes) +
           ") must divide page_bytes (" + std::to_string(page_bytes) + ")");
    }
    try {
      (void)ftl_layout(ftl_geometry());
    } catch (const std::invalid_argument& e) {
      fail(e.what());
    }
  }
}

const std::vector<ParamSpec>& flash_param_specs() {
  static const std::vector<ParamSpec> specs = {
      enum_param("media", "nand_tlc", {"nand_slc", "nand_mlc", "nand_tlc", "nand_qlc", "xpoint"},
                 "storage medium; selects the typical timings used when read_us, program_us or "
                 "erase_us is 0",
                 "TLC is the mainstream NAND of current data-centre and client SSDs (drive table "
                 "of the calibration notes) [calibration-notes]"),
      integer_param("channels", "", 8, 1, 64, "flash channels (independent NAND buses)",
                    "calibration notes, SSD internals: 8-18 channels; 8 is FEMU's default [femu] "
                    "[calibration-notes] [mqsim]"),
      integer_param("dies_per_channel", "", 4, 1, 64, "dies (LUNs) on each channel",
                    "calibration notes, SSD internals: 2-16 dies per channel [calibration-notes] "
                    "[femu] [mqsim]"),
      integer_param("planes_per_die", "", 2, 1, 16, "planes per die, each with a page register",
                    "MQSim default (Plane_No_Per_Die = 2) [mqsim]"),
      integer_param("page_bytes", "B", 16384, 512, 65536,
                    "bytes one array read or program moves into or out of a plane's page register",
                    "calibration notes, SSD internals: 16-32 KiB pages [calibration-notes] [femu] "
                    "[mqsim]"),
      integer_param("stripe_bytes", "B", 16384, 512, 16 << 20,
                    "striping unit: consecutive units go to consecutive channels, then dies, then "
                    "planes",
                    "one page per unit, so a sequential stream reads whole pages (page-level "
                    "striping as in MQSim's default allocation) [mqsim]"),
      bool_param("independent_plane_reads", false,
                 "true: each plane is an independent read unit; false: one array operation per "
                 "die at a time, pages of one command in different planes share one tR",
                 "MQSim and FEMU model synchronous multi-plane operation only [mqsim] [femu]"),
      real_param("read_us", "us", 0.0, 0.0, 10000.0,
                 "page read time tR; 0 selects the medium's typical figure",
                 "per-media table in models/flash/flash_params.cpp (calibration notes, FEMU, "
                 "MQSim) [mqsim] [femu] [calibration-notes]"),
      real_param("program_us", "us", 0.0, 0.0, 100000.0,
                 "page program time tPROG; 0 selects the medium's typical figure",
                 "per-media table in models/flash/flash_params.cpp (calibration notes, FEMU, "
                 "MQSim) [mqsim] [femu] [calibration-notes]"),
      real_param("erase_us", "us", 0.0, 0.0, 100000.0,
                 "block erase time, booked on the array unit when garbage collection erases a "
                 "block; 0 selects the medium's typical figure",
                 "per-media table in models/flash/flash_params.cpp (FEMU, MQSim) [mqsim] [femu]"),
      real_param("channel_mts", "MT/s", 1200.0, 1.0, 10000.0,
                 "channel transfer rate in mega-transfers per second",
                 "calibration notes, SSD internals: NAND interface 1200-2400 MT/s (ONFI 4-5); low "
                 "end [onfi] [calibration-notes] [femu] [mqsim]"),
      integer_param("channel_bus_bytes", "B", 1, 1, 8, "bytes per channel transfer (bus width)",
                    "ONFI and Toggle NAND buses are 8 bits wide [onfi]"),
      real_param("write_buffer_mib", "MiB", 64.0, 0.0625, 1048576.0,
                 "write buffer (controller DRAM or SLC cache) that acknowledges writes before "
                 "they are programmed",
                 "estimate: enterprise drives hold tens of MiB of write data behind power-loss "
                 "capacitors"),
      real_param("write_buffer_gbps", "GB/s", 7.0, 0.01, 1000.0,
                 "rate at which write data enters the buffer (10^9 B/s)",
                 "estimate: about a PCIe Gen4 x4 link's payload rate, so the buffer does not "
                 "limit writes unless a profile says so"),
      real_param("capacity_gib", "GiB", 1024.0, 0.001, 1048576.0,
                 "addressable capacity; reads and writes must fall inside it",
                 "a 1 TiB drive, the middle of the shipped profiles' range [device-profiles]"),
      integer_choice_param("mapping_unit_bytes", "B", 4096, {512, 1024, 2048, 4096, 8192, 16384},
                           "unit the FTL maps (NAND) or the media writes in place (xpoint); a "
                           "write covering part of a written unit reads it first "
                           "(read-modify-write)",
                           "page-level FTLs map 4 KiB (MQSim, FEMU, NVMeVirt's conventional SSD); "
                           "enterprise drives are built for 4 KiB I/O [mqsim] [femu] [nvmevirt]"),
      integer_param("pages_per_block", "pages", 256, 1, 65536,
                    "pages per erase block (per plane; a die unit's block spans its planes)",
                    "MQSim default (Page_No_Per_Block = 256) [mqsim]"),
      real_param("over_provisioning", "", 0.07, 0.01, 4.0,
                 "spare physical capacity as a fraction of the logical capacity "
                 "(raw / user - 1)",
                 "client drives: 2^30 / 10^9 - 1 = 7.4 % between a GiB of raw flash and a GB sold "
                 "(MQSim default Overprovisioning_Ratio is 0.07) [mqsim]"),
      enum_param("gc_policy", "greedy", {"greedy", "cost_benefit"},
                 "garbage collection victim: fewest valid slots (greedy) or largest "
                 "(1 - u) age / 2u (cost-benefit, LFS cleaner)",
                 "MQSim and SimpleSSD default to greedy [mqsim] [simplessd]"),
      integer_param("gc_foreground_free_blocks", "blocks", 2, 2, 1024,
                    "free blocks per array unit below which garbage collection runs before the "
                    "unit programs host data (host writes stall)",
                    "MQSim GC_Hard_Threshold is a fraction of free blocks per plane; 2 blocks is "
                    "the least that keeps a frontier open while a victim is moved [mqsim]"),
      integer_param("gc_background_free_blocks", "blocks", 4, 2, 1024,
                    "free blocks per array unit below which garbage collection runs on a unit "
                    "with no work queued (background, no stall)",
                    "estimate: twice the foreground threshold, as MQSim's soft and hard thresholds "
                    "[mqsim]"),
      enum_param("precondition", "none", {"none", "sequential", "steady_state"},
                 "state at the start of a run: fresh, every unit written once in order, or "
                 "that plus uniform random overwrites until the write amplification settles "
                 "(the FTL's bookkeeping, no timing)",
                 "SNIA SSS PTS (purge, workload-independent preconditioning, then steady state); "
                 "none keeps the fresh-drive behaviour [snia-pts]"),
      integer_param("ftl_max_slots", "slots", 8388608, 1024, 2147483647,
                    "physical mapping units the FTL models at most; a larger drive is modelled "
                    "as a sample with the same over-provisioning (README, write path)",
                    "estimate: 8 Mi slots keep the map near 64 MiB per SSD that writes; the "
                    "write amplification of uniform random writes does not depend on size"),
  };
  return specs;
}

ParamValues flash_param_defaults() {
  nlohmann::json values = nlohmann::json::object();
  for (const ParamSpec& spec : flash_param_specs()) values[spec.name] = spec.default_value;
  return ParamValues(std::move(values));
}

FlashParams flash_params_from(const ParamValues& v) {
  FlashParams p;
  p.media = media_from_string(v.string("media"));
  p.channels = static_cast<std::uint32_t>(v.integer("channels"));
  p.dies_per_channel = static_cast<std::uint32_t>(v.integer("dies_per_channel"));
  p.planes_per_die = static_cast<std::uint32_t>(v.integer("planes_per_die"));
  p.page_bytes = static_cast<std::uint32_t>(v.integer("page_bytes"));
  p.stripe_bytes = static_cast<std::uint32_t>(v.integer("stripe_bytes"));
  p.independent_plane_reads = v.boolean("independent_plane_reads");

  const MediaTiming typical = typical_timing(p.media);
  const double read_us = v.real("read_us");
  const double program_us = v.real("program_us");
  const double erase_us = v.real("erase_us");
  p.read_ps = us_to_ps(read_us > 0 ? read_us : typical.read_us);
  p.program_ps = us_to_ps(program_us > 0 ? program_us : typical.program_us);
  p.erase_ps = us_to_ps(erase_us > 0 ? erase_us : typical.erase_us);

  p.channel_mts = v.real("channel_mts");
  p.channel_bus_bytes = static_cast<std::uint32_t>(v.integer("channel_bus_bytes"));
  p.write_buffer_bytes =
      static_cast<std::uint64_t>(std::llround(v.real("write_buffer_mib") * 1048576.0));
  p.write_buffer_gbps = v.real("write_buffer_gbps");
  p.capacity_bytes =
      static_cast<std::uint64_t>(std::llround(v.real("capacity_gib") * 1073741824.0));
  p.mapping_unit_bytes = static_cast<std::uint32_t>(v.integer("mapping_unit_bytes"));
  p.pages_per_block = static_cast<std::uint32_t>(v.integer("pages_per_block"));
  p.over_provisioning = v.real("over_provisioning");
  p.gc_policy = v.string("gc_policy") == "greedy" ? GcPolicy::greedy : GcPolicy::cost_benefit;
  p.gc_foreground_free_blocks = static_cast<std::uint32_t>(v.integer("gc_foreground_free_blocks"));
  p.gc_background_free_blocks = static_cast<std::uint32_t>(v.integer("gc_background_free_blocks"));
  const std::string& pre = v.string("precondition");
  p.precondition = pre == "none"         ? Precondition::none
                   : pre == "sequential" ? Precondition::sequential
                                         : Precondition::steady_state;
  p.ftl_max_slots = static_cast<std::uint64_t>(v.integer("ftl_max_slots"));
  p.validate();
  return p;
}

}  // namespace gpunvme::flash
