// One name table per enum: GPUNVME_ENUM(Name, a, b, c) declares `enum class
// Name { a, b, c }` and, from the same list, the names configuration files,
// results and `gpunvme describe` use for its values. An enumerator that would
// be a C++ keyword takes a trailing underscore (`auto_`), which its name drops.
// Header-only and free of the simulation kernel, so every layer can use it.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpunvme {

// The names of one enum's values, in declaration order, split from the
// stringized enumerator list ("a, b, c").
class EnumNameTable {
 public:
  explicit EnumNameTable(std::string_view list) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find(',', start);
      if (end == std::string_view::npos) end = list.size();
      std::string_view name = list.substr(start, end - start);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (!name.empty() && name.back() == '_') name.remove_suffix(1);
      names_.emplace_back(name);
      start = end + 1;
    }
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// The name of `value`, as configuration files and results spell it.
template <typename Enum>
const std::string& enum_name(Enum value) {
  const auto& names = enum_names(Enum{}).names();
  const auto index = static_cast<std::size_t>(value);
  if (index >= names.size()) throw std::logic_error("enum value without a name");
  return names[index];
}

// The value named `name`, or nothing when no value has that name.
template <typename Enum>
std::optional<Enum> enum_from_name(std::string_view name) {
  const auto& names = enum_names(Enum{}).names();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
  }
  return std::nullopt;
}

// Every name of the enum, in declaration order (a parameter's choices).
template <typename Enum>
const std::vector<std::string>& enum_choices() {
  return enum_names(Enum{}).names();
}

}  // namespace gpunvme

// Declares the enum and its name table in the current namespace, where
// argument-dependent lookup finds `enum_names` for the templates above.
#define GPUNVME_ENUM(Name, ...)                                \
  enum class Name { __VA_ARGS__ };                             \
  inline const ::gpunvme::EnumNameTable& enum_names(Name) {    \
    static const ::gpunvme::EnumNameTable table(#__VA_ARGS__); \
    return table;                                              \
  }
