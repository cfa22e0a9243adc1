// Guarding the profiles specplan ships: a command that writes a profile (specplan fit, calibrate)
// writes where --out says and refuses a path inside a shipped profiles directory (calib/) unless
// --force asks for it. One check for every such command.
#ifndef SPECPLAN_UTIL_SHIPPED_DIR_H_
#define SPECPLAN_UTIL_SHIPPED_DIR_H_

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace specplan {

// `path` made absolute and normal, symbolic links resolved as far as the path exists.
inline std::filesystem::path NormalPath(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(fs::path(path), ec), ec);
  if (ec) p = fs::absolute(fs::path(path)).lexically_normal();
  return p;
}

// True when `path` is `dir` or lies under it (both normalized; nothing needs to exist).
inline bool PathIsInside(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  const std::filesystem::path p = NormalPath(path), d = NormalPath(dir);
  auto pi = p.begin();
  for (auto di = d.begin(); di != d.end(); ++di, ++pi) {
    if (di->empty() && std::next(di) == d.end()) break;  // "dir/" ends in an empty element
    if (pi == p.end() || *pi != *di) return false;
  }
  return true;
}

// The shipped profiles directories: `default_calib_dir` (costmodel::DefaultCalibDir(), or the
// directory a command was told holds the bundled profiles) and, when the build defines
// SPECPLAN_SHIPPED_CALIB_DIR, the source tree's calib/ (which stays protected even when
// $SPECPLAN_CALIB_DIR points elsewhere).
inline std::vector<std::string> ShippedCalibDirs(const std::string& default_calib_dir) {
  std::vector<std::string> dirs = {default_calib_dir};
#ifdef SPECPLAN_SHIPPED_CALIB_DIR
  dirs.push_back(SPECPLAN_SHIPPED_CALIB_DIR);
#endif
  return dirs;
}

// OK when a profile may be written to `path`: it lies outside every directory of `shipped_dirs`,
// or `force` is set. Else INVALID_ARGUMENT
//   "<what> <path>: inside the shipped profiles directory <dir>; pass --out FILE to write
//    elsewhere, or --force to write there"
// `what` says where the path came from ("--out", "default output path", "--refit writes over").
inline absl::Status CheckNotShipped(const std::string& what, const std::string& path,
                                    const std::vector<std::string>& shipped_dirs, bool force) {
  if (force) return absl::OkStatus();
  for (const std::string& dir : shipped_dirs) {
    if (!PathIsInside(path, dir)) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, ": inside the shipped profiles directory ", NormalPath(dir).string(),
        ", which is not overwritten by default; pass --out FILE to write elsewhere, "
        "or --force to write there"));
  }
  return absl::OkStatus();
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_SHIPPED_DIR_H_
