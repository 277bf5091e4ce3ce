// JSON paths in error messages ($.nodes[2].channels) and the --set override
// syntax (topology.nodes.ssd0.channels=8).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpunvme {

std::string child_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, std::size_t index);

// Short rendering of a value for messages; long values are elided.
std::string render_value(const nlohmann::json& value);

// The known name closest to `name` by edit distance, or "" when none is close.
std::string nearest_name(const std::string& name, const std::vector<std::string>& known);

// Applies one `PATH=VALUE` override to `doc`. Path segments are separated by
// dots; on an array a segment is an index or the `id` of an element. VALUE is
// parsed as JSON and falls back to a string. The field must already exist
// unless its parent is an object (new keys are then validated by the schema).
// Throws ConfigError naming `origin` (e.g. "--set") on a bad path.
void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& origin);

}  // namespace gpunvme
