#include "sim/config/json_path.h"

#include <algorithm>

#include "sim/config/config_error.h"

namespace gpunvme {

std::string child_path(const std::string& parent, const std::string& key) {
  return (parent.empty() ? std::string("$") : parent) + "." + key;
}

std::string index_path(const std::string& parent, std::size_t index) {
  return (parent.empty() ? std::string("$") : parent) + "[" + std::to_string(index) + "]";
}

std::string render_value(const nlohmann::json& value) {
  std::string text = value.dump();
  constexpr std::size_t kMax = 60;
  if (text.size() > kMax) text = text.substr(0, kMax - 3) + "...";
  return text;
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
}  // namespace

void apply_override(nlohmann::json& doc, const std::string& assignment, const std::string& origin) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ConfigError(origin, "", assignment, "expected PATH=VALUE, e.g. scenario.iodepth=64");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  nlohmann::json value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;

  std::vector<std::string> parts = split_path(path);
  nlohmann::json* node = &doc;
  std::string where;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string& part = parts[i];
    const bool last = i + 1 == parts.size();
    if (part.empty()) throw ConfigError(origin, path, text, "empty path segment");
    if (node->is_object()) {
      std::string here = child_path(where, part);
      if (!node->contains(part)) {
        if (!last) {
          std::vector<std::string> keys;
          for (auto it = node->begin(); it != node->end(); ++it) keys.push_back(it.key());
          std::string hint = nearest_name(part, keys);
          throw ConfigError(origin, here, text,
                            "no such field" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
        }
      }
      node = &(*node)[part];
      where = here;
    } else if (node->is_array()) {
      std::size_t found = node->size();
      if (is_index(part)) {
        found = std::stoul(part);
      } else {
        for (std::size_t k = 0; k < node->size(); ++k) {
          const nlohmann::json& element = (*node)[k];
          if (element.is_object() && element.value("id", std::string()) == part) found = k;
        }
      }
      if (found >= node->size()) {
        throw ConfigError(origin, where + "[" + part + "]", text,
                          "no element with that index or id (array has " +
                              std::to_string(node->size()) + " elements)");
      }
      node = &(*node)[found];
      where = index_path(where, found);
    } else {
      throw ConfigError(origin, where, text,
                        "cannot descend into a " + std::string(node->type_name()));
    }
  }
  *node = value;
}

}  // namespace gpunvme
