// ResolveCost: cost spec -> latency model (explicit profile, bundled profile of an engine, or the
// bare roofline), with the checks that the pieces agree.

#include "costmodel/cost_spec.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/latency/roofline.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;

bool IsFile(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// "(bf16)", "(bf16-tp4)": the dtype and tp part of a profile's name, for messages.
std::string Variant(DType dtype, int64_t tp) {
  return absl::StrCat("(", DTypeName(dtype), tp == 1 ? "" : absl::StrCat("-tp", tp), ")");
}

// Fills `out` from a loaded profile.
absl::Status UseProfile(const Profile& p, const std::string& path, const std::string& kind,
                        ResolvedLatencyModel* out) {
  auto m = MakeLatencyModel(p, kind);
  if (!m.ok()) {
    if (kind.empty()) return m.status();
    return absl::Status(m.status().code(),
                        absl::StrCat("latency_model = '", kind, "': ", m.status().message()));
  }
  out->model = *std::move(m);
  out->model_spec = p.model_spec;
  out->gpu_spec = p.gpu_spec;
  out->profile_path = path;
  out->profile_id = ProfileId(p.gpu, p.model, p.dtype, p.model_spec.tp, p.engine);
  out->provenance = p.provenance;
  out->engine = p.engine;
  out->engine_version = p.engine_version;
  out->drafters = p.drafters;
  return absl::OkStatus();
}

// An explicit profile file: it must match every name the spec gives.
absl::StatusOr<ResolvedLatencyModel> ResolveProfileFile(const CostSpec& spec,
                                                        const std::string& engine) {
  ResolvedLatencyModel out;
  const std::string& path = spec.profile_path;
  SPECPLAN_ASSIGN_OR_RETURN(Profile p, LoadProfile(path));
  // The profile's own names always match (e.g. calibrate's runtime models such as "tiny", which
  // are not in the registry); other names resolve and must be the same model.
  if (!spec.model.empty() && spec.model != p.model && spec.model != p.model_spec.name) {
    SPECPLAN_ASSIGN_OR_RETURN(ModelSpec m, ResolveModel(spec.model));
    if (m.name != p.model_spec.name) {
      return absl::InvalidArgumentError(absl::StrCat("model = '", spec.model, "': profile ", path,
                                                     " is for model '", p.model_spec.name, "'"));
    }
  }
  if (!spec.gpu.empty() && spec.gpu != p.gpu && spec.gpu != p.gpu_spec.name) {
    SPECPLAN_ASSIGN_OR_RETURN(GpuSpec g, ResolveGpu(spec.gpu));
    if (g.name != p.gpu_spec.name) {
      return absl::InvalidArgumentError(absl::StrCat("gpu = '", spec.gpu, "': profile ", path,
                                                     " is for gpu '", p.gpu_spec.name, "'"));
    }
  }
  if (spec.tp != 0 && spec.tp != p.model_spec.tp) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", spec.tp, ": profile ", path,
                                                   " was fitted at tp = ", p.model_spec.tp));
  }
  if (!engine.empty() && engine != p.engine) {
    return absl::InvalidArgumentError(absl::StrCat("engine = '", spec.engine, "': profile ", path,
                                                   " describes engine '", p.engine, "'"));
  }
  SPECPLAN_RETURN_IF_ERROR(UseProfile(p, path, spec.latency_model, &out));
  return out;
}

}  // namespace

ProfileLookup CalibDirLookup(const std::string& calib_dir) {
  return [dir = calib_dir.empty() ? DefaultCalibDir() : calib_dir](
             const ProfileKey& key) -> absl::StatusOr<FoundProfile> {
    FoundProfile found;
    found.source = BundledProfilePath(dir, key.gpu, key.model, key.dtype, key.tp, key.engine);
    if (!IsFile(found.source)) {
      return absl::NotFoundError(absl::StrCat("no profile at ", found.source));
    }
    SPECPLAN_ASSIGN_OR_RETURN(Profile p, LoadProfile(found.source));
    found.profile = std::make_shared<const Profile>(std::move(p));
    return found;
  };
}

std::vector<std::string> EngineCandidates(const std::string& engine, const std::string& preferred) {
  if (!engine.empty()) return {engine};
  std::vector<std::string> order;
  if (!preferred.empty()) order.push_back(preferred);
  for (const std::string& e : KnownEngines()) {
    if (e != preferred) order.push_back(e);
  }
  return order;
}

absl::StatusOr<FoundProfile> ChooseProfile(const ProfileLookup& lookup, const ProfileKey& key,
                                           const std::string& preferred) {
  ProfileKey k = key;
  for (const std::string& e : EngineCandidates(key.engine, preferred)) {
    k.engine = e;
    absl::StatusOr<FoundProfile> found = lookup(k);
    if (found.ok()) {
      found->engine = e;
      return found;
    }
    if (!absl::IsNotFound(found.status())) return found;
  }
  return absl::NotFoundError(absl::StrCat(
      "no profile for ", key.gpu, " x ", key.model, " ", Variant(key.dtype, key.tp), " of engine ",
      key.engine.empty() ? absl::StrJoin(EngineCandidates("", preferred), ", ") : key.engine));
}

std::vector<std::string> HeldEngines(const ProfileLookup& lookup, const ProfileKey& key) {
  std::vector<std::string> held;
  ProfileKey k = key;
  for (const std::string& e : KnownEngines()) {
    k.engine = e;
    if (lookup(k).ok()) held.push_back(e);
  }
  return held;
}

