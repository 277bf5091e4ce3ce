// A user's configuration mistake: which file, which field (as a JSON path),
// the bad value and what is allowed. The CLI turns it into exit code 2.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace gpunvme {

// The length of the valid UTF-8 sequence that starts at text[i], or 0 when
// the bytes there are not valid UTF-8 (stray continuation byte, truncated or
// overlong sequence, surrogate, code point above U+10FFFF).
inline std::size_t utf8_sequence_length(const std::string& text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) return 1;
  std::size_t length = 0;
  unsigned long code = 0, least = 0;
  if ((c & 0xE0) == 0xC0) {
    length = 2, code = c & 0x1Fu, least = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3, code = c & 0x0Fu, least = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4, code = c & 0x07u, least = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80) return 0;
    code = (code << 6) | (next & 0x3Fu);
  }
  if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

// `text` with every byte that is not part of valid UTF-8, and every control
// character, written as \xNN: messages carry user bytes (a binary file's first
// line, a --set value), and must print, and convert to a Python str, whatever
// those bytes are.
inline std::string printable_text(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0 || c < 0x20 || c == 0x7F) {
      char buffer[5];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", c);
      out += buffer;
      ++i;
    } else {
      out.append(text, i, length);
      i += length;
    }
  }
  return out;
}

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string path, std::string value, std::string problem)
      : ConfigError(Parts{printable_text(file), printable_text(path), printable_text(value),
                          printable_text(problem)}) {}

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }

 private:
  struct Parts {
    std::string file, path, value, problem;
  };
  explicit ConfigError(Parts parts)
      : std::runtime_error(format(parts.file, parts.path, parts.value, parts.problem)),
        file_(std::move(parts.file)),
        path_(std::move(parts.path)),
        value_(std::move(parts.value)),
        problem_(std::move(parts.problem)) {}

  static std::string format(const std::string& file, const std::string& path,
                            const std::string& value, const std::string& problem) {
    std::string text = file.empty() ? std::string("<config>") : file;
    text += ": " + (path.empty() ? std::string("$") : path);
    if (!value.empty()) text += " = " + value;
    text += ": " + problem;
    return text;
  }

  std::string file_;
  std::string path_;
  std::string value_;
  std::string problem_;
};

}  // namespace gpunvme
