#include "sim/kernel/params/json_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "sim/kernel/params/config_error.h"

namespace gpunvme {

std::string child_path(const std::string& parent, const std::string& key) {
  return (parent.empty() ? std::string("$") : parent) + "." + key;
}

std::string index_path(const std::string& parent, std::size_t index) {
  return (parent.empty() ? std::string("$") : parent) + "[" + std::to_string(index) + "]";
}

namespace {
// Appends `value` to `out` until `out` is longer than `limit`. Every level of
// nesting appends a bracket before descending, so the recursion is at most
// `limit` deep, and the walk stops after `limit` characters of output.
void render_bounded(const nlohmann::json& value, std::string& out, std::size_t limit) {
  if (out.size() > limit) return;
  auto dump_string = [&](const std::string& text) {
    // Only the part that can be shown is escaped; invalid UTF-8 becomes U+FFFD.
    const nlohmann::json head = text.substr(0, limit + 1 - std::min(limit, out.size()));
    out += head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  if (value.is_array() || value.is_object()) {
    const bool object = value.is_object();
    out += object ? '{' : '[';
    bool first = true;
    for (auto it = value.begin(); it != value.end() && out.size() <= limit; ++it) {
      if (!first) out += ',';
      first = false;
      if (object) {
        dump_string(it.key());
        out += ':';
      }
      render_bounded(it.value(), out, limit);
    }
    out += object ? '}' : ']';
  } else if (value.is_string()) {
    dump_string(value.get_ref<const std::string&>());
  } else {
    out += value.dump();
  }
}
}  // namespace

std::string render_value(const nlohmann::json& value) {
  constexpr std::size_t kMax = 60;
  std::string text;
  render_bounded(value, text, kMax);
  if (text.size() > kMax) {
    std::size_t cut = kMax - 3;
    // Never cut a UTF-8 sequence in two.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "...";
  }
  return text;
}

std::string utf8_problem(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0) {
      return fmt::format("not valid UTF-8 (byte 0x{:02X} at offset {})",
                         static_cast<unsigned char>(text[i]), i);
    }
    i += length;
  }
  return "";
}

void check_json_text(const std::string& text, const std::string& origin) {
  const std::size_t nul = text.find('\0');
  if (nul != std::string::npos) {
    throw ConfigError(origin, "", "",
                      fmt::format("not a JSON text file: it holds a NUL byte (offset {})", nul));
  }
  const std::string encoding = utf8_problem(text);
  if (!encoding.empty()) throw ConfigError(origin, "", "", "not a JSON text file: " + encoding);
  // Nesting is bounded before parsing: the parser itself copes with any
  // depth, but every later recursive walk over the document would not.
  std::size_t depth = 0, line = 1, column = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) {
        throw ConfigError(origin, "", "",
                          fmt::format("arrays and objects nest deeper than {} levels (line {}, "
                                      "column {})",
                                      kMaxJsonDepth, line, column));
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  check_json_text(text, origin);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::out_of_range& e) {
    // The parser's only range error: a number beyond a double (1e400).
    throw ConfigError(
        origin, "", "",
        std::string("a number is beyond the range of a double (about 1.8e308): ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(origin, "", "", std::string("not valid JSON: ") + e.what());
  }
}

namespace {
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + cost});
      diagonal = above;
    }
  }
  return row[b.size()];
}
}  // namespace

std::string nearest_name(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, name.size() / 3) + 1;
  for (const std::string& candidate : known) {
    std::size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

namespace {
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::string current;
  for (char c : path) {
    if (c == '.') {
      parts.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  parts.push_back(current);
  return parts;
}

bool is_index(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The index an all-digit path segment names, or nullopt when it is too large
// to name any element.
std::optional<std::size_t> parse_index(const std::string& digits) {
  std::size_t value = 0;
  for (const char c : digits) {
    const auto digit = static_cast<std::size_t>(c - '0');
    if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return value;
}
}  // namespace

namespace {
// Parses JSON without building it or throwing, and says why it failed: a
// number beyond a double is the parser's only out-of-range error.
struct JsonErrorProbe : nlohmann::json_sax<nlohmann::json> {
  bool out_of_range = false;
  std::string what;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::json::exception& error) override {
    out_of_range = dynamic_cast<const nlohmann::json::out_of_range*>(&error) != nullptr;
    what = error.what();
    return false;
  }
};
}  // namespace

std::string apply_override(nlohmann::json& doc, const std::string& assignment,
                           const std::string& origin) {
  const std::string encoding = utf8_problem(assignment);
  if (!encoding.empty()) throw ConfigError(origin, "", "", "the assignment is " + encoding);
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(origin, "", assignment, "expected PATH=VALUE, e.g. scenario.iodepth=64");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  // VALUE is JSON when it parses as JSON, else a string; JSON that is refused
  // for another reason (too deep, a number beyond a double) is an error.
  // Telling the two apart throws nothing: most values are plain strings, and
  // an exception thrown and caught for each would be the common path.
  try {
    check_json_text(text, origin);
  } catch (const ConfigError& e) {
    throw ConfigError(origin, path, "", e.problem());
  }
  nlohmann::json value;
  JsonErrorProbe probe;
  if (nlohmann::json::sax_parse(text, &probe)) {
    value = nlohmann::json::parse(text);
  } else if (probe.out_of_range) {
    throw ConfigError(origin, path, "",
                      "a number is beyond the range of a double (about 1.8e308): " + probe.what);
  } else {
    value = text;
  }
  const std::string shown = render_value(value);
  std::vector<std::string> parts = split_path(path);
  nlohmann::json* node = &doc;
  std::string where;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    if (part.empty()) throw ConfigError(origin, path, shown, "empty path segment");
    if (node->is_object()) {
      std::string here = child_path(where, part);
      if (!node->contains(part)) {
        if (!last) {
          std::vector<std::string> keys;
          for (auto it = node->begin(); it != node->end(); ++it) keys.push_back(it.key());
          std::string hint = nearest_name(part, keys);
          throw ConfigError(
              origin, here, shown,
              "no such field" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
        }
      }
      node = &(*node)[part];
      where = here;
    } else if (node->is_array()) {
      std::size_t found = node->size();
      if (is_index(part)) {
        found = parse_index(part).value_or(node->size());
      } else {
        for (std::size_t k = 0; k < node->size(); ++k) {
          const nlohmann::json& element = (*node)[k];
          if (element.is_object() && element.contains("id") && element["id"].is_string() &&
              element["id"].get_ref<const std::string&>() == part) {
            found = k;
          }
        }
      }
      if (found >= node->size()) {
        throw ConfigError(origin, where + "[" + part + "]", shown,
                          "no element with that index or id (array has " +
                              std::to_string(node->size()) + " elements)");
      }
      node = &(*node)[found];
      where = index_path(where, found);
    } else {
      throw ConfigError(origin, where, shown,
                        "cannot descend into a " + std::string(node->type_name()));
    }
  }
  *node = value;
  return where;
}

}  // namespace gpunvme
