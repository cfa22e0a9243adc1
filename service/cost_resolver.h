// Resolves a request's CostSpec (planner.proto) against the server's profiles: a stored profile
// (any of its latency models, or "ema"), an inline roofline (optionally linear-calibrated) of a
// registry model on a registry or inline GPU, or a caller's latency grid.
//
// Which stored profile is costmodel::ChooseProfile's choice (costmodel/cost_spec.h), the same
// engine rule the CLI's costmodel::ResolveCost applies to the bundled files, here over a
// costmodel::ProfileLookup of the in-memory ProfileStore: the server never reads a file a request
// names.
//
// The latency models are cached by cost source (the CostSpec's profile / inline_model /
// latency_grid, compared field by field), so a request that repeats a source builds no model, no
// field-name string and copies no spec: it takes shared pointers. Profile sources are re-resolved
// after the ProfileStore changes (Put, LoadAll). The cache holds at most `capacity` sources; when
// a new one would exceed that, it is emptied first (a client cycling through more sources than
// that resolves each of them afresh, as without a cache). Errors are not cached.
//
// The engine's whole step (planner.proto DrafterCost.architecture; costmodel/step/step_model.h):
// with an architecture the resolved cost carries a costmodel::StepModel over the source's latency
// model, the profile's composed drafter tables (Profile::drafters) and its engine's host defaults
// (an inline model: no tables, engine ""), built as the CLI's CostFlags::Step builds it. Step
// models are cached per source and step options (at most kStepModelsPerSource, emptied when
// full), so a repeated request builds none.
//
// Thread-safety: Resolve may be called concurrently (the cache takes a shared lock to read, an
// exclusive one to insert).
#ifndef SPECPLAN_SERVICE_COST_RESOLVER_H_
#define SPECPLAN_SERVICE_COST_RESOLVER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "costmodel/cycle_cost.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/step/step_model.h"
#include "ops/cost_request.h"
#include "service/convert.h"
#include "service/profile_store.h"
#include "specplan/v1/planner.pb.h"

namespace specplan::service {

// One resolved cost source, immutable and shared by every request that names it.
struct CostSource {
  std::shared_ptr<const costmodel::LatencyModel> latency;
  std::string kind;                                  // latency->Kind()
  std::shared_ptr<const ProfileStore::Entry> entry;  // the profile; null for other sources
  bool has_specs = false;  // model_spec / gpu_spec are set (not for a latency grid)
  costmodel::ModelSpec model_spec;
  costmodel::GpuSpec gpu_spec;
  uint64_t store_generation = 0;  // ProfileStore::generation() when a profile was resolved
  std::string engine;  // the profile's engine (whose host defaults a step uses); "" otherwise

  // Step models over this source by their options (cost_resolver.cc StepKey); guarded by step_mu.
  mutable std::mutex step_mu;
  mutable std::map<std::string, std::shared_ptr<const costmodel::StepModel>> steps;
};

inline constexpr size_t kStepModelsPerSource = 64;

// A CostSpec resolved for one request: the shared source plus the request's own drafter, T_aux
// and context, and the cycle cost C(n) at that context.
struct ResolvedCost {
  std::shared_ptr<const CostSource> source;
  costmodel::DrafterCost drafter;
  double t_aux_s = 0;
  int64_t context = 0;
  std::optional<costmodel::CycleCost> cycle;  // at `context`; points into source->latency
  // With drafter.architecture: the engine's step model (shared, cached in the source); else null.
  std::shared_ptr<const costmodel::StepModel> step;
  // The plain step with its host work, seconds, once PriceStep ran with a step model; else 0
  // (L_AR is then the planner's T_verify(1, c)).
  double l_ar_s = 0;

  // How a plan prices its cycle with a step model, exactly as the CLI's
  // ops::CostRequest::PriceDrafter: costmodel::PlannerTermsFor(*step, gamma, c) replaces `drafter`,
  // adds the step's sample and host terms to t_aux_s, sets l_ar_s and rebuilds `cycle` at
  // `context`. Without a step model it does nothing. Call it at most once per resolved cost.
  void PriceStep(int gamma, int64_t c);

