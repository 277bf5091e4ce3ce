#include "models/flash/flash_params.h"

#include <cmath>
#include <stdexcept>

namespace gpunvme::flash {

namespace {

constexpr double kPsPerUs = 1e6;

std::uint64_t us_to_ps(double us) {
  return static_cast<std::uint64_t>(std::llround(us * kPsPerUs));
}

}  // namespace

const char* to_string(Media media) { return enum_name(media).c_str(); }

const char* to_string(Precondition precondition) { return enum_name(precondition).c_str(); }

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
  if (auto media = enum_from_name<Media>(name)) return *media;
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

FlashParamValues FlashParamValues::from(const ParamValues& values) {
  FlashParamValues out;
#define GPUNVME_PARAM GPUNVME_PARAM_READ
#include "models/flash/flash_params.def"
#undef GPUNVME_PARAM
  return out;
}

const std::vector<ParamSpec>& flash_param_specs() {
  static const std::vector<ParamSpec> specs = {
#define GPUNVME_PARAM GPUNVME_PARAM_SPEC
#include "models/flash/flash_params.def"
#undef GPUNVME_PARAM
  };
  return specs;
}

ParamValues flash_param_defaults() {
  nlohmann::json values = nlohmann::json::object();
  for (const ParamSpec& spec : flash_param_specs()) values[spec.name] = spec.default_value;
  return ParamValues(std::move(values));
}

FlashParams flash_params_from(const ParamValues& values) {
  const FlashParamValues v = FlashParamValues::from(values);
  FlashParams p;
  p.media = v.media;
  p.channels = static_cast<std::uint32_t>(v.channels);
  p.dies_per_channel = static_cast<std::uint32_t>(v.dies_per_channel);
  p.planes_per_die = static_cast<std::uint32_t>(v.planes_per_die);
  p.page_bytes = static_cast<std::uint32_t>(v.page_bytes);
  p.stripe_bytes = static_cast<std::uint32_t>(v.stripe_bytes);
  p.independent_plane_reads = v.independent_plane_reads;

  // Array times stay in us in FlashParamValues: a 0 selects the medium's
  // typical figure, and they round to ps as the flash model always has.
  const MediaTiming typical = typical_timing(p.media);
  p.read_ps = us_to_ps(v.read_us > 0 ? v.read_us : typical.read_us);
  p.program_ps = us_to_ps(v.program_us > 0 ? v.program_us : typical.program_us);
  p.erase_ps = us_to_ps(v.erase_us > 0 ? v.erase_us : typical.erase_us);

  p.channel_mts = v.channel_mts;
  p.channel_bus_bytes = static_cast<std::uint32_t>(v.channel_bus_bytes);
  p.write_buffer_bytes = static_cast<std::uint64_t>(std::llround(v.write_buffer_mib * 1048576.0));
  p.write_buffer_gbps = v.write_buffer_gbps;
  p.capacity_bytes = static_cast<std::uint64_t>(std::llround(v.capacity_gib * 1073741824.0));
  p.mapping_unit_bytes = static_cast<std::uint32_t>(v.mapping_unit_bytes);
  p.pages_per_block = static_cast<std::uint32_t>(v.pages_per_block);
  p.over_provisioning = v.over_provisioning;
  p.gc_policy = v.gc_policy;
  p.gc_foreground_free_blocks = static_cast<std::uint32_t>(v.gc_foreground_free_blocks);
  p.gc_background_free_blocks = static_cast<std::uint32_t>(v.gc_background_free_blocks);
  p.precondition = v.precondition;
  p.ftl_max_slots = static_cast<std::uint64_t>(v.ftl_max_slots);
  p.validate();
  return p;
}

}  // namespace gpunvme::flash
