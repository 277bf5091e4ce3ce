// Declared parameters: each component states its parameters once (name, type,
// unit, default, one line of doc, and where the default comes from). The
// config loader validates against these declarations, `gpunvme describe`
// prints them, and every run writes the resolved values into its result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpunvme {

enum class ParamType { Integer, Real, Boolean, String, Enum, StringList, RealList, IntegerList };

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::Real;
  std::string unit;  // "ns", "B", "GT/s", "" for dimensionless
  nlohmann::json default_value;  // null means the parameter is required
  std::string doc;
  std::string source;  // datasheet, paper, seed or our measurement
  std::optional<double> min;  // inclusive bounds for Integer and Real
  std::optional<double> max;
  std::vector<std::string> choices;  // for Enum
  std::vector<std::int64_t> allowed;  // for Integer: a discrete set, e.g. link widths
  // Scenario fields: the kinds that use this field (empty: every kind). The
  // resolver refuses the field in a scenario of another kind and drops it
  // from the resolved scenario; `describe` shows the kinds before the doc.
  std::vector<std::string> kinds;
  std::string condition;  // what narrows the field further ("rw = randrw"), for `describe`
};

// The doc line as `describe` prints it: a kind-specific field's kinds and
// condition first, "(microbenchmark, rw = randrw) percentage of ...".
std::string described_doc(const ParamSpec& spec);

// Fluent helpers keep declaration tables short and readable.
ParamSpec integer_param(std::string name, std::string unit, std::int64_t def, double min,
                        double max, std::string doc, std::string source);
ParamSpec real_param(std::string name, std::string unit, double def, double min, double max,
                     std::string doc, std::string source);
ParamSpec bool_param(std::string name, bool def, std::string doc, std::string source);
ParamSpec enum_param(std::string name, std::string def, std::vector<std::string> choices,
                     std::string doc, std::string source);
ParamSpec string_param(std::string name, std::string def, std::string doc, std::string source);
ParamSpec string_list_param(std::string name, std::vector<std::string> def, std::string doc,
                            std::string source);
// A list of numbers, each within [min, max].
ParamSpec real_list_param(std::string name, std::string unit, std::vector<double> def, double min,
                          double max, std::string doc, std::string source);
// A list of integers, each within [min, max].
ParamSpec integer_list_param(std::string name, std::string unit, std::vector<std::int64_t> def,
                             double min, double max, std::string doc, std::string source);
// Integer restricted to a discrete set (e.g. PCIe widths 1, 2, 4, 8, 16).
ParamSpec integer_choice_param(std::string name, std::string unit, std::int64_t def,
                               std::vector<std::int64_t> allowed, std::string doc,
                               std::string source);

// A component kind (gpu, nvme_ssd, switch, ...) and its parameter table.
struct ComponentSpec {
  std::string kind;
  std::string doc;
  std::vector<ParamSpec> params;

  const ParamSpec* find(const std::string& name) const;
};

// Resolved parameter values of one component instance, after validation.
class ParamValues {
 public:
  ParamValues() = default;
  explicit ParamValues(nlohmann::json values) : values_(std::move(values)) {}

  std::int64_t integer(const std::string& name) const;
  double real(const std::string& name) const;
  bool boolean(const std::string& name) const;
  const std::string& string(const std::string& name) const;
  std::vector<std::string> string_list(const std::string& name) const;
  std::vector<double> real_list(const std::string& name) const;
  std::vector<std::int64_t> integer_list(const std::string& name) const;
  const nlohmann::json& json() const { return values_; }

 private:
  const nlohmann::json& at(const std::string& name) const;
  nlohmann::json values_ = nlohmann::json::object();
};

const char* to_string(ParamType type);

}  // namespace gpunvme
