#include "tests/paths/test_paths.h"

namespace specplan::test_paths {

const std::string& SourceDir() {
  static const std::string dir = SPECPLAN_TEST_SOURCE_DIR;
  return dir;
}

const std::string& BinaryDir() {
  static const std::string dir = SPECPLAN_TEST_BINARY_DIR;
  return dir;
}

}  // namespace specplan::test_paths
