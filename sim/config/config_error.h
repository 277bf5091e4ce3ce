// A user's configuration mistake: which file, which field (as a JSON path),
// the bad value and what is allowed. The CLI turns it into exit code 2.
#pragma once

#include <stdexcept>
#include <string>

namespace gpunvme {

class ConfigError : public std::runtime_error {
 public:
  ConfigError(std::string file, std::string path, std::string value, std::string problem)
      : std::runtime_error(format(file, path, value, problem)),
        file_(std::move(file)),
        path_(std::move(path)),
        value_(std::move(value)),
        problem_(std::move(problem)) {}

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }
  const std::string& value() const { return value_; }
  const std::string& problem() const { return problem_; }

 private:
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
