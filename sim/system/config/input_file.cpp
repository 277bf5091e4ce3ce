#include "sim/system/config/input_file.h"

#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "sim/kernel/params/config_error.h"
#include "sim/system/config/run_config.h"

namespace gpunvme {
namespace {

constexpr char kCompressedSuffix[] = ".gz";

bool starts_with_gzip_magic(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

struct GzFileCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

// Decompresses the whole gzip file `file` (every member, as gunzip does).
std::string gunzip_file(const std::string& file) {
  std::unique_ptr<gzFile_s, GzFileCloser> in(gzopen(file.c_str(), "rb"));
  if (!in) throw ConfigError(file, "", "", "cannot open compressed file");
  std::string text;
  char buffer[1 << 16];
  for (;;) {
    const int got = gzread(in.get(), buffer, sizeof buffer);
    if (got < 0) break;
    text.append(buffer, static_cast<std::size_t>(got));
    if (got == 0) break;
  }
  int error = Z_OK;
  const char* message = gzerror(in.get(), &error);
  if (error != Z_OK) {
    throw ConfigError(file, "", "",
                      std::string("not a valid gzip file: ") + (message ? message : "read error"));
  }
  return text;
}

}  // namespace

std::string stored_file_of(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error)) return path;
  const std::string compressed = path + kCompressedSuffix;
  if (std::filesystem::exists(compressed, error)) return compressed;
  return path;
}

bool input_file_exists(const std::string& path) {
  std::error_code error;
  return std::filesystem::exists(stored_file_of(path), error);
}

std::string read_input_file(const std::string& path, const std::string& what) {
  const std::string file = stored_file_of(path);
  std::error_code error;
  if (!std::filesystem::exists(file, error)) {
    throw ConfigError(
        path, "", "",
        "cannot open file: neither " + path + " nor " + path + kCompressedSuffix + " exists");
  }
  require_readable_input(file, what);
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError(file, "", "", "cannot open file");
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw ConfigError(file, "", "", "cannot read file");
  std::string bytes = buffer.str();
  if (starts_with_gzip_magic(bytes)) return gunzip_file(file);
  return bytes;
}

}  // namespace gpunvme
