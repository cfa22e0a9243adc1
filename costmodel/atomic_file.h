// Atomic file replacement, shared by profile saving (costmodel/profile.cc) and the planner
// service's PutProfile.
#ifndef SPECPLAN_COSTMODEL_ATOMIC_FILE_H_
#define SPECPLAN_COSTMODEL_ATOMIC_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace specplan::costmodel {

// Test seam for crash tests of the write path: the process calls std::abort() at that point.
// Production callers leave it at kNone.
enum class WriteFault {
  kNone,
  kAbortMidTmpWrite,    // half the bytes are in the temp file (fsynced)
  kAbortAfterTmpWrite,  // temp file complete, not yet renamed
  kAbortAfterRename,    // renamed, directory not fsynced
};

// Writes `text` to `path` atomically: creates the parent directories, writes "<path>.tmp.<pid>",
// fsyncs it, renames it over `path`, fsyncs the directory. On error the temp file is removed and
// `path` is unchanged; the message names the file and the failing step.
absl::Status WriteFileAtomically(const std::string& path, const std::string& text,
                                 WriteFault fault = WriteFault::kNone);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_ATOMIC_FILE_H_
