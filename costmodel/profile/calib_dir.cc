#include "costmodel/profile/calib_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace specplan::costmodel {

namespace {

namespace fs = std::filesystem;

// "" at tp = 1 (so every name from before tensor parallelism stays the same), else "-tp<N>".
std::string TpSuffix(int64_t tp) { return tp == 1 ? "" : absl::StrCat("-tp", tp); }
// "" for this project's own runtime (so every name from before engines stays the same), else
// "@<engine>".
std::string EngineSuffix(const std::string& engine) {
  return engine.empty() || engine == kRuntimeEngine ? "" : absl::StrCat("@", engine);
}
// A model or GPU named by a file (an HF config.json, a GPU spec JSON) keeps its profile inside
// calib_dir: the folder holding a config.json ("/m/qwen3/config.json" -> "qwen3"), else the file's
// stem ("specs/l4.json" -> "l4"). A registry name is returned as it is.
std::string FileName(const std::string& name) {
  if (name.find('/') == std::string::npos) return name;
  const fs::path path = fs::path(name).lexically_normal();
  if (path.filename() == "config.json" && path.has_parent_path()) {
    return path.parent_path().filename().string();
  }
  if (path.filename().empty()) return path.parent_path().filename().string();  // "dir/"
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path.filename().string();
  return path.stem().string();
}
}  // namespace

std::string ProfileId(const std::string& gpu, const std::string& model, DType dtype, int64_t tp,
                      const std::string& engine) {
  return absl::StrCat(gpu, "/", model, "-", DTypeName(dtype), TpSuffix(tp), EngineSuffix(engine));
}

std::string DefaultCalibDir() {
  if (const char* env = std::getenv("SPECPLAN_CALIB_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
#if defined(SPECPLAN_CALIB_DIR) && defined(SPECPLAN_INSTALLED_CALIB_DIR)
  // A build used from its source tree reads the tree's calib/; an installed library whose source
  // tree is gone reads the copy `cmake --install` put under <prefix>/share/specplan/calib.
  std::error_code ec;
  if (fs::is_directory(SPECPLAN_CALIB_DIR, ec)) return SPECPLAN_CALIB_DIR;
  return SPECPLAN_INSTALLED_CALIB_DIR;
#else
  return "calib";
#endif
}

std::string BundledProfilePath(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model, DType dtype, int64_t tp,
                               const std::string& engine) {
  return (fs::path(calib_dir) / FileName(gpu) /
          absl::StrCat(FileName(model), "-", DTypeName(dtype), TpSuffix(tp), EngineSuffix(engine),
                       ".json"))
      .string();
}

}  // namespace specplan::costmodel
