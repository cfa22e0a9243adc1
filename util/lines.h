// The line-by-line read of text of one record per line (JSONL): what the readers of such input
// (whatif traces, `specplan plan-batch --requests`, specplan-bench --prompts) share.
#ifndef SPECPLAN_UTIL_LINES_H_
#define SPECPLAN_UTIL_LINES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/file.h"

namespace specplan {

// Calls fn(line, line_no) for each line of `text` that is not blank (nothing but spaces and
// tabs), without its '\n' and a CR before it; line_no counts every line from 1. Stops at the first
// error fn returns and returns it.
template <class Fn>
absl::Status ForEachNonBlankLineOf(std::string_view text, Fn fn) {
  size_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (absl::Status st = fn(line, line_no); !st.ok()) return st;
  }
  return absl::OkStatus();
}

// The same over the file at `path`, read by ReadFileToString (util/file.h: its size limit and its
// errors for a missing, unreadable or directory path).
template <class Fn>
absl::Status ForEachNonBlankLine(const std::string& path, Fn fn) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  return ForEachNonBlankLineOf(*text, fn);
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_LINES_H_
