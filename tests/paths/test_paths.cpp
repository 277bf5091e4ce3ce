#include "tests/paths/test_paths.h"

#if !defined(GPUNVME_CLI_PATH) || !defined(GPUNVME_SOURCE_DIR_PATH)
#error "GPUNVME_CLI_PATH and GPUNVME_SOURCE_DIR_PATH must be set (tests/CMakeLists.txt)"
#endif

namespace gpunvme::test_paths {

const char* cli() { return GPUNVME_CLI_PATH; }
const char* source_dir() { return GPUNVME_SOURCE_DIR_PATH; }

}  // namespace gpunvme::test_paths
