// An Env (util/env.h) that crashes the process (std::abort) at a chosen step of an atomic write,
// for the crash tests: tests/util/atomic_file_test.cc and, through
// tests/service/fault_server_main.cc, the server's PutProfile. Everything else goes to
// Env::Default().
#ifndef SPECPLAN_TESTS_UTIL_FAULT_ENV_H_
#define SPECPLAN_TESTS_UTIL_FAULT_ENV_H_

#include <cstdlib>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "util/env.h"

namespace specplan::test {

enum class CrashPoint {
  kNone,
  kMidTmpWrite,    // half the bytes are in the temp file (fsynced)
  kAfterTmpWrite,  // temp file complete and fsynced, not yet renamed
  kAfterRename,    // renamed, directory not fsynced
};

// "abort_mid_tmp_write", "abort_after_tmp_write" (= "abort_before_rename"), "abort_after_rename";
// "" = kNone. INVALID_ARGUMENT names the value.
inline absl::StatusOr<CrashPoint> ParseCrashPoint(absl::string_view name) {
  if (name.empty()) return CrashPoint::kNone;
  if (name == "abort_mid_tmp_write") return CrashPoint::kMidTmpWrite;
  if (name == "abort_after_tmp_write" || name == "abort_before_rename") {
    return CrashPoint::kAfterTmpWrite;
  }
  if (name == "abort_after_rename") return CrashPoint::kAfterRename;
  return absl::InvalidArgumentError(
      absl::StrCat("--fault = '", name,
                   "': unknown (known: abort_mid_tmp_write, abort_after_tmp_write, "
                   "abort_before_rename, abort_after_rename)"));
}

class FaultEnv final : public Env {
 public:
  explicit FaultEnv(CrashPoint crash) : crash_(crash) {}

  absl::Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    absl::StatusOr<std::unique_ptr<WritableFile>> file = base_->NewWritableFile(path);
    if (!file.ok() || crash_ == CrashPoint::kNone) return file;
    return std::unique_ptr<WritableFile>(new CrashingFile(*std::move(file), crash_));
  }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (crash_ == CrashPoint::kAfterRename) {
      (void)base_->RenameFile(from, to);
      std::abort();
    }
    return base_->RenameFile(from, to);
  }

  absl::Status RemoveFile(const std::string& path) override { return base_->RemoveFile(path); }
  absl::Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }

 private:
  // Aborts after the data is fsynced: with kMidTmpWrite only the first half was written.
  class CrashingFile final : public WritableFile {
   public:
    CrashingFile(std::unique_ptr<WritableFile> base, CrashPoint crash)
        : base_(std::move(base)), crash_(crash) {}
    absl::Status Append(absl::string_view data) override {
      if (crash_ == CrashPoint::kMidTmpWrite) data = data.substr(0, data.size() / 2);
      return base_->Append(data);
    }
    absl::Status Sync() override {
      absl::Status st = base_->Sync();
      if (crash_ == CrashPoint::kMidTmpWrite || crash_ == CrashPoint::kAfterTmpWrite) std::abort();
      return st;
    }
    absl::Status Close() override { return base_->Close(); }

   private:
    std::unique_ptr<WritableFile> base_;
    CrashPoint crash_;
  };

  Env* const base_ = Env::Default();
  const CrashPoint crash_;
};

}  // namespace specplan::test

#endif  // SPECPLAN_TESTS_UTIL_FAULT_ENV_H_
