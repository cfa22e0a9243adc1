// A PlannerService for the request fuzzers: real ProfileStore in a temporary directory holding one
// fitted profile (a100-80g / qwen3-4b / bf16, every latency model kind), default limits; and
// FuzzRequest, the steps every request fuzzer takes.
#ifndef SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_
#define SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "costmodel/fit/profile_fit.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline_latency.h"
#include "service/planner_service.h"
#include "service/profile_store.h"
#include "specplan/v1/planner.pb.h"
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

// A PlannerService::Do* handler, e.g. &service::PlannerService::DoPlanTree, and what a request
// fuzzer hands FuzzRequest with it.
template <class Req, class Resp>
using Handler = absl::Status (service::PlannerService::*)(const Req&, Resp*);
template <class Req, class Resp>
struct RequestFuzz {
  using Check = void (*)(const Req& req, const Resp& reply);
  using Wanted = bool (*)(const Req& req);
  using After = void (*)(const Req& req);
};

// One fuzz input as a request of `handler`: `data` parsed as a Req (skipped when it is not one or
// `wanted` turns it down), run through FuzzService(), and the reply of an accepted request checked
// by `check`; a refused request must say why (a non-empty message). `after` then runs on every
// request that was run, accepted or not.
template <class Req, class Resp>
void FuzzRequest(const uint8_t* data, size_t size, Handler<Req, Resp> handler,
                 typename RequestFuzz<Req, Resp>::Check check,
                 typename RequestFuzz<Req, Resp>::Wanted wanted = nullptr,
                 typename RequestFuzz<Req, Resp>::After after = nullptr) {
  Req req;
  if (!req.ParseFromArray(data, static_cast<int>(size))) return;
  if (wanted != nullptr && !wanted(req)) return;
  Resp resp;
  const absl::Status st = (FuzzService().*handler)(req, &resp);
  if (st.ok()) {
    check(req, resp);
  } else {
    SPECPLAN_CHECK(!st.message().empty());
  }
  if (after != nullptr) after(req);
}

// libFuzzer's entry points of a request fuzzer: FuzzRequest(data, size,
// &service::PlannerService::HANDLER, check[, wanted[, after]]) per input, and the service (its
// profile fitted, several seconds under the sanitizers) built once before the first input, so
// libFuzzer's per-input -timeout times the handler alone.
#define SPECPLAN_REQUEST_FUZZER(HANDLER, ...)                                                \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                                       \
    ::specplan::fuzz::FuzzService();                                                         \
    return 0;                                                                                \
  }                                                                                          \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {                  \
    ::specplan::fuzz::FuzzRequest(data, size, &::specplan::service::PlannerService::HANDLER, \
                                  __VA_ARGS__);                                              \
    return 0;                                                                                \
  }

}  // namespace specplan::fuzz

#endif  // SPECPLAN_FUZZ_SERVICE_FUZZ_UTIL_H_
