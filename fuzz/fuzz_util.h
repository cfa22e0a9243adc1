// Helpers shared by the libFuzzer targets: JSON parsing without exceptions, a check that prints the
// failing status, and a small fixed cost model for planning.
#ifndef SPECPLAN_FUZZ_FUZZ_UTIL_H_
#define SPECPLAN_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline_latency.h"
#include "util/check.h"
#include "util/json_error.h"

namespace specplan::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// libFuzzer's entry point of a fuzzer that reads its input as text: fn(text), fn being a function
// of namespace specplan::fuzz.
#define SPECPLAN_TEXT_FUZZER(fn)                                            \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    ::specplan::fuzz::fn(::specplan::fuzz::AsText(data, size));             \
    return 0;                                                               \
  }

// Parses JSON text through the library's one parser (util/json_error.h ParseJson, with its depth
// and size limits); a syntax error or a value past a limit gives a discarded value (no exception).
inline nlohmann::json ParseJsonNoThrow(std::string_view text) {
  absl::StatusOr<nlohmann::json> j = json_util::ParseJson(text, "fuzz input");
  return j.ok() ? *std::move(j) : nlohmann::json(nlohmann::json::value_t::discarded);
}

// Aborts (a fuzzer crash) when `status` is not OK, printing it: an invariant the library promises.
inline void CheckOk(const absl::Status& status, const char* what) {
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, status.ToString().c_str());
    SPECPLAN_CHECK(status.ok(), "invariant violated");
  }
}

// Writes `text` to a per-process scratch file (removed at exit) and returns its path, so that file
// readers (LoadProfile, ModelSpecFromHfConfigFile) see exactly the fuzzer's bytes.
inline const std::string& ScratchPath() {
  static const std::string kPath = [] {
    namespace fs = std::filesystem;
    const fs::path dir = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    std::atexit([] { std::remove(ScratchPath().c_str()); });
    return (dir / ("specplan_fuzz_" + std::to_string(::getpid()) + ".json")).string();
  }();
  return kPath;
}
inline const std::string& WriteScratchFile(std::string_view text) {
  const std::string& path = ScratchPath();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  SPECPLAN_CHECK(static_cast<bool>(out), "cannot write the scratch file");
  return path;
}

// The bare roofline of the first built-in model on the first built-in GPU.
inline const costmodel::RooflineLatency& DefaultRoofline() {
  static const costmodel::RooflineLatency* const kModel = [] {
    auto model = costmodel::LookupModel(costmodel::KnownModelNames().front());
    auto gpu = costmodel::LookupGpu(costmodel::KnownGpuNames().front());
    SPECPLAN_CHECK(model.ok() && gpu.ok());
    return new costmodel::RooflineLatency(*model, *gpu);
  }();
  return *kModel;
}

}  // namespace specplan::fuzz

#endif  // SPECPLAN_FUZZ_FUZZ_UTIL_H_
