// Where the test programs find the checkout and the build tree.
//
// The two absolute paths are compiled into one translation unit only (test_paths.cc, CMake target
// specplan_test_paths), never into a test's own objects: those stay byte-for-byte the same in
// every clone, so ccache serves them to a checkout at another path (CI's clean clone reuses the
// objects of earlier builds; docs/index.md "Build and CI").
#pragma once

#include <string>

namespace specplan::test_paths {

// The repository root, e.g. SourceDir() + "/calib".
const std::string& SourceDir();
// The CMake build directory the test was built in, e.g. BinaryDir() + "/cli/specplan".
const std::string& BinaryDir();

}  // namespace specplan::test_paths