std::vector<std::string> BundledEngines(const std::string& calib_dir, const std::string& gpu,
                                        const std::string& model, DType dtype, int64_t tp) {
  std::vector<std::string> found;
  for (const std::string& engine : KnownEngines()) {
    if (IsFile(BundledProfilePath(calib_dir, gpu, model, dtype, tp, engine))) {
      found.push_back(engine);
    }
  }
  return found;
}

absl::StatusOr<ResolvedLatencyModel> ResolveCost(const CostSpec& spec) {
  if (spec.tp < 0) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", spec.tp, ": must be >= 1"));
  }
  std::string engine;  // canonical; "" = not given
  if (!spec.engine.empty()) {
    absl::StatusOr<std::string> parsed = ParseEngine(spec.engine);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("engine = '", spec.engine,
                       "': unknown (known: ", absl::StrJoin(KnownEngines(), ", "), ")"));
    }
    engine = *parsed;
  }
  if (!spec.profile_path.empty()) return ResolveProfileFile(spec, engine);

  ResolvedLatencyModel out;
  SPECPLAN_ASSIGN_OR_RETURN(out.model_spec, ResolveModel(spec.model));
  out.model_spec.dtype = spec.dtype;
  SPECPLAN_ASSIGN_OR_RETURN(out.gpu_spec, ResolveGpu(spec.gpu));
  const int64_t tp = spec.tp == 0 ? 1 : spec.tp;
  out.model_spec.tp = tp;
  if (const std::string why = TensorParallelProblem(out.model_spec, out.gpu_spec, tp);
      !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", tp, ": ", why));
  }
  const std::string calib_dir = spec.calib_dir.empty() ? DefaultCalibDir() : spec.calib_dir;
  const std::string& gpu = out.gpu_spec.name;
  const std::string& model = out.model_spec.name;
  // The engine rule (a named engine alone, else KnownEngines() order) is ChooseProfile's, over the
  // bundled files; the server applies the same to its ProfileStore (service/cost_resolver.h).
  absl::StatusOr<FoundProfile> found =
      ChooseProfile(CalibDirLookup(calib_dir), ProfileKey{gpu, model, spec.dtype, tp, engine});
  if (found.ok()) {
    const Profile& p = *found->profile;
    const std::string& path = found->source;
    if (p.model_spec.tp != tp) {
      return absl::InvalidArgumentError(
          absl::StrCat("tp = ", tp, ": profile ", path, " was fitted at tp = ", p.model_spec.tp));
    }
    const std::string& e = found->engine;  // the engine the file name says
    if (p.engine != e) {  // a file under another engine's name: its costs are not what we asked
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": engine = '", p.engine, "': the file name says engine '", e, "'"));
    }
    SPECPLAN_RETURN_IF_ERROR(UseProfile(p, path, spec.latency_model, &out));
    return out;
  }
  if (!absl::IsNotFound(found.status())) return found.status();

  const std::string what = absl::StrCat(gpu, " x ", model, " ", Variant(spec.dtype, tp));
  const std::string& kind = spec.latency_model;
  const bool wants_fit = !kind.empty() && kind != "roofline";
  if (!engine.empty()) {
    // A named engine is a claim about whose kernels the costs describe: the bare roofline is no
    // engine's, so it never stands in silently.
    const std::string path = BundledProfilePath(calib_dir, gpu, model, spec.dtype, tp, engine);
    const std::vector<std::string> shipped = BundledEngines(calib_dir, gpu, model, spec.dtype, tp);
    const std::string rest = absl::StrCat(" at ", path, "; shipped for this GPU and model: ",
                                          shipped.empty() ? "none" : absl::StrJoin(shipped, ", "),
                                          " (or set profile_path)");
    if (wants_fit) {
      return absl::NotFoundError(absl::StrCat("latency_model = '", kind, "': no profile for ", what,
                                              " of engine ", engine, rest));
    }
    return absl::NotFoundError(
        absl::StrCat("engine = '", spec.engine, "': no profile for ", what, rest));
  }
  if (wants_fit) {
    std::vector<std::string> others;  // the engine-grade names also looked for
    for (const std::string& e : KnownEngines()) {
      if (e != kRuntimeEngine) others.push_back("@" + e);
    }
    return absl::NotFoundError(
        absl::StrCat("latency_model = '", kind, "': no profile for ", what, " at ",
                     BundledProfilePath(calib_dir, gpu, model, spec.dtype, tp), " (nor its ",
                     absl::StrJoin(others, ", "),
                     " files); only 'roofline' is available (or set profile_path)"));
  }
  out.model = std::make_unique<RooflineLatency>(out.model_spec, out.gpu_spec);
  return out;
}

absl::Status CostErrorInNames(const absl::Status& status, const std::vector<CostFieldName>& names) {
  if (status.ok()) return status;
  const absl::string_view msg = status.message();
  const size_t colon = msg.find(": ");
  if (colon == absl::string_view::npos) return status;
  std::string profile_name = "profile_path";
  for (const CostFieldName& n : names) {
    if (absl::string_view(n.field) == "profile_path") profile_name = n.name;
  }
  for (const CostFieldName& n : names) {
    const std::string lead = absl::StrCat(n.field, " = ");
    if (msg.substr(0, lead.size()) != lead) continue;
    absl::string_view value = msg.substr(lead.size(), colon - lead.size());
    if (value.size() >= 2 && value.front() == '\'' && value.back() == '\'') {
      value = value.substr(1, value.size() - 2);
    }
    const std::string rest = absl::StrReplaceAll(
        msg.substr(colon),
        {{"(or set profile_path)", absl::StrCat("(or pass ", profile_name, ")")}});
    return absl::Status(status.code(), absl::StrCat(n.name, " ", value, rest));
  }
  return status;
}

}  // namespace specplan::costmodel
