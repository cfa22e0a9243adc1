#include "costmodel/profile.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "costmodel/atomic_file.h"
#include "costmodel/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;
using json_util::GetBool;
using json_util::GetInt;
using json_util::GetNumber;
using json_util::GetString;

constexpr const char* kModelKinds[] = {"roofline", "linear", "per_term", "table"};
constexpr const char* kTimers[] = {"cupti", "cuda_events", "host_clock", "external"};

bool OneOf(const std::string& v, const char* const* begin, const char* const* end) {
  for (auto it = begin; it != end; ++it) {
    if (v == *it) return true;
  }
  return false;
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
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

absl::StatusOr<Profile> FitProfile(const ModelSpec& model, const GpuSpec& gpu,
                                   const std::vector<LatencySample>& samples,
                                   const FitOptions& options) {
  SPECPLAN_RETURN_IF_ERROR(ValidateSamples(samples));
  if (samples.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("samples: need >= 3 measurements to fit and hold out, got ", samples.size()));
  }
  if (!(options.heldout_fraction > 0 && options.heldout_fraction < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("heldout_fraction = ", options.heldout_fraction, ": must be in (0, 1)"));
  }
  Profile p;
  p.gpu = gpu.name;
  p.model = model.name;
  p.dtype = model.dtype;
  p.gpu_spec = gpu;
  p.model_spec = model;
  p.created_utc = NowUtc();

  std::vector<LatencySample> fit, held;
  SplitHoldout(samples, options.heldout_fraction, options.seed, &fit, &held);
  RooflineLatency roofline(model, gpu);
  SPECPLAN_ASSIGN_OR_RETURN(LinearCoefficients lin, FitLinear(roofline, fit));
  SPECPLAN_ASSIGN_OR_RETURN(PerTermCoefficients pt, FitPerTerm(roofline, fit));
  p.linear = lin;
  p.per_term = pt;
  // The table needs the full grid, so it is built from all samples; its held-out score is then
  // an in-sample figure, and it is only chosen as default when the fitted models are worse.
  if (auto table = BuildTable(samples); table.ok()) p.table = *table;

  for (const LatencySample& x : held) p.samples.push_back({x, true});
  for (const LatencySample& x : fit) p.samples.push_back({x, false});
  double best = std::numeric_limits<double>::infinity();
  for (const char* kind : {"roofline", "linear", "per_term"}) {
    SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<LatencyModel> m, MakeLatencyModel(p, kind));
    p.heldout[kind] = Evaluate(*m, held);
    if (std::string(kind) != "roofline" && p.heldout[kind].mape < best) {
      best = p.heldout[kind].mape;
      p.default_model = kind;
    }
  }
  if (p.table) {
    SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<LatencyModel> m, MakeLatencyModel(p, "table"));
    p.heldout["table"] = Evaluate(*m, held);
  }
  return p;
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
  if (p.table) {
    models["table"] = {
        {"s", p.table->s_grid}, {"c", p.table->c_grid}, {"seconds", p.table->seconds}};
  }
  j["models"] = models;
  nlohmann::json held = nlohmann::json::object();
  for (const auto& [kind, stats] : p.heldout) held[kind] = StatsToJson(stats);
  j["heldout"] = held;
  nlohmann::json samples = nlohmann::json::array();
  for (const ProfileSample& x : p.samples) {
    samples.push_back({{"s", x.sample.s},
                       {"c", x.sample.c},
                       {"seconds", x.sample.seconds},
                       {"heldout", x.heldout}});
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
    if (it.key() != "linear" && it.key() != "per_term" && it.key() != "table") {
      return absl::InvalidArgumentError(absl::StrCat(
          "models.", it.key(), ": unknown model kind (known: linear, per_term, table)"));
    }
  }
  if (models->contains("linear")) {
    const nlohmann::json& m = (*models)["linear"];
    LinearCoefficients c;
    SPECPLAN_ASSIGN_OR_RETURN(c.a, GetNumber(m, "a", "models.linear"));
    SPECPLAN_ASSIGN_OR_RETURN(c.b_s, GetNumber(m, "b_s", "models.linear"));
    if (c.a <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("models.linear.a = ", c.a, ": must be > 0"));
    }
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
    if (c.compute == 0 && c.weights == 0 && c.kv_attention == 0) {
      return absl::InvalidArgumentError(
          "models.per_term: all multipliers are 0 (the model would predict no cost)");
    }
    p.per_term = c;
  }
  if (models->contains("table")) {
    const nlohmann::json& m = (*models)["table"];
    const std::string pre = "models.table";
    LatencyTable t;
    SPECPLAN_ASSIGN_OR_RETURN(t.s_grid, IntArray(m, "s", pre));
    SPECPLAN_ASSIGN_OR_RETURN(t.c_grid, IntArray(m, "c", pre));
    SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* sec, json_util::Get(m, "seconds", pre));
    if (!sec->is_array()) {
      return absl::InvalidArgumentError("models.table.seconds: expected an array of arrays");
    }
    for (size_t ci = 0; ci < sec->size(); ++ci) {
      const nlohmann::json& row = (*sec)[ci];
      if (!row.is_array()) {
        return absl::InvalidArgumentError(
            absl::StrCat("models.table.seconds[", ci, "]: expected an array"));
      }
      std::vector<double> r;
      for (size_t si = 0; si < row.size(); ++si) {
        if (!row[si].is_number()) {
          return absl::InvalidArgumentError(absl::StrCat("models.table.seconds[", ci, "][", si,
                                                         "] = ", row[si].dump(),
                                                         ": expected a number"));
        }
        r.push_back(row[si].get<double>());
      }
      t.seconds.push_back(std::move(r));
    }
    SPECPLAN_RETURN_IF_ERROR(Prefixed(pre, ValidateLatencyTable(t)));
    p.table = std::move(t);
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.default_model, GetString(j, "default_model"));
  if (!OneOf(p.default_model, std::begin(kModelKinds), std::end(kModelKinds))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "default_model = '", p.default_model, "': expected roofline, linear, per_term or table"));
  }
  if ((p.default_model == "linear" && !p.linear) ||
      (p.default_model == "per_term" && !p.per_term) || (p.default_model == "table" && !p.table)) {
    return absl::InvalidArgumentError(absl::StrCat("default_model = '", p.default_model,
                                                   "': models.", p.default_model, " is missing"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* held, json_util::Get(j, "heldout"));
  if (!held->is_object()) return absl::InvalidArgumentError("heldout: expected an object");
  for (auto it = held->begin(); it != held->end(); ++it) {
    SPECPLAN_ASSIGN_OR_RETURN(p.heldout[it.key()],
                              StatsFromJson(it.value(), absl::StrCat("heldout.", it.key())));
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

absl::Status SaveProfile(const Profile& profile, const std::string& path, WriteFault fault) {
  return WriteFileAtomically(path, ProfileToJson(profile).dump(2) + "\n", fault);
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
  if (kind == "table" && p.table) return std::make_unique<TableLatency>(roofline, *p.table);
  if (OneOf(kind, std::begin(kModelKinds), std::end(kModelKinds))) {
    return absl::NotFoundError(absl::StrCat("latency model '", kind, "': not in this profile"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "latency model '", kind, "': unknown kind (known: roofline, linear, per_term, table)"));
}

std::string DefaultCalibDir() {
  if (const char* env = std::getenv("SPECPLAN_CALIB_DIR"); env != nullptr && env[0] != '\0') {
    return env;
  }
#ifdef SPECPLAN_CALIB_DIR
  return SPECPLAN_CALIB_DIR;
#else
  return "calib";
#endif
}

std::string BundledProfilePath(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model, DType dtype) {
  return (fs::path(calib_dir) / gpu / absl::StrCat(model, "-", DTypeName(dtype), ".json")).string();
}

absl::StatusOr<ResolvedLatencyModel> ResolveLatencyModel(const std::string& model,
                                                         const std::string& gpu,
                                                         const std::string& profile_path,
                                                         DType dtype) {
  ResolvedLatencyModel out;
  if (!profile_path.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(Profile p, LoadProfile(profile_path));
    // The profile's own names always match (e.g. calibrate's runtime models such as "tiny",
    // which are not in the registry); other names resolve and must be the same model.
    if (!model.empty() && model != p.model && model != p.model_spec.name) {
      SPECPLAN_ASSIGN_OR_RETURN(ModelSpec m, ResolveModel(model));
      if (m.name != p.model_spec.name) {
        return absl::InvalidArgumentError(absl::StrCat("--model ", model, ": profile ",
                                                       profile_path, " is for model '",
                                                       p.model_spec.name, "'"));
      }
    }
    if (!gpu.empty() && gpu != p.gpu && gpu != p.gpu_spec.name) {
      SPECPLAN_ASSIGN_OR_RETURN(GpuSpec g, ResolveGpu(gpu));
      if (g.name != p.gpu_spec.name) {
        return absl::InvalidArgumentError(absl::StrCat("--gpu ", gpu, ": profile ", profile_path,
                                                       " is for gpu '", p.gpu_spec.name, "'"));
      }
    }
    SPECPLAN_ASSIGN_OR_RETURN(out.model, MakeLatencyModel(p));
    out.model_spec = p.model_spec;
    out.gpu_spec = p.gpu_spec;
    out.profile_path = profile_path;
    return out;
  }
  SPECPLAN_ASSIGN_OR_RETURN(out.model_spec, ResolveModel(model));
  out.model_spec.dtype = dtype;
  SPECPLAN_ASSIGN_OR_RETURN(out.gpu_spec, ResolveGpu(gpu));
  const std::string bundled =
      BundledProfilePath(DefaultCalibDir(), out.gpu_spec.name, out.model_spec.name, dtype);
  std::error_code ec;
  if (fs::is_regular_file(bundled, ec)) {
    SPECPLAN_ASSIGN_OR_RETURN(Profile p, LoadProfile(bundled));
    SPECPLAN_ASSIGN_OR_RETURN(out.model, MakeLatencyModel(p));
    out.profile_path = bundled;
    return out;
  }
  out.model = std::make_unique<RooflineLatency>(out.model_spec, out.gpu_spec);
  return out;
}

absl::StatusOr<std::unique_ptr<LatencyModel>> LoadLatencyModel(const std::string& model,
                                                               const std::string& gpu,
                                                               const std::string& profile_path) {
  SPECPLAN_ASSIGN_OR_RETURN(ResolvedLatencyModel r, ResolveLatencyModel(model, gpu, profile_path));
  return std::move(r.model);
}

}  // namespace specplan::costmodel
