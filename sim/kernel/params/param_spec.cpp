#include "sim/kernel/params/param_spec.h"

#include <cmath>
#include <stdexcept>

#include "sim/kernel/params/param_table.h"

namespace gpunvme {

namespace {
ParamSpec make(std::string name, ParamType type, std::string unit, nlohmann::json def,
               std::string doc, std::string source) {
  ParamSpec spec;
  spec.name = std::move(name);
  spec.type = type;
  spec.unit = std::move(unit);
  spec.default_value = std::move(def);
  spec.doc = std::move(doc);
  spec.source = std::move(source);
  return spec;
}
}  // namespace

ParamSpec integer_param(std::string name, std::string unit, std::int64_t def, double min,
                        double max, std::string doc, std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::Integer, std::move(unit), def,
                        std::move(doc), std::move(source));
  spec.min = min;
  spec.max = max;
  return spec;
}

ParamSpec real_param(std::string name, std::string unit, double def, double min, double max,
                     std::string doc, std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::Real, std::move(unit), def, std::move(doc),
                        std::move(source));
  spec.min = min;
  spec.max = max;
  return spec;
}

ParamSpec bool_param(std::string name, bool def, std::string doc, std::string source) {
  return make(std::move(name), ParamType::Boolean, "", def, std::move(doc), std::move(source));
}

ParamSpec enum_param(std::string name, std::string def, std::vector<std::string> choices,
                     std::string doc, std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::Enum, "", std::move(def), std::move(doc),
                        std::move(source));
  spec.choices = std::move(choices);
  return spec;
}

ParamSpec string_param(std::string name, std::string def, std::string doc, std::string source) {
  return make(std::move(name), ParamType::String, "", std::move(def), std::move(doc),
              std::move(source));
}

ParamSpec real_list_param(std::string name, std::string unit, std::vector<double> def, double min,
                          double max, std::string doc, std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::RealList, std::move(unit), def, std::move(doc),
                        std::move(source));
  spec.min = min;
  spec.max = max;
  return spec;
}

ParamSpec integer_list_param(std::string name, std::string unit, std::vector<std::int64_t> def,
                             double min, double max, std::string doc, std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::IntegerList, std::move(unit), def,
                        std::move(doc), std::move(source));
  spec.min = min;
  spec.max = max;
  return spec;
}

ParamSpec string_list_param(std::string name, std::vector<std::string> def, std::string doc,
                            std::string source) {
  return make(std::move(name), ParamType::StringList, "", def, std::move(doc), std::move(source));
}

ParamSpec integer_choice_param(std::string name, std::string unit, std::int64_t def,
                               std::vector<std::int64_t> allowed, std::string doc,
                               std::string source) {
  ParamSpec spec = make(std::move(name), ParamType::Integer, std::move(unit), def,
                        std::move(doc), std::move(source));
  spec.allowed = std::move(allowed);
  return spec;
}

std::string described_doc(const ParamSpec& spec) {
  if (spec.kinds.empty()) return spec.doc;
  std::string prefix;
  for (const std::string& kind : spec.kinds) prefix += (prefix.empty() ? "" : ", ") + kind;
  // With several kinds a comma would read as one more kind.
  if (!spec.condition.empty()) prefix += (spec.kinds.size() > 1 ? "; " : ", ") + spec.condition;
  return "(" + prefix + ") " + spec.doc;
}

const ParamSpec* ComponentSpec::find(const std::string& name) const {
  for (const ParamSpec& p : params) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

const nlohmann::json& ParamValues::at(const std::string& name) const {
  auto it = values_.find(name);
  // Values are resolved against the declaration before a model sees them, so a
  // missing name is a programming error in the model, not a user error.
  if (it == values_.end()) throw std::logic_error("parameter not resolved: " + name);
  return *it;
}

std::int64_t ParamValues::integer(const std::string& name) const {
  return at(name).get<std::int64_t>();
}
double ParamValues::real(const std::string& name) const { return at(name).get<double>(); }
bool ParamValues::boolean(const std::string& name) const { return at(name).get<bool>(); }
const std::string& ParamValues::string(const std::string& name) const {
  return at(name).get_ref<const std::string&>();
}

std::vector<std::string> ParamValues::string_list(const std::string& name) const {
  return at(name).get<std::vector<std::string>>();
}

std::vector<double> ParamValues::real_list(const std::string& name) const {
  return at(name).get<std::vector<double>>();
}

std::vector<std::int64_t> ParamValues::integer_list(const std::string& name) const {
  return param_decl::to_integer_list(at(name));
}

namespace param_decl {
std::vector<std::int64_t> to_integer_list(const nlohmann::json& list) {
  std::vector<std::int64_t> values;
  for (const nlohmann::json& v : list) values.push_back(std::llround(v.get<double>()));
  return values;
}
}  // namespace param_decl

const char* to_string(ParamType type) {
  switch (type) {
    case ParamType::Integer: return "integer";
    case ParamType::Real: return "number";
    case ParamType::Boolean: return "boolean";
    case ParamType::String: return "string";
    case ParamType::Enum: return "enum";
    case ParamType::StringList: return "list of strings";
    case ParamType::RealList: return "list of numbers";
    case ParamType::IntegerList: return "list of integers";
  }
  return "?";
}

}  // namespace gpunvme
