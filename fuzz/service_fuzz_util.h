// A PlannerService for the request fuzzers: real ProfileStore in a temporary directory holding one
// fitted profile (a100-80g / qwen3-4b / bf16, every latency model kind), default limits.
#ifndef SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_
#define SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "costmodel/model_registry.h"
#include "costmodel/model_spec.h"
#include "costmodel/profile_fit.h"
#include "costmodel/roofline_latency.h"
#include "service/planner_service.h"
#include "service/profile_store.h"
#include "util/check.h"

namespace specplan::fuzz {

inline service::PlannerService& FuzzService() {
  static service::PlannerService* const kService = [] {
    namespace fs = std::filesystem;
    static const fs::path dir =
        fs::temp_directory_path() / ("specplan_fuzz_profiles_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(dir, ec);
    });
    auto model = costmodel::LookupModel("qwen3-4b");
    auto gpu = costmodel::LookupGpu("a100");
    SPECPLAN_CHECK(model.ok() && gpu.ok());
    const costmodel::RooflineLatency roofline(*model, *gpu);
    std::vector<costmodel::LatencySample> samples;
    for (int64_t c : {0, 512, 2048}) {
      for (int64_t s : {1, 4, 16, 64}) {
        samples.push_back({s, c, 1.3 * roofline.VerifySeconds(s, c) + 2e-5 + 1e-6 * s});
      }
    }
    auto profile = costmodel::FitProfile(*model, *gpu, samples);
    SPECPLAN_CHECK(profile.ok());
    auto* store = new service::ProfileStore(dir.string(), 0.1);
    bool replaced = false;
    SPECPLAN_CHECK(store->Put(*profile, &replaced).ok());
    service::ServiceOptions options;
    options.log_requests = false;
    return new service::PlannerService(store, options);
  }();
  return *kService;
}

}  // namespace specplan::fuzz

#endif  // SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_
