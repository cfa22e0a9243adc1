#include "util/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace specplan {
namespace {

absl::Status TooLarge(const std::string& path, size_t max_bytes) {
  return absl::ResourceExhaustedError(
      absl::StrCat(path, ": more than the ", DescribeBytes(max_bytes), " an input file may hold"));
}

// Closes the descriptor on every return path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string DescribeBytes(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return absl::StrCat(bytes >> 20, " MiB (", bytes, " bytes)");
  }
  return absl::StrCat(bytes, " bytes");
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path, size_t max_bytes) {
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (err == EACCES || err == EPERM) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": cannot read: ", std::strerror(err)));
    }
    if (err == ENOTDIR) {
      return absl::NotFoundError(
          absl::StrCat(path, ": no such file (a component of the path is not a directory)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  struct stat st;
  if (::fstat(f.fd, &st) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot stat: ", std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
  }
  std::string out;
  if (S_ISREG(st.st_mode)) {
    if (static_cast<unsigned long long>(st.st_size) > max_bytes) return TooLarge(path, max_bytes);
    out.reserve(static_cast<size_t>(st.st_size));
  }
  // Read up to one byte past the limit: a file that grew, a pipe or a device is refused as soon
  // as it holds more than max_bytes.
  char buf[1 << 16];
  for (;;) {
    const size_t want = std::min(sizeof(buf), max_bytes + 1 - out.size());
    const ssize_t got = ::read(f.fd, buf, want);
    if (got < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      if (err == EISDIR) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a file"));
      }
      return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", std::strerror(err)));
    }
    if (got == 0) break;
    out.append(buf, static_cast<size_t>(got));
    if (out.size() > max_bytes) return TooLarge(path, max_bytes);
  }
  return out;
}

}  // namespace specplan
