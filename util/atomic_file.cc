#include "util/atomic_file.h"

#include <unistd.h>

#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"

namespace specplan {

absl::Status WriteFileAtomically(const std::string& path, absl::string_view text, Env* env) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) {
    if (absl::Status st = env->CreateDirs(target.parent_path().string()); !st.ok()) return st;
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  absl::StatusOr<std::unique_ptr<WritableFile>> file = env->NewWritableFile(tmp);
  if (!file.ok()) return file.status();
  absl::Status st = (*file)->Append(text);
  if (st.ok()) st = (*file)->Sync();
  if (st.ok()) st = (*file)->Close();
  if (st.ok()) st = env->RenameFile(tmp, path);
  if (!st.ok()) {
    file->reset();  // closes the descriptor if Close() was not reached
    (void)env->RemoveFile(tmp);
    return st;
  }
  // The rename is done: a directory that cannot be synced leaves the new file in place, so it is
  // not an error (the entry becomes durable with the next sync of that file system).
  (void)env->SyncDir(target.has_parent_path() ? target.parent_path().string() : ".");
  return absl::OkStatus();
}

}  // namespace specplan
