// Calibration profiles: fitting one from samples (FitProfile), validating each kind's coefficients,
// the JSON form (ProfileToJson / ProfileFromJson; optional sections such as each fitted kind, cv,
// provenance and engine may be absent), atomic saving through util/Env, and the names of bundled
// profiles (ProfileId, BundledProfilePath; resolving one is costmodel/cost_spec.cc). Over 500
// lines because the JSON reader names every bad field; splitting the reader from the validators it
// calls would only move the same checks apart.

#include "costmodel/profile.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "costmodel/cost_spec.h"
#include "costmodel/model_registry.h"
#include "util/atomic_file.h"
#include "util/clock.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using json_util::GetBool;
using json_util::GetInt;
using json_util::GetNumber;
using json_util::GetString;

constexpr const char* kModelKinds[] = {"roofline", "linear",     "per_term",
                                       "overlap",  "kernel_sum", "table"};
constexpr const char* kTimers[] = {"cupti", "cuda_events", "host_clock", "external"};

bool OneOf(const std::string& v, const char* const* begin, const char* const* end) {
  for (auto it = begin; it != end; ++it) {
    if (v == *it) return true;
  }
  return false;
}

absl::StatusOr<double> NonNegative(const nlohmann::json& j, const std::string& key,
                                   const std::string& prefix) {
  SPECPLAN_ASSIGN_OR_RETURN(double v, GetNumber(j, key, prefix));
  if (v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(json_util::Field(prefix, key), " = ", v, ": must be >= 0"));
  }
  return v;
}

// One [c][s] layer of a table: an array of arrays of numbers; errors name `name`[ci][si].
absl::StatusOr<std::vector<std::vector<double>>> TableLayer(const nlohmann::json& j,
                                                            const std::string& name) {
  if (!j.is_array()) return absl::InvalidArgumentError(name + ": expected an array of arrays");
  std::vector<std::vector<double>> layer;
  for (size_t ci = 0; ci < j.size(); ++ci) {
    const nlohmann::json& row = j[ci];
    if (!row.is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(name, "[", ci, "]: expected an array"));
    }
    std::vector<double> r;
    for (size_t si = 0; si < row.size(); ++si) {
      if (!row[si].is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, "[", ci, "][", si, "] = ", row[si].dump(), ": expected a number"));
      }
      r.push_back(row[si].get<double>());
    }
    layer.push_back(std::move(r));
  }
  return layer;
}

absl::StatusOr<std::vector<int64_t>> IntArray(const nlohmann::json& j, const std::string& key,
                                              const std::string& prefix) {
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* arr, json_util::Get(j, key, prefix));
  const std::string field = json_util::Field(prefix, key);
  if (!arr->is_array())
    return absl::InvalidArgumentError(absl::StrCat(field, ": expected an array"));
  std::vector<int64_t> out;
  for (size_t i = 0; i < arr->size(); ++i) {
    if (!(*arr)[i].is_number_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, "[", i, "] = ", (*arr)[i].dump(), ": expected an integer"));
    }
    out.push_back((*arr)[i].get<int64_t>());
  }
  return out;
}

nlohmann::json StatsToJson(const FitStats& s) {
  return {{"n", s.n}, {"rmse_s", s.rmse_s}, {"mape", s.mape}, {"max_abs_s", s.max_abs_s}};
}

absl::StatusOr<FitStats> StatsFromJson(const nlohmann::json& j, const std::string& p) {
  FitStats s;
  SPECPLAN_ASSIGN_OR_RETURN(s.n, GetInt(j, "n", p));
  if (s.n < 0) return absl::InvalidArgumentError(absl::StrCat(p, ".n = ", s.n, ": must be >= 0"));
  SPECPLAN_ASSIGN_OR_RETURN(s.rmse_s, NonNegative(j, "rmse_s", p));
  SPECPLAN_ASSIGN_OR_RETURN(s.mape, NonNegative(j, "mape", p));
  SPECPLAN_ASSIGN_OR_RETURN(s.max_abs_s, NonNegative(j, "max_abs_s", p));
  return s;
}

absl::Status Prefixed(const std::string& prefix, const absl::Status& st) {
  if (st.ok()) return st;
  return absl::Status(st.code(), absl::StrCat(prefix, ".", st.message()));
}

}  // namespace

