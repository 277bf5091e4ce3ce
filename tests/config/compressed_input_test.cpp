// Measurement files stored gzip-compressed (NAME.json.gz) are read under the
// name everything cites (NAME.json); the oracle is the same document stored
// plain.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/kernel/params/config_error.h"
#include "sim/system/config/input_file.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {
namespace {

namespace fs = std::filesystem;

const char* const kCompressedDocument =
    R"({"device": {"name": "probe"}, "cases": [{"warps": 32, "kiops": 812.5}, {"warps": 64}]})";

fs::path fresh_compressed_input_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gpunvme_compressed_input_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write_plain(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out << bytes;
}

void write_gzip(const fs::path& file, const std::string& text) {
  gzFile out = gzopen(file.string().c_str(), "wb9");
  ASSERT_NE(out, nullptr) << file;
  ASSERT_EQ(gzwrite(out, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(out), Z_OK);
}

std::string bytes_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ConfigError error_reading(const std::string& path) {
  try {
    read_json_file(path);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no ConfigError reading " << path;
  return ConfigError("", "", "", "");
}

TEST(CompressedInput, CompressedFileIsReadUnderItsUncompressedName) {
  const fs::path dir = fresh_compressed_input_dir("read");
  write_plain(dir / "plain.json", kCompressedDocument);
  write_gzip(dir / "runs.json.gz", kCompressedDocument);
  ASSERT_FALSE(fs::exists(dir / "runs.json"));
  EXPECT_EQ(stored_file_of((dir / "runs.json").string()), (dir / "runs.json.gz").string());
  EXPECT_TRUE(input_file_exists((dir / "runs.json").string()));
  EXPECT_FALSE(input_file_exists((dir / "absent.json").string()));
  const nlohmann::json plain = read_json_file((dir / "plain.json").string());
  EXPECT_EQ(read_json_file((dir / "runs.json").string()), plain);
  EXPECT_EQ(read_json_file((dir / "runs.json.gz").string()), plain);
  EXPECT_EQ(plain.at("cases").at(0).at("kiops"), 812.5);
  // Gzip bytes under a plain name are decompressed too.
  write_plain(dir / "renamed.json", bytes_of(dir / "runs.json.gz"));
  EXPECT_EQ(read_json_file((dir / "renamed.json").string()), plain);
  // Where both exist, the plain file is the one read.
  write_plain(dir / "runs.json", R"({"plain": true})");
  EXPECT_EQ(read_json_file((dir / "runs.json").string()), nlohmann::json({{"plain", true}}));
  fs::remove_all(dir);
}

TEST(CompressedInput, CorruptCompressedFileIsAnErrorNamingIt) {
  const fs::path dir = fresh_compressed_input_dir("corrupt");
  write_gzip(dir / "whole.json.gz", kCompressedDocument);
  const std::string whole = bytes_of(dir / "whole.json.gz");
  // Cut short: the gzip trailer (length, CRC) and part of the data are missing.
  write_plain(dir / "cut.json.gz", whole.substr(0, whole.size() / 2));
  ConfigError cut = error_reading((dir / "cut.json").string());
  EXPECT_EQ(cut.file(), (dir / "cut.json.gz").string());
  EXPECT_NE(cut.problem().find("not a valid gzip file"), std::string::npos) << cut.what();
  // The gzip magic bytes followed by bytes that are no deflate stream.
  write_plain(dir / "garbage.json.gz", std::string("\x1f\x8b\x08\x00", 4) + "not deflate data");
  ConfigError garbage = error_reading((dir / "garbage.json").string());
  EXPECT_EQ(garbage.file(), (dir / "garbage.json.gz").string());
  EXPECT_NE(garbage.problem().find("not a valid gzip file"), std::string::npos) << garbage.what();
  // Decompressed bytes that are not JSON: the syntax error names the .gz file.
  write_gzip(dir / "text.json.gz", "{\"cases\": [");
  ConfigError text = error_reading((dir / "text.json").string());
  EXPECT_EQ(text.file(), (dir / "text.json.gz").string()) << text.what();
  fs::remove_all(dir);
}

TEST(CompressedInput, MissingFileNamesBothNames) {
  const fs::path dir = fresh_compressed_input_dir("missing");
  const std::string path = (dir / "absent.json").string();
  ConfigError e = error_reading(path);
  EXPECT_EQ(e.file(), path);
  EXPECT_NE(e.problem().find("cannot open file"), std::string::npos) << e.what();
  EXPECT_NE(e.problem().find(path + ".gz"), std::string::npos) << e.what();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gpunvme
