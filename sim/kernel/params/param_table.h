// Parameter tables: each component writes its parameters once, in a table
// file (`*_params.def`) of entries
//
//   GPUNVME_PARAM(submit_ns, duration_ns(550.0, 0.0, 1e6, "doc", "source"))
//
// and includes that file three times with GPUNVME_PARAM defined as one of the
// macros below: GPUNVME_PARAM_MEMBER inside its typed struct (one member per
// parameter, of the type the declaration gives), GPUNVME_PARAM_SPEC inside the
// braces of its ComponentSpec's parameter list (what `check`, `describe` and
// the resolver use), and GPUNVME_PARAM_READ in the struct's `from` function
// (`out` the struct, `values` the resolved ParamValues). The name is the
// member's, so a misspelt parameter is a compile error, and units are
// converted once, when the struct is filled.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/kernel/params/enum_names.h"
#include "sim/kernel/params/param_spec.h"
#include "sim/kernel/time.h"

namespace gpunvme::param_decl {

// One declared parameter before it is named: its ComponentSpec entry and how
// a resolved JSON value becomes the typed member.
template <typename T>
class Decl {
 public:
  using value_type = T;
  using Convert = T (*)(const nlohmann::json&);

  Decl(ParamSpec spec, Convert convert) : spec_(std::move(spec)), convert_(convert) {}

  // A scenario field that only the named kinds use (check refuses it in any
  // other); `condition` narrows it further for `describe` ("rw = randrw").
  Decl for_kinds(std::vector<std::string> kinds, std::string condition = "") && {
    spec_.kinds = std::move(kinds);
    spec_.condition = std::move(condition);
    return std::move(*this);
  }

  ParamSpec spec(const char* name) const {
    ParamSpec named = spec_;
    named.name = name;
    return named;
  }

  // The resolved value; a field the resolved values do not hold (a scenario
  // field of another kind) reads as its declared default.
  T read(const ParamValues& values, const char* name) const {
    const nlohmann::json& all = values.json();
    auto it = all.find(name);
    if (it != all.end()) return convert_(*it);
    if (spec_.default_value.is_null()) {
      throw std::logic_error(std::string("parameter not resolved: ") + name);
    }
    return convert_(spec_.default_value);
  }

 private:
  ParamSpec spec_;
  Convert convert_;
};

inline std::int64_t to_integer(const nlohmann::json& v) { return v.get<std::int64_t>(); }
inline double to_real(const nlohmann::json& v) { return v.get<double>(); }
inline bool to_boolean(const nlohmann::json& v) { return v.get<bool>(); }
inline std::string to_text(const nlohmann::json& v) { return v.get<std::string>(); }
// Durations are declared in ns or us and kept in picoseconds, rounded as
// sim/kernel/time.h rounds.
inline Picoseconds ns_to_picoseconds(const nlohmann::json& v) { return ns_to_ps(v.get<double>()); }
inline Picoseconds us_to_picoseconds(const nlohmann::json& v) { return us_to_ps(v.get<double>()); }
inline std::vector<std::string> to_text_list(const nlohmann::json& v) {
  return v.get<std::vector<std::string>>();
}
inline std::vector<double> to_real_list(const nlohmann::json& v) {
  return v.get<std::vector<double>>();
}
std::vector<std::int64_t> to_integer_list(const nlohmann::json& v);

template <typename Enum>
Enum to_enum(const nlohmann::json& v) {
  auto value = enum_from_name<Enum>(v.get_ref<const std::string&>());
  // The resolver checked the name against the declared choices.
  if (!value) throw std::invalid_argument("unchecked enum value: " + v.get<std::string>());
  return *value;
}

inline Decl<std::int64_t> integer(std::string unit, std::int64_t def, double min, double max,
                                  std::string doc, std::string source) {
  return {integer_param("", std::move(unit), def, min, max, std::move(doc), std::move(source)),
          to_integer};
}

// An integer restricted to a discrete set (e.g. PCIe widths 1, 2, 4, 8, 16).
inline Decl<std::int64_t> integer_choice(std::string unit, std::int64_t def,
                                         std::vector<std::int64_t> allowed, std::string doc,
                                         std::string source) {
  return {integer_choice_param("", std::move(unit), def, std::move(allowed), std::move(doc),
                               std::move(source)),
          to_integer};
}

inline Decl<double> real(std::string unit, double def, double min, double max, std::string doc,
                         std::string source) {
  return {real_param("", std::move(unit), def, min, max, std::move(doc), std::move(source)),
          to_real};
}

// A time declared in nanoseconds, read as Picoseconds.
inline Decl<Picoseconds> duration_ns(double def, double min, double max, std::string doc,
                                     std::string source) {
  return {real_param("", "ns", def, min, max, std::move(doc), std::move(source)),
          ns_to_picoseconds};
}

// A time declared in microseconds, read as Picoseconds.
inline Decl<Picoseconds> duration_us(double def, double min, double max, std::string doc,
                                     std::string source) {
  return {real_param("", "us", def, min, max, std::move(doc), std::move(source)),
          us_to_picoseconds};
}

inline Decl<bool> boolean(bool def, std::string doc, std::string source) {
  return {bool_param("", def, std::move(doc), std::move(source)), to_boolean};
}

inline Decl<std::string> text(std::string def, std::string doc, std::string source) {
  return {string_param("", std::move(def), std::move(doc), std::move(source)), to_text};
}

// One of an enum's names, read as the enum; the choices are its name table.
template <typename Enum>
Decl<Enum> choice(Enum def, std::string doc, std::string source) {
  return {enum_param("", enum_name(def), enum_choices<Enum>(), std::move(doc), std::move(source)),
          to_enum<Enum>};
}

// One of a list of names kept as text: for names whose parsing lives with the
// code that uses them (the GPU-side strategy names, in sim/core/algo).
inline Decl<std::string> text_choice(std::string def, std::vector<std::string> choices,
                                     std::string doc, std::string source) {
  return {enum_param("", std::move(def), std::move(choices), std::move(doc), std::move(source)),
          to_text};
}

inline Decl<std::vector<std::string>> text_list(std::vector<std::string> def, std::string doc,
                                                std::string source) {
  return {string_list_param("", std::move(def), std::move(doc), std::move(source)), to_text_list};
}

inline Decl<std::vector<double>> real_list(std::string unit, std::vector<double> def, double min,
                                           double max, std::string doc, std::string source) {
  return {real_list_param("", std::move(unit), std::move(def), min, max, std::move(doc),
                          std::move(source)),
          to_real_list};
}

inline Decl<std::vector<std::int64_t>> integer_list(std::string unit, std::vector<std::int64_t> def,
                                                    double min, double max, std::string doc,
                                                    std::string source) {
  return {integer_list_param("", std::move(unit), std::move(def), min, max, std::move(doc),
                             std::move(source)),
          to_integer_list};
}

}  // namespace gpunvme::param_decl

// The three expansions of a table entry (see the top of this file).
#define GPUNVME_PARAM_MEMBER(name, ...) \
  decltype(::gpunvme::param_decl::__VA_ARGS__)::value_type name{};
#define GPUNVME_PARAM_SPEC(name, ...) (::gpunvme::param_decl::__VA_ARGS__).spec(#name),
// The declaration is built once (a static), so filling a struct costs one
// look-up and conversion per parameter.
#define GPUNVME_PARAM_READ(name, ...)                                       \
  {                                                                         \
    static const auto name##_declared = ::gpunvme::param_decl::__VA_ARGS__; \
    out.name = name##_declared.read(values, #name);                         \
  }
