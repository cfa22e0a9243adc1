// The line-by-line read of a file of one record per line (JSONL): what the readers of such files
// (`specplan plan-batch --requests`, specplan-bench --prompts) share.
#ifndef SPECPLAN_UTIL_LINES_H_
#define SPECPLAN_UTIL_LINES_H_

#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace specplan {

// Calls fn(line, line_no) for each line of the file at `path` that is not blank (nothing but
// spaces, tabs and a CR), line_no counting every line from 1; stops at the first error fn returns
// and returns it. NOT_FOUND "<path>: cannot open" when the file cannot be opened.
template <class Fn>
absl::Status ForEachNonBlankLine(const std::string& path, Fn fn) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (absl::Status st = fn(line, line_no); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_LINES_H_