  // The cost as the operations take it (ops/cost_request.h): the source's latency model, the step
  // model, the drafter, T_aux, kind and profile id. The operation prices the step into the cycle
  // (ops::PriceCycle), so call it on a cost PriceStep has not touched.
  ops::CostView View() const;

  const costmodel::LatencyModel& latency() const { return *source->latency; }
  const std::string& latency_kind() const { return source->kind; }
  // The profile's id; "" for an inline model or a latency grid.
  const std::string& profile_id() const;
};

class CostResolver {
 public:
  static constexpr size_t kDefaultCapacity = 256;

  // `store` must outlive the resolver. `default_engine` is the server's --engine: a canonical
  // engine name (costmodel::ParseEngine) preferred for profile references that name no engine, or
  // "" for none.
  CostResolver(const ProfileStore* store, ServiceLimits limits, size_t capacity = kDefaultCapacity,
               std::string default_engine = "");

  // Resolves `spec`; `field` is its request path (e.g. "cost"), used only in error messages.
  // `default_gamma` fills drafter.gamma = 0. With drafter.architecture it also builds the step
  // model (ResolvedCost::step): drafter_class must then be "" or "parallel", the source a profile
  // or an inline model, and t_net_s + t_head_s + t_light_s > 0 gives T_draft by hand. Errors name
  // the field and value (convert.h codes): "cost.drafter.architecture = 'medusa': unknown (known:
  // ...)", "cost.drafter.topk = 0: ...".
  absl::StatusOr<ResolvedCost> Resolve(const v1::CostSpec& spec, int default_gamma,
                                       absl::string_view field) const;

  // Resolves a ProfileRef to the served entry: the id of (gpu, model, dtype, engine), first as
  // given, then with registry-canonical names ("h100" = "h100-sxm"). The engine (ProfileRef.engine,
  // canonicalised by convert.h EngineFromProto; INVALID_ARGUMENT naming "<field>.engine" when
  // unknown):
  //   named    exactly that engine; NOT_FOUND naming "<field>.engine", the value and the engines
  //            held for that gpu x model x dtype ("cost.profile.engine = 'vllm': no profile
  //            'h100-sxm/qwen3-8b-bf16@vllm' on this server (engines held for
  //            h100-sxm/qwen3-8b-bf16: sglang, specplan)"); naming `field` and the id when none is
  //            held at all
  //   ""       default_engine when it is held for that gpu x model x dtype, else the first of
  //            costmodel::KnownEngines() (sglang, vllm, trtllm, specplan) that is; NOT_FOUND naming
  //            `field` and the id "<gpu>/<model>-<dtype>" when none is.
  // (costmodel::ChooseProfile applies this rule; costmodel::HeldEngines lists the engines held.)
  // Only tp = 1 profiles are referred to this way. Not cached.
  absl::StatusOr<std::shared_ptr<const ProfileStore::Entry>> FindProfile(
      const v1::ProfileRef& ref, absl::string_view field) const;

  const ServiceLimits& limits() const { return limits_; }
  const std::string& default_engine() const { return default_engine_; }
  // Cost sources cached now.
  size_t cached() const;

 private:
  struct Cached {
    v1::CostSpec key;  // the source part of the spec that resolved to `source`
    std::shared_ptr<const CostSource> source;
  };

  absl::StatusOr<std::shared_ptr<const CostSource>> Source(const v1::CostSpec& spec,
                                                           absl::string_view field) const;
  absl::StatusOr<std::shared_ptr<const CostSource>> ResolveSource(const v1::CostSpec& spec,
                                                                  absl::string_view field) const;
  const ProfileStore* store_;
  const ServiceLimits limits_;
  const size_t capacity_;
  const std::string default_engine_;  // "" = none
  mutable std::shared_mutex mu_;
  mutable std::unordered_multimap<uint64_t, Cached> cache_;  // by source hash; guarded by mu_
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_COST_RESOLVER_H_