absl::Status ValidateLinear(const LinearCoefficients& c, const RooflineLatency& roofline) {
  if (!std::isfinite(c.a) || c.a <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("models.linear.a = ", c.a, ": must be > 0"));
  }
  if (!std::isfinite(c.b_s)) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.linear.b_s = ", c.b_s, ": must be finite"));
  }
  const double floor_s = c.a * roofline.VerifySeconds(1, 0) + c.b_s;
  if (!(floor_s > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models.linear.b_s = ", c.b_s, ": predicts ", floor_s,
        " s for one token over an empty cache (a * roofline(1, 0) + b_s with this gpu_spec and "
        "model_spec); must be > 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidatePerTerm(const PerTermCoefficients& c) {
  const std::pair<const char*, double> fields[] = {{"compute", c.compute},
                                                   {"compute_overhead_s", c.compute_overhead_s},
                                                   {"weights", c.weights},
                                                   {"kv_attention", c.kv_attention}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.per_term.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (c.compute == 0 && c.weights == 0 && c.kv_attention == 0) {
    return absl::InvalidArgumentError(
        "models.per_term: all multipliers are 0 (the model would predict no cost)");
  }
  return absl::OkStatus();
}

absl::Status ValidateOverlap(const OverlapCoefficients& c) {
  const std::pair<const char*, double> fields[] = {{"gemm", c.gemm},
                                                   {"attention", c.attention},
                                                   {"weights", c.weights},
                                                   {"kv_attention", c.kv_attention},
                                                   {"overhead_s", c.overhead_s}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.overlap.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (!std::isfinite(c.p) || c.p < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.overlap.p = ", c.p, ": must be finite and >= 1"));
  }
  if (c.tile < 1 || c.tile > 4096) {  // bounded so s rounded up to the tile cannot overflow
    return absl::InvalidArgumentError(
        absl::StrCat("models.overlap.tile = ", c.tile, ": must be in [1, 4096]"));
  }
  if (c.gemm == 0 && c.weights == 0) {
    return absl::InvalidArgumentError(
        "models.overlap: gemm and weights are both 0 (the model would not grow with the model "
        "size)");
  }
  return absl::OkStatus();
}

absl::Status ValidateKernelSum(const KernelSumCoefficients& c) {
  const std::pair<const char*, double> fields[] = {
      {"overhead_s", c.overhead_s}, {"gemm", c.gemm},
      {"weights", c.weights},       {"decode", c.decode},
      {"verify", c.verify},         {"verify_overhead_s", c.verify_overhead_s},
      {"attention", c.attention},   {"elementwise", c.elementwise}};
  for (const auto& [name, v] : fields) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("models.kernel_sum.", name, " = ", v, ": must be finite and >= 0"));
    }
  }
  if (!std::isfinite(c.p) || c.p < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.kernel_sum.p = ", c.p, ": must be finite and >= 1"));
  }
  if (c.tile < 1 || c.tile > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("models.kernel_sum.tile = ", c.tile, ": must be in [1, 4096]"));
  }
  if (c.attention_tile < 1 || c.attention_tile > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "models.kernel_sum.attention_tile = ", c.attention_tile, ": must be in [1, 65536]"));
  }
  if (c.gemm == 0 && c.weights == 0) {
    return absl::InvalidArgumentError(
        "models.kernel_sum: gemm and weights are both 0 (the model would not grow with the model "
        "size)");
  }
  return absl::OkStatus();
}

