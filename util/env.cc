#include "util/env.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace specplan {
namespace {

absl::Status ErrnoError(const std::string& path, absl::string_view what) {
  return absl::InternalError(absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(absl::string_view data) override {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t w = ::write(fd_, data.data() + off, data.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(path_, "write failed");
      }
      off += static_cast<size_t>(w);
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fsync(fd_) != 0) return ErrnoError(path_, "fsync failed");
    return absl::OkStatus();
  }

  absl::Status Close() override {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoError(path_, "close failed");
    return absl::OkStatus();
  }

 private:
  const std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
 public:
  absl::Status CreateDirs(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::InternalError(absl::StrCat(dir, ": cannot create directory: ", ec.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return ErrnoError(path, "cannot create");
    return std::make_unique<PosixWritableFile>(path, fd);
  }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError(from, absl::StrCat("rename to ", to, " failed"));
    }
    return absl::OkStatus();
  }

  absl::Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return ErrnoError(path, "cannot remove");
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError(dir, "cannot open directory");
    const int rc = ::fsync(fd);
    ::close(fd);
    if (rc != 0) return ErrnoError(dir, "fsync failed");
    return absl::OkStatus();
  }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv;  // never destroyed: usable from static destructors
  return env;
}

}  // namespace specplan
