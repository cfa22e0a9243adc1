#include "service/cost_resolver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/cost_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/step/drafter_arch.h"
#include "costmodel/step/host_time.h"
#include "google/protobuf/util/message_differencer.h"
#include "ops/cost_request.h"
#include "util/status_macros.h"

namespace specplan::service {
namespace {

absl::Status Invalid(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

// CheckSeconds with the field name "<field><leaf>" built only when the value is refused.
absl::Status CheckSecondsAt(double value, absl::string_view field, absl::string_view leaf) {
  if (std::isfinite(value) && value >= 0 && value <= kMaxSeconds) return absl::OkStatus();
  return CheckSeconds(value, absl::StrCat(field, leaf));
}

// A registry lookup's refusal of the name a request field gave, as that field's error
// ("<field><leaf> = '<name>': <why>"), with the lookup's code (NOT_FOUND for an unknown name).
absl::Status LookupRefused(absl::string_view field, absl::string_view leaf, absl::string_view name,
                           const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(field, leaf, " = '", name, "': ", status.message()));
}

// ---- the cache key: the source part of a CostSpec ----

void Mix(uint64_t* h, uint64_t v) { *h ^= v + 0x9e3779b97f4a7c15ULL + (*h << 6) + (*h >> 2); }
void MixString(uint64_t* h, const std::string& s) {
  Mix(h, std::hash<std::string_view>()(std::string_view(s)));
}
void MixDouble(uint64_t* h, double d) { Mix(h, std::hash<double>()(d)); }
// Mixes each field in turn.
template <class... Strings>
void MixStrings(uint64_t* h, const Strings&... s) {
  (MixString(h, s), ...);
}
template <class... Doubles>
void MixDoubles(uint64_t* h, Doubles... d) {
  (MixDouble(h, d), ...);
}

uint64_t SourceHash(const v1::CostSpec& spec) {
  uint64_t h = static_cast<uint64_t>(spec.source_case());
  switch (spec.source_case()) {
    case v1::CostSpec::kProfile: {
      const v1::ProfileRef& p = spec.profile();
      MixStrings(&h, p.gpu(), p.model(), p.dtype(), p.latency_model(), p.engine());
      break;
    }
    case v1::CostSpec::kInlineModel: {
      const v1::InlineCostModel& m = spec.inline_model();
      const v1::GpuSpec& g = m.gpu_spec();
      MixStrings(&h, m.gpu(), m.model(), m.dtype());
      Mix(&h, m.has_gpu_spec());
      MixString(&h, g.name());
      MixDoubles(&h, g.peak_flops(), g.mem_bw(), g.mem_bytes(), g.link_bw(), g.link_latency_s());
      Mix(&h, static_cast<uint64_t>(m.tp()));
      MixDoubles(&h, m.linear_a(), m.linear_b_s());
      break;
    }
    case v1::CostSpec::kLatencyGrid: {
      const v1::LatencyGrid& g = spec.latency_grid();
      Mix(&h, static_cast<uint64_t>(g.s_size()));
      for (int64_t s : g.s()) Mix(&h, static_cast<uint64_t>(s));
      for (double t : g.seconds()) MixDouble(&h, t);
      break;
    }
    case v1::CostSpec::SOURCE_NOT_SET:
      break;
  }
  return h;
}

// Equality compares every field of the source message, so a field added to the proto later takes
// part without an edit here (the hash above may miss one; that only costs a collision).
bool SameSource(const v1::CostSpec& a, const v1::CostSpec& b) {
  if (a.source_case() != b.source_case()) return false;
  switch (a.source_case()) {
    case v1::CostSpec::kProfile:
      return google::protobuf::util::MessageDifferencer::Equals(a.profile(), b.profile());
    case v1::CostSpec::kInlineModel:
      return google::protobuf::util::MessageDifferencer::Equals(a.inline_model(), b.inline_model());
    case v1::CostSpec::kLatencyGrid:
      return google::protobuf::util::MessageDifferencer::Equals(a.latency_grid(), b.latency_grid());
    case v1::CostSpec::SOURCE_NOT_SET:
      return true;
  }
  return false;
}

// The source part of `spec` (what the cache compares), without drafter, t_aux_s and context.
v1::CostSpec SourceKey(const v1::CostSpec& spec) {
  v1::CostSpec key;
  switch (spec.source_case()) {
    case v1::CostSpec::kProfile:
      *key.mutable_profile() = spec.profile();
      break;
    case v1::CostSpec::kInlineModel:
      *key.mutable_inline_model() = spec.inline_model();
      break;
    case v1::CostSpec::kLatencyGrid:
      *key.mutable_latency_grid() = spec.latency_grid();
      break;
    case v1::CostSpec::SOURCE_NOT_SET:
      break;
  }
  return key;
}

// The step options that tell step models over one source apart, bit-exact (doubles as bytes).
std::string StepKey(const costmodel::StepOptions& o) {
  std::string key = o.drafter;
  auto add = [&key](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
  key.push_back('\0');
  add(&o.draft_steps, sizeof o.draft_steps);
  add(&o.topk, sizeof o.topk);
  add(&o.drafter_options.draft_vocab, sizeof o.drafter_options.draft_vocab);
  const double draft_s = o.draft_s.value_or(-1);
  add(&draft_s, sizeof draft_s);
  if (o.host) {
    for (const costmodel::HostTimeTerm& t : costmodel::HostTimeTerms()) {
      const double v = (*o.host).*t.member;
      add(&v, sizeof v);
    }
    key += o.host->provenance;
  }
  return key;
}

// The step model over `source` for `options`, from the source's cache or built (and cached).
absl::StatusOr<std::shared_ptr<const costmodel::StepModel>> StepModelFor(
    const CostSource& source, const costmodel::StepOptions& options, absl::string_view field) {
  const std::string key = StepKey(options);
  std::lock_guard<std::mutex> lock(source.step_mu);
  if (auto it = source.steps.find(key); it != source.steps.end()) return it->second;
  // The engine's CUDA-graph ladder, as the CLI and Python price it (ops::DefaultGraphs): a function
  // of the source and the drafter, both in the key.
  costmodel::StepOptions o = options;
  if (!o.graphs) o.graphs = ops::DefaultGraphs(source.engine, source.gpu_spec.mem_bytes, o);
  absl::StatusOr<costmodel::StepModel> built = costmodel::StepModel::Create(
      source.latency.get(), source.model_spec, source.gpu_spec,
      source.entry ? &source.entry->profile.drafters : nullptr, source.engine, o);
  if (!built.ok()) return StepErrorInFields(built.status(), field);
  auto step = std::make_shared<const costmodel::StepModel>(*std::move(built));
  if (source.steps.size() >= kStepModelsPerSource) source.steps.clear();
  source.steps.emplace(key, step);
  return step;
}

}  // namespace

void ResolvedCost::PriceStep(int gamma, int64_t c) {
  if (step == nullptr) return;
  const costmodel::PlannerStepTerms terms = costmodel::PlannerTermsFor(*step, gamma, c);
  drafter = terms.drafter;
  t_aux_s += terms.t_aux_s;
  l_ar_s = terms.l_ar_s;
  cycle.emplace(source->latency.get(), drafter, t_aux_s, context);
}

ops::CostView ResolvedCost::View() const {
  ops::CostView v;
  v.latency = source->latency.get();
  v.step = step.get();
  v.drafter = drafter;
  v.t_aux_s = t_aux_s;
  v.latency_kind = source->kind;
  v.profile_id = profile_id();
  return v;
}

const std::string& ResolvedCost::profile_id() const {
  static const std::string* const kNone = new std::string();
  return source->entry ? source->entry->id : *kNone;
}

CostResolver::CostResolver(const ProfileStore* store, ServiceLimits limits, size_t capacity,
                           std::string default_engine)
    : store_(store),
      limits_(std::move(limits)),
      capacity_(std::max<size_t>(capacity, 1)),
      default_engine_(std::move(default_engine)) {}

size_t CostResolver::cached() const {
  std::shared_lock lock(mu_);
  return cache_.size();
}

absl::StatusOr<ResolvedCost> CostResolver::Resolve(const v1::CostSpec& spec, int default_gamma,
                                                   absl::string_view field) const {
  ResolvedCost r;
  SPECPLAN_RETURN_IF_ERROR(
      CheckContext(spec.context_tokens(), limits_, absl::StrCat(field, ".context_tokens")));
  r.context = spec.context_tokens();
  SPECPLAN_RETURN_IF_ERROR(CheckSecondsAt(spec.t_aux_s(), field, ".t_aux_s"));
  r.t_aux_s = spec.t_aux_s();

  const v1::DrafterCost& d = spec.drafter();
  if (d.drafter_class().empty()) {
    r.drafter.cls = costmodel::DrafterClass::kParallelBlock;
  } else {
    auto parsed_cls = costmodel::ParseDrafterClass(d.drafter_class());
    if (!parsed_cls.ok()) {
      return Invalid(absl::StrCat(field, ".drafter.drafter_class = '", d.drafter_class(),
                                  "': unknown (known: ar, parallel, causal)"));
    }
    r.drafter.cls = *parsed_cls;
  }
  if (d.gamma() < 0 || d.gamma() > 1024) {
    return Invalid(absl::StrCat(field, ".drafter.gamma = ", d.gamma(), ": must be in [0, 1024]"));
  }
  r.drafter.gamma = d.gamma() == 0 ? default_gamma : d.gamma();
  SPECPLAN_RETURN_IF_ERROR(CheckSecondsAt(d.t_net_s(), field, ".drafter.t_net_s"));
  SPECPLAN_RETURN_IF_ERROR(CheckSecondsAt(d.t_head_s(), field, ".drafter.t_head_s"));
  SPECPLAN_RETURN_IF_ERROR(CheckSecondsAt(d.t_light_s(), field, ".drafter.t_light_s"));
  r.drafter.t_net_s = d.t_net_s();
  r.drafter.t_head_s = d.t_head_s();
  r.drafter.t_light_s = d.t_light_s();
  if (!(std::isfinite(d.batch_growth()) && d.batch_growth() >= 0 && d.batch_growth() <= 1e6)) {
    return Invalid(absl::StrCat(field, ".drafter.batch_growth = ", d.batch_growth(),
                                ": must be a finite number in [0, 1e6]"));
  }
  r.drafter.batch_growth = d.batch_growth();

  const std::string& arch = d.architecture();
  if (!arch.empty() && r.drafter.cls != costmodel::DrafterClass::kParallelBlock) {
    return Invalid(absl::StrCat(field, ".drafter.drafter_class = '", d.drafter_class(),
                                "': with architecture '", arch,
                                "' the step model prices the drafter (send \"\" or \"parallel\")"));
  }
  if (!arch.empty())
    SPECPLAN_RETURN_IF_ERROR(StepErrorInFields(costmodel::CheckDrafterName(arch), field));

  SPECPLAN_ASSIGN_OR_RETURN(r.source, Source(spec, field));
  if (!arch.empty()) {
    if (!r.source->has_specs) {
      return Invalid(absl::StrCat(field, ".drafter.architecture = '", arch,
                                  "': needs the target's shapes (", field, ".profile or ", field,
                                  ".inline_model), not ", field, ".latency_grid"));
    }
    // T_draft by hand when the request prices the drafter too (CostFlags::Step's draft_s).
    costmodel::StepOptions options;
    SPECPLAN_RETURN_IF_ERROR(
        StepOptionsFromProto(d, r.source->engine, r.drafter.DraftSeconds(), field, &options));
    SPECPLAN_ASSIGN_OR_RETURN(r.step, StepModelFor(*r.source, options, field));
  }
  r.cycle.emplace(r.source->latency.get(), r.drafter, r.t_aux_s, r.context);
  return r;
}

absl::StatusOr<std::shared_ptr<const CostSource>> CostResolver::Source(
    const v1::CostSpec& spec, absl::string_view field) const {
  if (spec.source_case() == v1::CostSpec::SOURCE_NOT_SET) {
    return Invalid(absl::StrCat(field, ": set ", field, ".profile, ", field, ".inline_model or ",
                                field, ".latency_grid"));
  }
  const uint64_t hash = SourceHash(spec);
  const bool is_profile = spec.source_case() == v1::CostSpec::kProfile;
  const uint64_t generation = is_profile ? store_->generation() : 0;
  {
    std::shared_lock lock(mu_);
    auto [begin, end] = cache_.equal_range(hash);
    for (auto it = begin; it != end; ++it) {
      if (SameSource(it->second.key, spec) &&
          (!is_profile || it->second.source->store_generation == generation)) {
        return it->second.source;
      }
    }
  }
  SPECPLAN_ASSIGN_OR_RETURN(std::shared_ptr<const CostSource> source, ResolveSource(spec, field));
  std::unique_lock lock(mu_);
  auto [begin, end] = cache_.equal_range(hash);
  for (auto it = begin; it != end; ++it) {
    if (SameSource(it->second.key, spec)) {  // a stale profile, or another thread's result
      it->second.source = source;
      return source;
    }
  }
  if (cache_.size() >= capacity_) cache_.clear();
  cache_.emplace(hash, Cached{SourceKey(spec), source});
  return source;
}

absl::StatusOr<std::shared_ptr<const ProfileStore::Entry>> CostResolver::FindProfile(
    const v1::ProfileRef& ref, absl::string_view field) const {
  if (ref.gpu().empty()) return Invalid(absl::StrCat(field, ".gpu: required"));
  if (ref.model().empty()) return Invalid(absl::StrCat(field, ".model: required"));
  costmodel::DType dtype = costmodel::DType::kBFloat16;
  if (!ref.dtype().empty()) {
    auto parsed = costmodel::ParseDType(ref.dtype());
    if (!parsed.ok()) {
      return Invalid(
          absl::StrCat(field, ".dtype = '", ref.dtype(), "': ", parsed.status().message()));
    }
    dtype = *parsed;
  }
  std::string engine;
  SPECPLAN_RETURN_IF_ERROR(EngineFromProto(ref.engine(), absl::StrCat(field, ".engine"), &engine));
  // Registry aliases ("h100" = "h100-sxm"): each id is tried as given, then with canonical names.
  auto gpu = costmodel::LookupGpu(ref.gpu());
  auto model = costmodel::LookupModel(ref.model());
  const std::string& canonical_gpu = gpu.ok() ? gpu->name : ref.gpu();
  const std::string& canonical_model = model.ok() ? model->name : ref.model();
  auto find = [&](const costmodel::ProfileKey& key) -> std::shared_ptr<const ProfileStore::Entry> {
    if (auto entry = store_->Find(ProfileId(key.gpu, key.model, key.dtype, key.tp, key.engine))) {
      return entry;
    }
    if (canonical_gpu == key.gpu && canonical_model == key.model) return nullptr;
    return store_->Find(ProfileId(canonical_gpu, canonical_model, key.dtype, key.tp, key.engine));
  };
  // The store as costmodel's ProfileLookup (never a file: a request names no path here), so the
  // engine rule is costmodel::ChooseProfile's, the same as the CLI's over the bundled files.
  // ChooseProfile stops at the first profile found, so `chosen` is the entry it returns.
  std::shared_ptr<const ProfileStore::Entry> chosen;
  const costmodel::ProfileLookup lookup =
      [&](const costmodel::ProfileKey& key) -> absl::StatusOr<costmodel::FoundProfile> {
    std::shared_ptr<const ProfileStore::Entry> entry = find(key);
    if (entry == nullptr) return absl::NotFoundError(key.engine);
    chosen = entry;
    return costmodel::FoundProfile{
        std::shared_ptr<const costmodel::Profile>(entry, &entry->profile), entry->id, key.engine};
  };
  if (ref.tp() < 0)
    return Invalid(absl::StrCat(field, ".tp = ", ref.tp(), ": must be >= 0 (0 = 1)"));
  const int64_t tp = ref.tp() > 0 ? ref.tp() : 1;
  const costmodel::ProfileKey key{ref.gpu(), ref.model(), dtype, tp, engine};
  absl::StatusOr<costmodel::FoundProfile> found =
      costmodel::ChooseProfile(lookup, key, default_engine_);
  if (found.ok()) return chosen;
  if (!absl::IsNotFound(found.status())) return found.status();
  const std::string id = ProfileId(ref.gpu(), ref.model(), dtype, tp,
                                   engine.empty() ? costmodel::kRuntimeEngine : engine);
  // The engines held for this gpu x model x dtype.
  const std::vector<std::string> held =
      engine.empty() ? std::vector<std::string>{} : costmodel::HeldEngines(lookup, key);
  if (!held.empty()) {
    return absl::NotFoundError(absl::StrCat(
        field, ".engine = '", ref.engine(), "': no profile '",
        ProfileId(canonical_gpu, canonical_model, dtype, tp, engine),
        "' on this server (engines held for ", ProfileId(canonical_gpu, canonical_model, dtype),
        ": ", absl::StrJoin(held, ", "), ")"));
  }
  return absl::NotFoundError(absl::StrCat(field, ": no profile '", id, "' on this server (",
                                          store_->List().size(),
                                          " loaded; see ListProfiles, or use an inline model)"));
}

absl::StatusOr<std::shared_ptr<const CostSource>> CostResolver::ResolveSource(
    const v1::CostSpec& spec, absl::string_view field) const {
  auto r = std::make_shared<CostSource>();
  switch (spec.source_case()) {
    case v1::CostSpec::kProfile: {
      // Read the generation before the lookup: a Put in between only makes the entry stale.
      r->store_generation = store_->generation();
      const std::string pfield = absl::StrCat(field, ".profile");
      SPECPLAN_ASSIGN_OR_RETURN(r->entry, FindProfile(spec.profile(), pfield));
      const std::string& kind = spec.profile().latency_model();
      if (kind.empty()) {
        r->latency = r->entry->default_model;
      } else if (kind == "ema") {
        r->latency = ProfileStore::EmaModel(*r->entry);
      } else if (auto it = r->entry->models.find(kind); it != r->entry->models.end()) {
        r->latency = it->second;
      } else if (const auto& kinds = costmodel::LatencyModelKinds();
                 std::find(kinds.begin(), kinds.end(), kind) != kinds.end()) {
        return absl::NotFoundError(absl::StrCat(pfield, ".latency_model = '", kind, "': profile '",
                                                r->entry->id, "' has no such model"));
      } else {
        return Invalid(absl::StrCat(pfield, ".latency_model = '", kind,
                                    "': unknown (known: ", absl::StrJoin(kinds, ", "), ", ema)"));
      }
      r->has_specs = true;
      r->model_spec = r->entry->profile.model_spec;
      r->gpu_spec = r->entry->profile.gpu_spec;
      r->engine = r->entry->profile.engine;
      break;
    }
    case v1::CostSpec::kInlineModel: {
      const v1::InlineCostModel& m = spec.inline_model();
      const std::string mfield = absl::StrCat(field, ".inline_model");
      if (m.model().empty()) return Invalid(absl::StrCat(mfield, ".model: required"));
      auto model = costmodel::LookupModel(m.model());
      if (!model.ok()) return LookupRefused(mfield, ".model", m.model(), model.status());
      r->model_spec = *std::move(model);
      if (!m.dtype().empty()) {
        auto dtype = costmodel::ParseDType(m.dtype());
        if (!dtype.ok()) {
          return Invalid(
              absl::StrCat(mfield, ".dtype = '", m.dtype(), "': ", dtype.status().message()));
        }
        r->model_spec.dtype = *dtype;
      }
      if (m.has_gpu_spec()) {
        const v1::GpuSpec& g = m.gpu_spec();
        r->gpu_spec.name = g.name().empty() ? "custom" : g.name();
        r->gpu_spec.peak_flops = g.peak_flops();
        r->gpu_spec.mem_bw = g.mem_bw();
        r->gpu_spec.mem_bytes = g.mem_bytes();
        r->gpu_spec.link_bw = g.link_bw();
        r->gpu_spec.link_latency_s = g.link_latency_s();
        SPECPLAN_RETURN_IF_ERROR(
            Prefixed(absl::StrCat(mfield, ".gpu_spec"), costmodel::ValidateGpuSpec(r->gpu_spec)));
      } else {
        if (m.gpu().empty()) return Invalid(absl::StrCat(mfield, ".gpu: required (or gpu_spec)"));
        auto gpu = costmodel::LookupGpu(m.gpu());
        if (!gpu.ok()) return LookupRefused(mfield, ".gpu", m.gpu(), gpu.status());
        r->gpu_spec = *std::move(gpu);
      }
      if (!std::isfinite(m.linear_a()) || m.linear_a() < 0) {
        return Invalid(absl::StrCat(mfield, ".linear_a = ", m.linear_a(),
                                    ": must be a finite number >= 0 (0 = bare roofline)"));
      }
      SPECPLAN_RETURN_IF_ERROR(CheckSecondsAt(m.linear_b_s(), mfield, ".linear_b_s"));
      r->model_spec.tp = m.tp() == 0 ? 1 : m.tp();
      if (const std::string why =
              costmodel::TensorParallelProblem(r->model_spec, r->gpu_spec, r->model_spec.tp);
          !why.empty()) {
        return Invalid(absl::StrCat(mfield, ".tp = ", m.tp(), ": ", why));
      }
      r->has_specs = true;
      costmodel::RooflineLatency roofline(r->model_spec, r->gpu_spec);
      if (m.linear_a() > 0) {
        r->latency = std::make_shared<costmodel::LinearCalibratedLatency>(
            std::move(roofline), costmodel::LinearCoefficients{m.linear_a(), m.linear_b_s()});
      } else {
        r->latency = std::make_shared<costmodel::RooflineLatency>(std::move(roofline));
      }
      break;
    }
    case v1::CostSpec::kLatencyGrid: {
      SPECPLAN_ASSIGN_OR_RETURN(
          r->latency,
          LatencyGridFromProto(spec.latency_grid(), limits_, absl::StrCat(field, ".latency_grid")));
      break;
    }
    case v1::CostSpec::SOURCE_NOT_SET:
      return Invalid(absl::StrCat(field, ": set ", field, ".profile, ", field, ".inline_model or ",
                                  field, ".latency_grid"));
  }
  r->kind = r->latency->Kind();
  return std::shared_ptr<const CostSource>(std::move(r));
}

}  // namespace specplan::service
