// Whole-file reads shared by every component that loads a small input file (JSON, tokens, PEM).
#ifndef SPECPLAN_UTIL_FILE_H_
#define SPECPLAN_UTIL_FILE_H_

#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace specplan {

// The file's bytes; NOT_FOUND "<path>: cannot open file" when it cannot be opened.
inline absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_FILE_H_
