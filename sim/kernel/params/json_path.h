// JSON paths in error messages ($.nodes[2].channels), the --set override
// syntax (topology.nodes.ssd0.channels=8), and the parsing of JSON text from
// users: every failure is a ConfigError.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpunvme {

// The deepest nesting of arrays and objects accepted in any JSON input
// (configuration files, --set values, budgets, Python documents). Real
// configurations nest fewer than ten levels; the bound keeps every recursive
// walk over a document (copies, comparisons, dumps) far from the stack's end.
inline constexpr std::size_t kMaxJsonDepth = 256;

std::string child_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, std::size_t index);

// Short rendering of a value for messages; long values are elided. Its time
// and stack use are bounded by the rendering's length, not by the value's
// size or depth.
std::string render_value(const nlohmann::json& value);

// The known name closest to `name` by edit distance, or "" when none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

// ConfigError naming `origin` when the text holds a NUL byte (a binary
// file), is not valid UTF-8 or nests deeper than kMaxJsonDepth: what every
// JSON input is checked for before it is parsed.
void check_json_text(const std::string& text, const std::string& origin);

// Parses JSON text. ConfigError naming `origin` when check_json_text refuses
// it, when it is not valid JSON or when it holds a number beyond a double's
// range.
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

// Why `text` is not valid UTF-8 ("" when it is).
std::string utf8_problem(const std::string& text);

// Applies one `PATH=VALUE` override to `doc`. Path segments are separated by
// dots; on an array a segment is an index or the `id` of an element. VALUE is
// parsed as JSON and falls back to a string. The field must already exist
// unless its parent is an object (new keys are then validated by the schema).
// Throws ConfigError naming `origin` (e.g. "--set") on a bad path. Returns
// the JSON path of the field it set, elements by index (`$.nodes[5].mqes`),
// as validation errors name it.
std::string apply_override(nlohmann::json& doc, const std::string& assignment,
                           const std::string& origin);

}  // namespace gpunvme
