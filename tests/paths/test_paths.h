// Where the test programs find the gpunvme program and the repository root.
//
// CMake names both for each build directory, but only in test_paths.cpp's
// compile: the test programs use GPUNVME_CLI and GPUNVME_SOURCE_DIR, which
// tests/CMakeLists.txt defines as calls of these functions (and includes this
// header for). The test programs' objects then do not depend on where the
// checkout or the build directory is, so a compiler cache serves them to a
// fresh clone of the same sources.
#pragma once

namespace gpunvme::test_paths {

// The gpunvme program of this build.
const char* cli();
// The repository root the build was configured from.
const char* source_dir();

}  // namespace gpunvme::test_paths
