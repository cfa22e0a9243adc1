// The file-system operations that atomic writes go through, behind an interface so that tests can
// inject faults (LevelDB's Env). Env::Default() is the POSIX implementation every production
// caller uses; tests wrap it (tests/util/fault_env.h crashes the process at a chosen step).
//
// Errors name the path and the failing step ("<path>: write failed: No space left on device").
#ifndef SPECPLAN_UTIL_ENV_H_
#define SPECPLAN_UTIL_ENV_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace specplan {

// A file open for writing. Destroying it without Close() closes the descriptor and ignores errors.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` at the end of the file.
  virtual absl::Status Append(absl::string_view data) = 0;
  // Flushes the file's data to the device (fsync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env: never null, never destroyed, thread-safe.
  static Env* Default();

  // Creates `dir` and its missing parents; OK when it exists.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;
  // Creates or truncates `path` (mode 0644).
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(
      const std::string& path) = 0;
  // Atomically replaces `to` with `from` (rename(2)).
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  // Flushes a directory's entries to the device (fsync of the directory).
  virtual absl::Status SyncDir(const std::string& dir) = 0;
};

}  // namespace specplan

#endif  // SPECPLAN_UTIL_ENV_H_
