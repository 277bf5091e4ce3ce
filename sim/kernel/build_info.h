// Which build of gpunvme is running: the release version (project(VERSION) in
// CMakeLists.txt) and the git commit it was built from (`git describe --always
// --dirty`, "unknown" outside a git checkout). Every result, sweep row, trace
// and report carries them, so that a number can be traced to the code that
// produced it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace gpunvme {

const std::string& build_version();
const std::string& build_commit();

// {"version": ..., "commit": ...}, the "gpunvme" block of results.
nlohmann::json build_info_json();

}  // namespace gpunvme
