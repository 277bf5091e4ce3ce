// Declared flash parameters and the SSD device profiles in configs/ssd/: every
// profile loads, every figure has a source and sits inside its declared
// bounds, and the flash side can deliver at least the datasheet read rates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "models/flash/flash_array.h"
#include "models/flash/flash_params.h"
#include "models/nvme/controller.h"

#ifndef GPUNVME_SOURCE_DIR
#error "GPUNVME_SOURCE_DIR must name the repository root"
#endif

namespace gpunvme::flash {
namespace {

const std::vector<std::string> kProfiles = {"intel-optane-p5800x", "samsung-980-pro",
                                            "samsung-pm1743", "generic-gen5-tlc"};

// Controller-level figures the NVMe controller model declares; each profile
// carries them under exactly these names.
const std::vector<std::string> kControllerParams = {"datasheet_read_iops_4k",
                                                    "datasheet_write_iops_4k",
                                                    "datasheet_seq_read_gbps",
                                                    "datasheet_seq_write_gbps",
                                                    "controller_cores",
                                                    "command_overhead_ns",
                                                    "max_io_queues",
                                                    "mqes",
                                                    "mdts",
                                                    "lba_bytes"};

nlohmann::json load_profile(const std::string& name) {
  const std::string path = std::string(GPUNVME_SOURCE_DIR) + "/configs/ssd/" + name + ".json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

bool value_fits(const ParamSpec& spec, const nlohmann::json& v) {
  if (spec.type == ParamType::Boolean) return v.is_boolean();
  if (spec.type == ParamType::String) return v.is_string();
  if (spec.type == ParamType::Enum) {
    if (!v.is_string()) return false;
    return std::find(spec.choices.begin(), spec.choices.end(), v.get<std::string>()) !=
           spec.choices.end();
  }
  if (spec.type == ParamType::Integer) {
    if (!v.is_number_integer()) return false;
    if (!spec.allowed.empty()) {
      return std::find(spec.allowed.begin(), spec.allowed.end(), v.get<std::int64_t>()) !=
             spec.allowed.end();
    }
  } else if (spec.type == ParamType::Real) {
    if (!v.is_number()) return false;
  } else {
    return false;  // no flash parameter has another type
  }
  const double x = v.get<double>();
  return (!spec.min || x >= *spec.min) && (!spec.max || x <= *spec.max);
}

// The flash parameters of a profile, resolved over the declared defaults.
ParamValues resolve(const nlohmann::json& params) {
  nlohmann::json values = flash_param_defaults().json();
  for (const ParamSpec& spec : flash_param_specs()) {
    if (params.contains(spec.name)) values[spec.name] = params[spec.name]["value"];
  }
  return ParamValues(values);
}

TEST(FlashParams, DeclarationsAreComplete) {
  std::set<std::string> names;
  for (const ParamSpec& spec : flash_param_specs()) {
    EXPECT_TRUE(names.insert(spec.name).second) << "duplicate " << spec.name;
    for (char c : spec.name) {
      EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || std::isdigit(c) || c == '_')
          << spec.name;
    }
    EXPECT_FALSE(spec.doc.empty()) << spec.name;
    EXPECT_FALSE(spec.source.empty()) << spec.name;
    EXPECT_FALSE(spec.default_value.is_null()) << spec.name;
    EXPECT_TRUE(value_fits(spec, spec.default_value)) << spec.name;
  }
  for (const char* required :
       {"media", "channels", "dies_per_channel", "planes_per_die", "page_bytes", "stripe_bytes",
        "read_us", "program_us", "erase_us", "channel_mts", "channel_bus_bytes", "write_buffer_mib",
        "capacity_gib"}) {
    EXPECT_EQ(names.count(required), 1u) << required;
  }
}

TEST(FlashParams, DefaultsMatchStructDefaults) {
  const FlashParams from_specs = flash_params_from(flash_param_defaults());
  const FlashParams plain;
  EXPECT_EQ(from_specs.media, plain.media);
  EXPECT_EQ(from_specs.channels, plain.channels);
  EXPECT_EQ(from_specs.dies_per_channel, plain.dies_per_channel);
  EXPECT_EQ(from_specs.planes_per_die, plain.planes_per_die);
  EXPECT_EQ(from_specs.page_bytes, plain.page_bytes);
  EXPECT_EQ(from_specs.stripe_bytes, plain.stripe_bytes);
  EXPECT_EQ(from_specs.independent_plane_reads, plain.independent_plane_reads);
  EXPECT_EQ(from_specs.read_ps, plain.read_ps);
  EXPECT_EQ(from_specs.program_ps, plain.program_ps);
  EXPECT_EQ(from_specs.erase_ps, plain.erase_ps);
  EXPECT_EQ(from_specs.channel_mts, plain.channel_mts);
  EXPECT_EQ(from_specs.channel_bus_bytes, plain.channel_bus_bytes);
  EXPECT_EQ(from_specs.write_buffer_bytes, plain.write_buffer_bytes);
  EXPECT_EQ(from_specs.write_buffer_gbps, plain.write_buffer_gbps);
  EXPECT_EQ(from_specs.capacity_bytes, plain.capacity_bytes);
}

TEST(FlashParams, MediaSelectsTypicalTimingUnlessGiven) {
  nlohmann::json v = flash_param_defaults().json();
  v["media"] = "nand_slc";
  FlashParams p = flash_params_from(ParamValues(v));
  EXPECT_EQ(p.read_ps, 40'000'000u);
  EXPECT_EQ(p.program_ps, 200'000'000u);
  v["read_us"] = 30.5;
  p = flash_params_from(ParamValues(v));
  EXPECT_EQ(p.read_ps, 30'500'000u);
  v["media"] = "xpoint";
  v["read_us"] = 0;
  p = flash_params_from(ParamValues(v));
  EXPECT_EQ(p.read_ps, 1'000'000u);
  EXPECT_EQ(p.erase_ps, 0u);  // written in place
  v["media"] = "nand_plc";
  EXPECT_THROW(flash_params_from(ParamValues(v)), std::invalid_argument);
}

TEST(FlashParams, RejectsBufferSmallerThanChunk) {
  FlashParams p;
  p.write_buffer_bytes = p.program_chunk_bytes() - 1;
  EXPECT_THROW(p.validate(), std::invalid_argument);
  EXPECT_THROW(FlashArray{p}, std::invalid_argument);
}

class FlashProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(FlashProfile, LoadsWithSourcesAndBounds) {
  const nlohmann::json doc = load_profile(GetParam());
  EXPECT_EQ(doc.at("kind"), "nvme_ssd");
  EXPECT_EQ(doc.at("name"), GetParam());
  EXPECT_FALSE(doc.at("doc").get<std::string>().empty());
  const nlohmann::json& params = doc.at("params");
  for (const auto& [name, entry] : params.items()) {
    ASSERT_TRUE(entry.is_object()) << name;
    EXPECT_TRUE(entry.contains("value")) << name;
    ASSERT_TRUE(entry.contains("source") && entry["source"].is_string()) << name;
    EXPECT_FALSE(entry["source"].get<std::string>().empty()) << name;
  }
  // Every flash parameter is stated explicitly, within its declared bounds.
  for (const ParamSpec& spec : flash_param_specs()) {
    ASSERT_TRUE(params.contains(spec.name)) << spec.name;
    EXPECT_TRUE(value_fits(spec, params[spec.name]["value"]))
        << spec.name << " = " << params[spec.name]["value"];
  }
  for (const std::string& name : kControllerParams) {
    ASSERT_TRUE(params.contains(name)) << name;
    EXPECT_TRUE(params[name]["value"].is_number()) << name;
    EXPECT_GT(params[name]["value"].get<double>(), 0) << name;
  }
  const int lba = params["lba_bytes"]["value"].get<int>();
  EXPECT_TRUE(lba == 512 || lba == 4096);
  EXPECT_LE(params["mdts"]["value"].get<int>(), 15);
  EXPECT_LE(params["mqes"]["value"].get<int>(), 65536);
  // Every parameter the profile names is declared by the flash back end or
  // the controller.
  std::set<std::string> known(kControllerParams.begin(), kControllerParams.end());
  for (const ParamSpec& spec : nvme::nvme_ssd_spec().params) known.insert(spec.name);
  for (const auto& [name, entry] : params.items()) EXPECT_EQ(known.count(name), 1u) << name;
}

TEST_P(FlashProfile, FlashMeetsDatasheetReads) {
  const nlohmann::json params = load_profile(GetParam()).at("params");
  const FlashArray flash(flash_params_from(resolve(params)));
  const double iops = params["datasheet_read_iops_4k"]["value"].get<double>();
  const double gbps = params["datasheet_seq_read_gbps"]["value"].get<double>();
  EXPECT_GE(flash.saturated_read_iops(4096), iops);
  EXPECT_GE(flash.saturated_read_bandwidth_gbps(), 0.95 * gbps);
  // The controller cap, cores / per-command time of a 4 KiB command, is the
  // loaded rate the profile was calibrated to (a published measurement where
  // one was found, else the datasheet IOPS).
  std::ifstream targets_file(std::string(GPUNVME_SOURCE_DIR) +
                             "/configs/measurements/published-ssd-reads.json");
  const double target = nlohmann::json::parse(targets_file)
                            .at("calibration_targets")
                            .at(GetParam())
                            .at("loaded_read_iops_4k")
                            .get<double>();
  EXPECT_LE(target, iops);
  const double cores = params["controller_cores"]["value"].get<double>();
  const double per_kib_ns = params.contains("command_ns_per_kib")
                                ? params["command_ns_per_kib"]["value"].get<double>()
                                : 0.0;
  const double overhead_ns = params["command_overhead_ns"]["value"].get<double>() + 4 * per_kib_ns;
  EXPECT_NEAR(cores / (overhead_ns * 1e-9), target, 0.001 * target);
  // Unloaded 4 KiB read on the flash: tR plus the channel time of the bytes,
  // the bytes spread over the channels a read touches.
  const FlashParams& p = flash.params();
  FlashArray fresh(p);
  const std::uint64_t segments = (4096 + p.stripe_bytes - 1) / p.stripe_bytes;
  const std::uint64_t per_channel = (segments + p.channels - 1) / p.channels;
  const double seg_bytes = std::min<double>(4096, p.stripe_bytes);
  EXPECT_NEAR(
      static_cast<double>(fresh.read(0, 0, 4096)),
      static_cast<double>(p.read_ps) + per_channel * seg_bytes * 1e12 / p.channel_bytes_per_s(),
      2.0);
}

INSTANTIATE_TEST_SUITE_P(All, FlashProfile, ::testing::ValuesIn(kProfiles), [](const auto& info) {
  std::string s = info.param;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
});

}  // namespace
}  // namespace gpunvme::flash