namespace {

// Fits one calibrated kind on `fit` into `p` (the model alone, for cross-validation fitters).
absl::Status FitKind(const std::string& kind, const RooflineLatency& roofline,
                     const std::vector<LatencySample>& fit, Profile* p) {
  if (kind == "linear") {
    SPECPLAN_ASSIGN_OR_RETURN(LinearCoefficients c, FitLinear(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateLinear(c, roofline));
    p->linear = c;
  } else if (kind == "per_term") {
    SPECPLAN_ASSIGN_OR_RETURN(PerTermCoefficients c, FitPerTerm(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidatePerTerm(c));
    p->per_term = c;
  } else if (kind == "overlap") {
    SPECPLAN_ASSIGN_OR_RETURN(OverlapCoefficients c, FitOverlap(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateOverlap(c));
    p->overlap = c;
  } else if (kind == "kernel_sum") {
    SPECPLAN_ASSIGN_OR_RETURN(KernelSumCoefficients c, FitKernelSum(roofline, fit));
    SPECPLAN_RETURN_IF_ERROR(ValidateKernelSum(c));
    p->kernel_sum = c;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("latency model '", kind, "': not fittable"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Profile> FitProfile(const ModelSpec& model, const GpuSpec& gpu,
                                   const std::vector<LatencySample>& samples,
                                   const FitOptions& options) {
  SPECPLAN_RETURN_IF_ERROR(ValidateSamples(samples));
  if (samples.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "samples: need >= 3 measurements to fit and cross-validate, got ", samples.size()));
  }
  if (!(options.heldout_fraction >= 0 && options.heldout_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("heldout_fraction = ", options.heldout_fraction, ": must be in [0, 1)"));
  }
  SPECPLAN_RETURN_IF_ERROR(ValidateModelSpec(model));
  if (const std::string why = TensorParallelProblem(model, gpu, model.tp); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", model.tp, ": ", why));
  }
  Profile p;
  p.gpu = gpu.name;
  p.model = model.name;
  p.dtype = model.dtype;
  p.gpu_spec = gpu;
  p.model_spec = model;
  p.created_utc = UtcTimestamp();

  std::vector<LatencySample> fit, held;
  SplitHoldout(samples, options.heldout_fraction, options.seed, &fit, &held);
  if (fit.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat("heldout_fraction = ", options.heldout_fraction,
                                                   ": leaves ", fit.size(), " of ", samples.size(),
                                                   " samples to fit; need >= 3"));
  }
  RooflineLatency roofline(model, gpu);
  for (const LatencySample& x : held) p.samples.push_back({x, true});
  for (const LatencySample& x : fit) p.samples.push_back({x, false});

  const int folds = fit.size() <= kMaxLeaveOneOut ? static_cast<int>(fit.size()) : 10;
  p.cv_method =
      folds == static_cast<int>(fit.size()) ? "leave-one-out" : absl::StrCat(folds, "-fold");
  // The roofline has nothing to fit: its cross-validated score is its plain score.
  p.cv["roofline"] = Evaluate(roofline, fit);
  double best = std::numeric_limits<double>::infinity();
  for (const std::string kind : {"linear", "per_term", "overlap", "kernel_sum"}) {
    if (absl::Status st = FitKind(kind, roofline, fit, &p); !st.ok()) {
      p.notes.push_back(absl::StrCat(kind, ": dropped: ", st.message()));
      continue;
    }
    LatencyFitter fitter = [&](const std::vector<LatencySample>& part)
        -> absl::StatusOr<std::unique_ptr<LatencyModel>> {
      Profile q;
      q.model_spec = model;
      q.gpu_spec = gpu;
      SPECPLAN_RETURN_IF_ERROR(FitKind(kind, roofline, part, &q));
      return MakeLatencyModel(q, kind);
    };
    absl::StatusOr<FitStats> cv = CrossValidate(fitter, fit, folds, options.seed);
    if (!cv.ok()) {
      p.notes.push_back(absl::StrCat(kind, ": not cross-validated (", p.cv_method,
                                     "), so not a default candidate: ", cv.status().message()));
      continue;
    }
    p.cv[kind] = *cv;
    if (cv->mape < best) {
      best = cv->mape;
      p.default_model = kind;
    }
  }
  if (!std::isfinite(best)) {
    p.notes.push_back("no calibrated model survived: the default is the bare roofline");
  }
  // The table needs the full grid, so it is built from all samples; its held-out score is then
  // an in-sample figure, it is not cross-validated and never the default.
  // Batch samples add layers when they cover the grid; else the table keeps the b = 1 layer.
  absl::StatusOr<LatencyTable> table = BuildTable(samples);
  if (!table.ok()) {
    const std::string why = std::string(table.status().message());
    std::vector<LatencySample> single;  // the b = 1 samples: the table without batch layers
    for (const LatencySample& x : samples) {
      if (x.b == 1) single.push_back(x);
    }
    if (single.size() < samples.size()) table = BuildTable(single);
    p.notes.push_back(
        table.ok() ? absl::StrCat("table: single sequences only, batch layers skipped: ", why)
                   : absl::StrCat("table: skipped: ", why));
  }
  if (table.ok()) p.table = *std::move(table);
  if (!held.empty()) {
    for (const char* kind : kModelKinds) {
      auto m = MakeLatencyModel(p, kind);
      if (m.ok()) p.heldout[kind] = Evaluate(**m, held);
    }
  }
  // What is returned must load: a last check with the loader itself.
  if (auto back = ProfileFromJson(ProfileToJson(p)); !back.ok()) {
    return absl::InternalError(
        absl::StrCat("fit produced a profile the loader rejects: ", back.status().message()));
  }
  return p;
}

std::string DescribeFit(const Profile& p) {
  int64_t held = 0;
  for (const ProfileSample& x : p.samples) held += x.heldout ? 1 : 0;
  std::string out = absl::StrFormat("samples  %d fitted, %d held out\n",
                                    static_cast<int64_t>(p.samples.size()) - held, held);
  std::map<int64_t, int64_t> per_b;  // samples per batch size
  for (const ProfileSample& x : p.samples) ++per_b[x.sample.b];
  if (per_b.size() > 1 || per_b.count(1) == 0) {
    std::vector<std::string> parts;
    for (const auto& [b, n] : per_b) parts.push_back(absl::StrCat("b=", b, ": ", n));
    absl::StrAppend(&out, "batches  ", absl::StrJoin(parts, ", "), " (passes of b sequences)\n");
  }
  if (!p.provenance.empty()) absl::StrAppendFormat(&out, "source   %s\n", p.provenance);
  if (p.model_spec.tp > 1) {
    absl::StrAppendFormat(&out, "tp       %d GPUs (per-GPU terms + all-reduces)\n",
                          p.model_spec.tp);
  }
  absl::StrAppendFormat(&out, "default  %s (lowest %s MAPE)\n", p.default_model,
                        p.cv_method.empty() ? "cross-validated" : p.cv_method);
  for (const char* kind : kModelKinds) {
    auto cv = p.cv.find(kind);
    auto ho = p.heldout.find(kind);
    if (cv == p.cv.end() && ho == p.heldout.end()) continue;
    std::string line = absl::StrFormat("  %-10s", kind);
    if (cv != p.cv.end()) {
      absl::StrAppendFormat(&line, "  cv MAPE %6.2f%%  RMSE %.4f ms  max %.4f ms",
                            100 * cv->second.mape, cv->second.rmse_s * 1e3,
                            cv->second.max_abs_s * 1e3);
    } else {
      absl::StrAppend(&line, "  cv --- (not cross-validated)                     ");
    }
    if (ho != p.heldout.end()) {
      absl::StrAppendFormat(
          &line, "  held-out MAPE %6.2f%%  RMSE %.4f ms (n=%d)%s", 100 * ho->second.mape,
          ho->second.rmse_s * 1e3, ho->second.n,
          std::string(kind) == "table" ? " in-sample: the table holds every cell" : "");
    }
    absl::StrAppend(&out, line, "\n");
  }
  for (const std::string& note : p.notes) absl::StrAppend(&out, "note     ", note, "\n");
  return out;
}

nlohmann::json ProfileToJson(const Profile& p) {
  nlohmann::json j;
  j["format"] = "specplan.profile";
  j["version"] = kProfileVersion;
  j["gpu"] = p.gpu;
  j["model"] = p.model;
  j["dtype"] = DTypeName(p.dtype);
  j["gpu_spec"] = GpuSpecToJson(p.gpu_spec);
  j["model_spec"] = ModelSpecToJson(p.model_spec);
  j["device_name"] = p.device_name;
  j["timer"] = p.timer;
  j["software"] = p.software;
  j["created_utc"] = p.created_utc;
  j["default_model"] = p.default_model;
  nlohmann::json models = nlohmann::json::object();
  if (p.linear) models["linear"] = {{"a", p.linear->a}, {"b_s", p.linear->b_s}};
  if (p.per_term) {
    models["per_term"] = {{"compute", p.per_term->compute},
                          {"compute_overhead_s", p.per_term->compute_overhead_s},
                          {"weights", p.per_term->weights},
                          {"kv_attention", p.per_term->kv_attention}};
  }
  if (p.overlap) {
    models["overlap"] = {{"gemm", p.overlap->gemm},
                         {"attention", p.overlap->attention},
                         {"weights", p.overlap->weights},
                         {"kv_attention", p.overlap->kv_attention},
                         {"p", p.overlap->p},
                         {"overhead_s", p.overlap->overhead_s},
                         {"tile", p.overlap->tile}};
  }
  if (p.kernel_sum) {
    const KernelSumCoefficients& k = *p.kernel_sum;
    models["kernel_sum"] = {{"overhead_s", k.overhead_s},
                            {"gemm", k.gemm},
                            {"weights", k.weights},
                            {"p", k.p},
                            {"tile", k.tile},
                            {"decode", k.decode},
                            {"verify", k.verify},
                            {"verify_overhead_s", k.verify_overhead_s},
                            {"attention_tile", k.attention_tile},
                            {"attention", k.attention},
                            {"elementwise", k.elementwise}};
  }
  if (p.table) {
    models["table"] = {
        {"s", p.table->s_grid}, {"c", p.table->c_grid}, {"seconds", p.table->seconds}};
    if (!p.table->b_grid.empty()) {
      models["table"]["b"] = p.table->b_grid;
      models["table"]["batch_seconds"] = p.table->batch_seconds;
      if (!p.table->batch_s_grid.empty()) models["table"]["batch_s"] = p.table->batch_s_grid;
      if (!p.table->batch_c_grid.empty()) models["table"]["batch_c"] = p.table->batch_c_grid;
    }
  }
  j["models"] = models;
  nlohmann::json held = nlohmann::json::object();
  for (const auto& [kind, stats] : p.heldout) held[kind] = StatsToJson(stats);
  j["heldout"] = held;
  nlohmann::json cv = nlohmann::json::object();
  for (const auto& [kind, stats] : p.cv) cv[kind] = StatsToJson(stats);
  j["cv"] = cv;
  j["cv_method"] = p.cv_method;
  j["provenance"] = p.provenance;
  j["engine"] = p.engine.empty() ? std::string(kRuntimeEngine) : p.engine;
  if (!p.engine_version.empty()) j["engine_version"] = p.engine_version;
  j["notes"] = p.notes;
  nlohmann::json samples = nlohmann::json::array();
  for (const ProfileSample& x : p.samples) {
    nlohmann::json sample = {{"s", x.sample.s},
                             {"c", x.sample.c},
                             {"seconds", x.sample.seconds},
                             {"heldout", x.heldout}};
    if (x.sample.b != 1) sample["b"] = x.sample.b;  // absent = a single sequence
    samples.push_back(std::move(sample));
  }
  j["samples"] = samples;
  return j;
}

absl::StatusOr<Profile> ProfileFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("profile: expected a JSON object");
  Profile p;
  SPECPLAN_ASSIGN_OR_RETURN(std::string format, GetString(j, "format"));
  if (format != "specplan.profile") {
    return absl::InvalidArgumentError(
        absl::StrCat("format = '", format, "': expected 'specplan.profile'"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(int64_t version, GetInt(j, "version"));
  if (version != kProfileVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("version = ", version, ": this build reads version ", kProfileVersion));
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.gpu, GetString(j, "gpu"));
  SPECPLAN_ASSIGN_OR_RETURN(p.model, GetString(j, "model"));
  SPECPLAN_ASSIGN_OR_RETURN(std::string dtype, GetString(j, "dtype"));
  SPECPLAN_ASSIGN_OR_RETURN(p.dtype, ParseDType(dtype));
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* gj, json_util::Get(j, "gpu_spec"));
  auto gpu = GpuSpecFromJson(*gj);
  if (!gpu.ok()) return Prefixed("gpu_spec", gpu.status());
  p.gpu_spec = *gpu;
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* mj, json_util::Get(j, "model_spec"));
  SPECPLAN_ASSIGN_OR_RETURN(p.model_spec, ModelSpecFromJson(*mj));
  if (p.model_spec.dtype != p.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("model_spec.dtype = '",
                                                   DTypeName(p.model_spec.dtype),
                                                   "': does not match dtype = '", dtype, "'"));
  }
  if (const std::string why = TensorParallelProblem(p.model_spec, p.gpu_spec, p.model_spec.tp);
      !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("model_spec.tp = ", p.model_spec.tp, ": ", why));
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.device_name, GetString(j, "device_name"));
  SPECPLAN_ASSIGN_OR_RETURN(p.timer, GetString(j, "timer"));
  if (!OneOf(p.timer, std::begin(kTimers), std::end(kTimers))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timer = '", p.timer, "': expected cupti, cuda_events, host_clock or external"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* sw, json_util::Get(j, "software"));
  if (!sw->is_object()) return absl::InvalidArgumentError("software: expected an object");
  for (auto it = sw->begin(); it != sw->end(); ++it) {
    if (!it.value().is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("software.", it.key(), " = ", it.value().dump(), ": expected a string"));
    }
    p.software[it.key()] = it.value().get<std::string>();
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.created_utc, GetString(j, "created_utc"));

  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* models, json_util::Get(j, "models"));
  if (!models->is_object()) return absl::InvalidArgumentError("models: expected an object");
  for (auto it = models->begin(); it != models->end(); ++it) {
    if (it.key() != "linear" && it.key() != "per_term" && it.key() != "overlap" &&
        it.key() != "kernel_sum" && it.key() != "table") {
      return absl::InvalidArgumentError(absl::StrCat(
          "models.", it.key(),
          ": unknown model kind (known: linear, per_term, overlap, kernel_sum, table)"));
    }
  }
  if (models->contains("linear")) {
    const nlohmann::json& m = (*models)["linear"];
    LinearCoefficients c;
    SPECPLAN_ASSIGN_OR_RETURN(c.a, GetNumber(m, "a", "models.linear"));
    SPECPLAN_ASSIGN_OR_RETURN(c.b_s, GetNumber(m, "b_s", "models.linear"));
    SPECPLAN_RETURN_IF_ERROR(ValidateLinear(c, RooflineLatency(p.model_spec, p.gpu_spec)));
    p.linear = c;
  }
  if (models->contains("per_term")) {
    const nlohmann::json& m = (*models)["per_term"];
    const std::string pre = "models.per_term";
    PerTermCoefficients c;
    SPECPLAN_ASSIGN_OR_RETURN(c.compute, NonNegative(m, "compute", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.compute_overhead_s, NonNegative(m, "compute_overhead_s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.weights, NonNegative(m, "weights", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.kv_attention, NonNegative(m, "kv_attention", pre));
    SPECPLAN_RETURN_IF_ERROR(ValidatePerTerm(c));
    p.per_term = c;
  }
  if (models->contains("overlap")) {
    const nlohmann::json& m = (*models)["overlap"];
    const std::string pre = "models.overlap";
    OverlapCoefficients c;
    SPECPLAN_ASSIGN_OR_RETURN(c.gemm, NonNegative(m, "gemm", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.attention, NonNegative(m, "attention", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.weights, NonNegative(m, "weights", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.kv_attention, NonNegative(m, "kv_attention", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.p, GetNumber(m, "p", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.overhead_s, NonNegative(m, "overhead_s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.tile, GetInt(m, "tile", pre));
    SPECPLAN_RETURN_IF_ERROR(ValidateOverlap(c));
    p.overlap = c;
  }
  if (models->contains("kernel_sum")) {
    const nlohmann::json& m = (*models)["kernel_sum"];
    const std::string pre = "models.kernel_sum";
    KernelSumCoefficients c;
    SPECPLAN_ASSIGN_OR_RETURN(c.overhead_s, NonNegative(m, "overhead_s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.gemm, NonNegative(m, "gemm", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.weights, NonNegative(m, "weights", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.p, GetNumber(m, "p", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.tile, GetInt(m, "tile", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.decode, NonNegative(m, "decode", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.verify, NonNegative(m, "verify", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.verify_overhead_s, NonNegative(m, "verify_overhead_s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.attention_tile, GetInt(m, "attention_tile", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.attention, NonNegative(m, "attention", pre));
    SPECPLAN_ASSIGN_OR_RETURN(c.elementwise, NonNegative(m, "elementwise", pre));
    SPECPLAN_RETURN_IF_ERROR(ValidateKernelSum(c));
    p.kernel_sum = c;
  }
  if (models->contains("table")) {
    const nlohmann::json& m = (*models)["table"];
    const std::string pre = "models.table";
    LatencyTable t;
    SPECPLAN_ASSIGN_OR_RETURN(t.s_grid, IntArray(m, "s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(t.c_grid, IntArray(m, "c", pre));
    SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* sec, json_util::Get(m, "seconds", pre));
    SPECPLAN_ASSIGN_OR_RETURN(t.seconds, TableLayer(*sec, "models.table.seconds"));
    // Optional batch axis: both keys or neither.
    if (m.contains("b") != m.contains("batch_seconds")) {
      return absl::InvalidArgumentError(
          "models.table: \"b\" and \"batch_seconds\" come together (the batch axis)");
    }
    if (m.contains("b")) {
      SPECPLAN_ASSIGN_OR_RETURN(t.b_grid, IntArray(m, "b", pre));
      const nlohmann::json& layers = m["batch_seconds"];
      if (!layers.is_array()) {
        return absl::InvalidArgumentError(
            "models.table.batch_seconds: expected an array of [c][s] arrays");
      }
      for (size_t bi = 0; bi < layers.size(); ++bi) {
        SPECPLAN_ASSIGN_OR_RETURN(
            std::vector<std::vector<double>> layer,
            TableLayer(layers[bi], absl::StrCat("models.table.batch_seconds[", bi, "]")));
        t.batch_seconds.push_back(std::move(layer));
      }
    }
    // Optional grid of the batch layers (absent: the single-sequence grid).
    if (m.contains("batch_s")) {
      SPECPLAN_ASSIGN_OR_RETURN(t.batch_s_grid, IntArray(m, "batch_s", pre));
    }
    if (m.contains("batch_c")) {
      SPECPLAN_ASSIGN_OR_RETURN(t.batch_c_grid, IntArray(m, "batch_c", pre));
    }
    SPECPLAN_RETURN_IF_ERROR(Prefixed(pre, ValidateLatencyTable(t)));
    p.table = std::move(t);
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.default_model, GetString(j, "default_model"));
  if (!OneOf(p.default_model, std::begin(kModelKinds), std::end(kModelKinds))) {
    return absl::InvalidArgumentError(
        absl::StrCat("default_model = '", p.default_model,
                     "': expected roofline, linear, per_term, overlap, kernel_sum or table"));
  }
  if ((p.default_model == "linear" && !p.linear) ||
      (p.default_model == "per_term" && !p.per_term) ||
      (p.default_model == "overlap" && !p.overlap) ||
      (p.default_model == "kernel_sum" && !p.kernel_sum) ||
      (p.default_model == "table" && !p.table)) {
    return absl::InvalidArgumentError(absl::StrCat("default_model = '", p.default_model,
                                                   "': models.", p.default_model, " is missing"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* held, json_util::Get(j, "heldout"));
  if (!held->is_object()) return absl::InvalidArgumentError("heldout: expected an object");
  for (auto it = held->begin(); it != held->end(); ++it) {
    SPECPLAN_ASSIGN_OR_RETURN(p.heldout[it.key()],
                              StatsFromJson(it.value(), absl::StrCat("heldout.", it.key())));
  }
  // Optional keys (absent from profiles written before they existed).
  if (j.contains("cv")) {
    const nlohmann::json& cv = j["cv"];
    if (!cv.is_object()) return absl::InvalidArgumentError("cv: expected an object");
    for (auto it = cv.begin(); it != cv.end(); ++it) {
      SPECPLAN_ASSIGN_OR_RETURN(p.cv[it.key()],
                                StatsFromJson(it.value(), absl::StrCat("cv.", it.key())));
    }
  }
  if (j.contains("cv_method")) {
    SPECPLAN_ASSIGN_OR_RETURN(p.cv_method, GetString(j, "cv_method"));
  }
  if (j.contains("provenance")) {
    SPECPLAN_ASSIGN_OR_RETURN(p.provenance, GetString(j, "provenance"));
  }
  if (j.contains("engine")) {
    SPECPLAN_ASSIGN_OR_RETURN(std::string engine, GetString(j, "engine"));
    absl::StatusOr<std::string> canonical = ParseEngine(engine);
    if (!canonical.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "engine = '", engine, "': unknown (known: ", absl::StrJoin(KnownEngines(), ", "), ")"));
    }
    p.engine = *canonical;
  }
  if (j.contains("engine_version")) {
    SPECPLAN_ASSIGN_OR_RETURN(p.engine_version, GetString(j, "engine_version"));
  }
  if (j.contains("notes")) {
    const nlohmann::json& notes = j["notes"];
    if (!notes.is_array()) return absl::InvalidArgumentError("notes: expected an array");
    for (size_t i = 0; i < notes.size(); ++i) {
      if (!notes[i].is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("notes[", i, "] = ", notes[i].dump(), ": expected a string"));
      }
      p.notes.push_back(notes[i].get<std::string>());
    }
  }
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* samples, json_util::Get(j, "samples"));
  if (!samples->is_array()) return absl::InvalidArgumentError("samples: expected an array");
  for (size_t i = 0; i < samples->size(); ++i) {
    const nlohmann::json& x = (*samples)[i];
    const std::string pre = absl::StrCat("samples[", i, "]");
    ProfileSample ps;
    SPECPLAN_ASSIGN_OR_RETURN(ps.sample.s, GetInt(x, "s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(ps.sample.c, GetInt(x, "c", pre));
    SPECPLAN_ASSIGN_OR_RETURN(ps.sample.seconds, GetNumber(x, "seconds", pre));
    SPECPLAN_ASSIGN_OR_RETURN(ps.heldout, GetBool(x, "heldout", pre));
    if (x.contains("b")) {
      SPECPLAN_ASSIGN_OR_RETURN(ps.sample.b, GetInt(x, "b", pre));
    }
    p.samples.push_back(ps);
  }
  std::vector<LatencySample> plain;
  for (const ProfileSample& x : p.samples) plain.push_back(x.sample);
  SPECPLAN_RETURN_IF_ERROR(ValidateSamples(plain));
  return p;
}

absl::StatusOr<Profile> LoadProfile(const std::string& path) {
  SPECPLAN_ASSIGN_OR_RETURN(nlohmann::json j, json_util::ReadJsonFile(path));
  auto p = ProfileFromJson(j);
  if (!p.ok())
    return absl::Status(p.status().code(), absl::StrCat(path, ": ", p.status().message()));
  return p;
}

absl::Status SaveProfile(const Profile& profile, const std::string& path, Env* env) {
  return WriteFileAtomically(path, ProfileToJson(profile).dump(2) + "\n", env);
}

absl::StatusOr<std::unique_ptr<LatencyModel>> MakeLatencyModel(const Profile& p,
                                                               const std::string& kind_in) {
  const std::string kind = kind_in.empty() ? p.default_model : kind_in;
  ModelSpec model = p.model_spec;
  RooflineLatency roofline(model, p.gpu_spec);
  if (kind == "roofline") return std::make_unique<RooflineLatency>(roofline);
  if (kind == "linear" && p.linear) {
    return std::make_unique<LinearCalibratedLatency>(roofline, *p.linear);
  }
  if (kind == "per_term" && p.per_term) {
    return std::make_unique<PerTermLatency>(roofline, *p.per_term);
  }
  if (kind == "overlap" && p.overlap) {
    return std::make_unique<OverlapLatency>(roofline, *p.overlap);
  }
  if (kind == "kernel_sum" && p.kernel_sum) {
    return std::make_unique<KernelSumLatency>(roofline, *p.kernel_sum);
  }
  if (kind == "table" && p.table) return std::make_unique<TableLatency>(roofline, *p.table);
  if (OneOf(kind, std::begin(kModelKinds), std::end(kModelKinds))) {
    return absl::NotFoundError(absl::StrCat("latency model '", kind, "': not in this profile"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("latency model '", kind,
                   "': unknown kind (known: ", absl::StrJoin(LatencyModelKinds(), ", "), ")"));
}

namespace {
// "" at tp = 1 (so every name from before tensor parallelism stays the same), else "-tp<N>".
std::string TpSuffix(int64_t tp) { return tp == 1 ? "" : absl::StrCat("-tp", tp); }
// "" for this project's own runtime (so every name from before engines stays the same), else
// "@<engine>".
std::string EngineSuffix(const std::string& engine) {
  return engine.empty() || engine == kRuntimeEngine ? "" : absl::StrCat("@", engine);
}
}  // namespace

std::string ProfileId(const std::string& gpu, const std::string& model, DType dtype, int64_t tp,
                      const std::string& engine) {
  return absl::StrCat(gpu, "/", model, "-", DTypeName(dtype), TpSuffix(tp), EngineSuffix(engine));
}

const std::vector<std::string>& LatencyModelKinds() {
  static const std::vector<std::string> kinds(std::begin(kModelKinds), std::end(kModelKinds));
  return kinds;
}

const std::vector<std::string>& KnownEngines() {
  static const std::vector<std::string> engines = {"sglang", "vllm", "trtllm", kRuntimeEngine};
  return engines;
}

absl::StatusOr<std::string> ParseEngine(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const std::string& engine : KnownEngines()) {
    if (lower == engine) return engine;
  }
  for (const char* alias : {"tensorrt-llm", "tensorrt_llm", "trt-llm", "trt_llm"}) {
    if (lower == alias) return std::string("trtllm");
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "engine '", name, "': unknown (known: ", absl::StrJoin(KnownEngines(), ", "), ")"));
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
  return (fs::path(calib_dir) / gpu /
          absl::StrCat(model, "-", DTypeName(dtype), TpSuffix(tp), EngineSuffix(engine), ".json"))
      .string();
}

absl::StatusOr<ResolvedLatencyModel> ResolveLatencyModel(const std::string& model,
                                                         const std::string& gpu,
                                                         const std::string& profile_path,
                                                         DType dtype, const std::string& kind,
                                                         int64_t tp) {
  CostSpec spec;
  spec.model = model;
  spec.gpu = gpu;
  spec.profile_path = profile_path;
  spec.dtype = dtype;
  spec.latency_model = kind;
  spec.tp = tp;
  return ResolveCost(spec);
}

absl::StatusOr<std::unique_ptr<LatencyModel>> LoadLatencyModel(const std::string& model,
                                                               const std::string& gpu,
                                                               const std::string& profile_path) {
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedLatencyModel r, ResolveLatencyModel(model, gpu, profile_path));
  return std::move(r.model);
}

}  // namespace specplan::costmodel
