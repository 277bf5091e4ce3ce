#pragma once

#include <string>

namespace gpunvme {

// Large measurement files are stored gzip-compressed as NAME.json.gz while
// everything cites them as NAME.json (configs/measurements/README.md). The
// readers below accept either name.

// The file that holds `path`'s bytes: `path` itself when it exists, else
// `path`.gz when only that exists, else `path` (for the caller's error).
std::string stored_file_of(const std::string& path);

// True when `path` or `path`.gz exists.
bool input_file_exists(const std::string& path);

// The bytes of `path` (or of `path`.gz when only that exists), decompressed
// when the file starts with the gzip magic bytes. ConfigError naming the file
// (both names when neither exists) when it cannot be opened, read or
// decompressed; `what` names the kind of file expected ("JSON file").
std::string read_input_file(const std::string& path, const std::string& what);

}  // namespace gpunvme
