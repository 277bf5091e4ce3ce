#include "sim/kernel/params/resolve.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "sim/kernel/params/config_error.h"
#include "sim/kernel/params/json_path.h"

namespace gpunvme {

namespace {
std::string range_text(const ParamSpec& spec) {
  auto num = [&](double v) {
    return spec.type == ParamType::Integer || spec.type == ParamType::IntegerList
               ? fmt::format("{}", static_cast<long long>(v))
               : fmt::format("{}", v);
  };
  if (spec.min && spec.max) return fmt::format("{} to {}", num(*spec.min), num(*spec.max));
  if (spec.min) return fmt::format(">= {}", num(*spec.min));
  if (spec.max) return fmt::format("<= {}", num(*spec.max));
  return "any";
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}
}  // namespace

void check_param_value(const ParamSpec& spec, const nlohmann::json& value,
                       const ResolveContext& where) {
  const std::string path = child_path(where.path, spec.name);
  auto fail = [&](const std::string& problem) {
    throw ConfigError(where.file, path, render_value(value), problem);
  };
  // NaN and infinities (from Python, or a document built in C++) compare
  // false with every bound; they are never a valid figure.
  auto non_finite = [](const nlohmann::json& v) {
    return v.is_number_float() && !std::isfinite(v.get<double>());
  };
  if (non_finite(value)) fail("expected a finite number");
  switch (spec.type) {
    case ParamType::Integer: {
      bool integral = value.is_number_integer() ||
                      (value.is_number_float() && std::floor(value.get<double>()) ==
                                                      value.get<double>());
      if (!integral) fail(fmt::format("expected an integer ({}{})", range_text(spec),
                                      spec.unit.empty() ? "" : " " + spec.unit));
      break;
    }
    case ParamType::Real:
      if (!value.is_number()) {
        fail(fmt::format("expected a number ({}{})", range_text(spec),
                         spec.unit.empty() ? "" : " " + spec.unit));
      }
      break;
    case ParamType::Boolean:
      if (!value.is_boolean()) fail("expected true or false");
      return;
    case ParamType::String:
      if (!value.is_string()) fail("expected a string");
      return;
    case ParamType::StringList: {
      bool ok = value.is_array() && std::all_of(value.begin(), value.end(),
                                                [](const auto& v) { return v.is_string(); });
      if (!ok) fail("expected a list of strings, e.g. [\"ssd0\", \"ssd1\"]");
      // Every string list names things (nodes, ports, scheduled faults): one
      // named twice is a mistake that would otherwise build twice or be dropped.
      std::map<std::string, std::size_t> first_index;
      for (std::size_t i = 0; i < value.size(); ++i) {
        const std::string& item = value[i].get_ref<const std::string&>();
        auto [it, inserted] = first_index.emplace(item, i);
        if (!inserted) {
          throw ConfigError(where.file, fmt::format("{}[{}]", path, i), render_value(value[i]),
                            fmt::format("duplicate: {} is already at {}[{}]; each entry may "
                                        "appear once",
                                        render_value(value[i]), path, it->second));
        }
      }
      return;
    }
    case ParamType::RealList:
    case ParamType::IntegerList: {
      const bool integers = spec.type == ParamType::IntegerList;
      const char* what = integers ? "an integer" : "a number";
      if (!value.is_array()) {
        fail(fmt::format("expected a list of {}, each {}{}", integers ? "integers" : "numbers",
                         range_text(spec), spec.unit.empty() ? "" : " " + spec.unit));
      }
      for (std::size_t i = 0; i < value.size(); ++i) {
        const nlohmann::json& item = value[i];
        const bool ok = item.is_number() && !non_finite(item) &&
                        (!integers || std::floor(item.get<double>()) == item.get<double>()) &&
                        !(spec.min && item.get<double>() < *spec.min) &&
                        !(spec.max && item.get<double>() > *spec.max);
        if (!ok) {
          throw ConfigError(where.file, fmt::format("{}[{}]", path, i), render_value(item),
                            fmt::format("expected {}, {}{}", what, range_text(spec),
                                        spec.unit.empty() ? "" : " " + spec.unit));
        }
      }
      return;
    }
    case ParamType::Enum: {
      if (!value.is_string() ||
          std::find(spec.choices.begin(), spec.choices.end(), value.get<std::string>()) ==
              spec.choices.end()) {
        // A misspelt choice gets the nearest one, as a misspelt field name does.
        const std::string hint =
            value.is_string() ? nearest_name(value.get<std::string>(), spec.choices) : "";
        fail("expected one of: " + join(spec.choices) +
             (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
      }
      return;
    }
  }
  const double v = value.get<double>();
  if (!spec.allowed.empty()) {
    // Compared as doubles: a huge value must not be cast to an integer first.
    if (std::none_of(spec.allowed.begin(), spec.allowed.end(),
                     [v](std::int64_t a) { return static_cast<double>(a) == v; })) {
      std::string list;
      for (auto a : spec.allowed) list += (list.empty() ? "" : ", ") + std::to_string(a);
      fail("not allowed; expected one of: " + list);
    }
    return;
  }
  if ((spec.min && v < *spec.min) || (spec.max && v > *spec.max)) {
    fail(fmt::format("out of range; allowed {}{}", range_text(spec),
                     spec.unit.empty() ? "" : " " + spec.unit));
  }
}

ParamValues resolve_params(const ComponentSpec& spec, const nlohmann::json& given,
                           const ResolveContext& where,
                           const std::vector<std::string>& structural_keys,
                           const nlohmann::json& base) {
  if (!given.is_object()) {
    throw ConfigError(where.file, where.path, render_value(given),
                      "expected an object for " + spec.kind);
  }
  std::vector<std::string> known = structural_keys;
  for (const ParamSpec& p : spec.params) known.push_back(p.name);

  nlohmann::json values = nlohmann::json::object();
  for (auto it = given.begin(); it != given.end(); ++it) {
    if (std::find(structural_keys.begin(), structural_keys.end(), it.key()) !=
        structural_keys.end()) {
      continue;
    }
    const ParamSpec* p = spec.find(it.key());
    if (p == nullptr) {
      std::string hint = nearest_name(it.key(), known);
      throw ConfigError(where.file, child_path(where.path, it.key()), render_value(it.value()),
                        fmt::format("unknown field for {}{}", spec.kind,
                                    hint.empty() ? "; see `gpunvme describe " + spec.kind + "`"
                                                 : "; did you mean '" + hint + "'?"));
    }
    check_param_value(*p, it.value(), where);
  }
  for (const ParamSpec& p : spec.params) {
    if (given.contains(p.name)) {
      values[p.name] = given[p.name];
    } else if (base.contains(p.name)) {
      values[p.name] = base[p.name];
    } else if (!p.default_value.is_null()) {
      values[p.name] = p.default_value;
    } else {
      throw ConfigError(where.file, child_path(where.path, p.name), "",
                        fmt::format("missing required field ({}: {})", to_string(p.type), p.doc));
    }
    // Integers given as 8.0 are stored as integers so results print them as such.
    if (p.type == ParamType::Integer && values[p.name].is_number_float()) {
      values[p.name] = static_cast<std::int64_t>(values[p.name].get<double>());
    }
  }
  return ParamValues(std::move(values));
}

}  // namespace gpunvme
