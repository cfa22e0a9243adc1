// Atomic file replacement, shared by profile saving (costmodel/profile/profile.cc), the planner
// service's PutProfile, traces, samples and charts.
#ifndef SPECPLAN_UTIL_ATOMIC_FILE_H_
#define SPECPLAN_UTIL_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "util/env.h"

namespace specplan {

// Writes `text` to `path` atomically through `env`: creates the parent directories, writes
// "<path>.tmp.<pid>", fsyncs it, renames it over `path`, fsyncs the directory. On error the temp
// file is removed and `path` is unchanged; the message names the file and the failing step.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view text,
                                 Env* env = Env::Default());

}  // namespace specplan

#endif  // SPECPLAN_UTIL_ATOMIC_FILE_H_
