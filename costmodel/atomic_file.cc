#include "costmodel/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace specplan::costmodel {

namespace fs = std::filesystem;

absl::Status WriteFileAtomically(const std::string& path, const std::string& text,
                                 WriteFault fault) {
  const fs::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    fs::create_directories(target.parent_path(), ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat(target.parent_path().string(), ": cannot create directory: ", ec.message()));
    }
  }
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  auto fail = [&](const std::string& what) {
    const std::string msg = absl::StrCat(tmp, ": ", what, ": ", std::strerror(errno));
    ::unlink(tmp.c_str());
    return absl::InternalError(msg);
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat(tmp, ": cannot create: ", std::strerror(errno)));
  }
  // With kAbortMidTmpWrite only the first half is written before the crash.
  const size_t end = fault == WriteFault::kAbortMidTmpWrite ? text.size() / 2 : text.size();
  size_t off = 0;
  while (off < end) {
    const ssize_t w = ::write(fd, text.data() + off, end - off);
    if (w < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return fail("write failed");
    }
    off += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    return fail("fsync failed");
  }
  if (fault == WriteFault::kAbortMidTmpWrite || fault == WriteFault::kAbortAfterTmpWrite) {
    std::abort();
  }
  if (::close(fd) != 0) return fail("close failed");
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return fail(absl::StrCat("rename to ", path, " failed"));
  }
  if (fault == WriteFault::kAbortAfterRename) std::abort();
  const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

}  // namespace specplan::costmodel
