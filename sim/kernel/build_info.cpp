#include "sim/kernel/build_info.h"

// Both generated in the build tree (CMakeLists.txt): the version at configure
// time, the commit at every build. Only this file includes them, so a new
// commit recompiles one file.
#include "gpunvme_commit.h"
#include "gpunvme_version.h"

namespace gpunvme {

const std::string& build_version() {
  static const std::string version = GPUNVME_VERSION;
  return version;
}

const std::string& build_commit() {
  static const std::string commit = GPUNVME_COMMIT;
  return commit;
}

nlohmann::json build_info_json() {
  return {{"version", build_version()}, {"commit", build_commit()}};
}

}  // namespace gpunvme
