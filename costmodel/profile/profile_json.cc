#include "costmodel/profile/profile_json.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/profile/profile_validate.h"
#include "costmodel/step/drafter_arch.h"
#include "util/atomic_file.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::costmodel {

namespace {

using json_util::GetBool;
using json_util::GetInt;
using json_util::GetNumber;
using json_util::GetString;

const std::vector<std::string>& Timers() {
  static const std::vector<std::string> timers = {"cupti", "cuda_events", "host_clock", "external"};
  return timers;
}

bool OneOf(const std::string& v, const std::vector<std::string>& names) {
  return std::find(names.begin(), names.end(), v) != names.end();
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
        return absl::InvalidArgumentError(absl::StrCat(
            name, "[", ci, "][", si, "] = ", json_util::Quote(row[si]), ": expected a number"));
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
      return absl::InvalidArgumentError(absl::StrCat(
          field, "[", i, "] = ", json_util::Quote((*arr)[i]), ": expected an integer"));
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

// One coefficient of a fitted kind: its JSON key and its member, a number (>= 0 unless
// `any_sign`; the validators check the rest) or an integer. The tables below list each kind's
// coefficients in the order the reader checks them; the writer and the reader both follow them.
template <typename C>
struct CoefficientField {
  const char* key;
  double C::*number = nullptr;
  int64_t C::*integer = nullptr;
  bool any_sign = false;
};
template <typename C>
constexpr CoefficientField<C> Number(const char* key, double C::*member) {
  return {key, member, nullptr, false};
}
template <typename C>
constexpr CoefficientField<C> SignedNumber(const char* key, double C::*member) {
  return {key, member, nullptr, true};
}
template <typename C>
constexpr CoefficientField<C> Integer(const char* key, int64_t C::*member) {
  return {key, nullptr, member, false};
}

using LC = LinearCoefficients;
constexpr CoefficientField<LC> kLinearFields[] = {SignedNumber("a", &LC::a),
                                                  SignedNumber("b_s", &LC::b_s)};
using PC = PerTermCoefficients;
constexpr CoefficientField<PC> kPerTermFields[] = {
    Number("compute", &PC::compute), Number("compute_overhead_s", &PC::compute_overhead_s),
    Number("weights", &PC::weights), Number("kv_attention", &PC::kv_attention)};
using OC = OverlapCoefficients;
constexpr CoefficientField<OC> kOverlapFields[] = {
    Number("gemm", &OC::gemm),       Number("attention", &OC::attention),
    Number("weights", &OC::weights), Number("kv_attention", &OC::kv_attention),
    SignedNumber("p", &OC::p),       Number("overhead_s", &OC::overhead_s),
    Integer("tile", &OC::tile)};
using KC = KernelSumCoefficients;
constexpr CoefficientField<KC> kKernelSumFields[] = {
    Number("overhead_s", &KC::overhead_s),
    Number("gemm", &KC::gemm),
    Number("weights", &KC::weights),
    SignedNumber("p", &KC::p),
    Integer("tile", &KC::tile),
    Number("decode", &KC::decode),
    Number("verify", &KC::verify),
    Number("verify_overhead_s", &KC::verify_overhead_s),
    Integer("attention_tile", &KC::attention_tile),
    Number("attention", &KC::attention),
    Number("elementwise", &KC::elementwise)};

// models[kind] = the coefficients, when the profile has that kind.
template <typename C, size_t N>
void WriteKind(const std::optional<C>& c, const char* kind, const CoefficientField<C> (&fields)[N],
               nlohmann::json* models) {
  if (!c) return;
  nlohmann::json& m = (*models)[kind];
  for (const CoefficientField<C>& f : fields) {
    if (f.number != nullptr) {
      m[f.key] = (*c).*f.number;
    } else {
      m[f.key] = (*c).*f.integer;
    }
  }
}

// *out = models[kind] read and validated, when the file has that kind; errors name
// "models.<kind>.<key>" and the value.
template <typename C, size_t N, typename Validate>
absl::Status ReadKind(const nlohmann::json& models, const char* kind,
                      const CoefficientField<C> (&fields)[N], const Validate& validate,
                      std::optional<C>* out) {
  if (!models.contains(kind)) return absl::OkStatus();
  const nlohmann::json& m = models[kind];
  const std::string prefix = absl::StrCat("models.", kind);
  C c;
  for (const CoefficientField<C>& f : fields) {
    if (f.integer != nullptr) {
      SPECPLAN_ASSIGN_OR_RETURN(c.*f.integer, GetInt(m, f.key, prefix));
    } else if (f.any_sign) {
      SPECPLAN_ASSIGN_OR_RETURN(c.*f.number, GetNumber(m, f.key, prefix));
    } else {
      SPECPLAN_ASSIGN_OR_RETURN(c.*f.number, NonNegative(m, f.key, prefix));
    }
  }
  SPECPLAN_RETURN_IF_ERROR(validate(c));
  *out = c;
  return absl::OkStatus();
}

// A latency table's JSON (the "table" model kind, and each composed drafter's table).
nlohmann::json LatencyTableToJson(const LatencyTable& t) {
  nlohmann::json j = {{"s", t.s_grid}, {"c", t.c_grid}, {"seconds", t.seconds}};
  if (!t.b_grid.empty()) {
    j["b"] = t.b_grid;
    j["batch_seconds"] = t.batch_seconds;
    if (!t.batch_s_grid.empty()) j["batch_s"] = t.batch_s_grid;
    if (!t.batch_c_grid.empty()) j["batch_c"] = t.batch_c_grid;
  }
  return j;
}

// The inverse of LatencyTableToJson; errors name `pre` and the field.
absl::StatusOr<LatencyTable> LatencyTableFromJson(const nlohmann::json& m, const std::string& pre) {
  if (!m.is_object()) return absl::InvalidArgumentError(pre + ": expected an object");
  LatencyTable t;
  SPECPLAN_ASSIGN_OR_RETURN(t.s_grid, IntArray(m, "s", pre));
  SPECPLAN_ASSIGN_OR_RETURN(t.c_grid, IntArray(m, "c", pre));
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* sec, json_util::Get(m, "seconds", pre));
  SPECPLAN_ASSIGN_OR_RETURN(t.seconds, TableLayer(*sec, pre + ".seconds"));
  // Optional batch axis: both keys or neither.
  if (m.contains("b") != m.contains("batch_seconds")) {
    return absl::InvalidArgumentError(
        pre + ": \"b\" and \"batch_seconds\" come together (the batch axis)");
  }
  if (m.contains("b")) {
    SPECPLAN_ASSIGN_OR_RETURN(t.b_grid, IntArray(m, "b", pre));
    const nlohmann::json& layers = m["batch_seconds"];
    if (!layers.is_array()) {
      return absl::InvalidArgumentError(pre + ".batch_seconds: expected an array of [c][s] arrays");
    }
    for (size_t bi = 0; bi < layers.size(); ++bi) {
      SPECPLAN_ASSIGN_OR_RETURN(
          std::vector<std::vector<double>> layer,
          TableLayer(layers[bi], absl::StrCat(pre, ".batch_seconds[", bi, "]")));
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
  return t;
}

}  // namespace

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
  WriteKind(p.linear, "linear", kLinearFields, &models);
  WriteKind(p.per_term, "per_term", kPerTermFields, &models);
  WriteKind(p.overlap, "overlap", kOverlapFields, &models);
  WriteKind(p.kernel_sum, "kernel_sum", kKernelSumFields, &models);
  if (p.table) models["table"] = LatencyTableToJson(*p.table);
  j["models"] = models;
  if (!p.drafters.empty()) {
    nlohmann::json drafters = nlohmann::json::object();
    for (const auto& [name, d] : p.drafters) {
      drafters[name] = {{"arch", DrafterArchToJson(d.arch)},
                        {"table", LatencyTableToJson(d.table)}};
    }
    j["drafters"] = drafters;
  }
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
  if (!OneOf(p.timer, Timers())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timer = '", p.timer, "': expected cupti, cuda_events, host_clock or external"));
  }
  SPECPLAN_ASSIGN_OR_RETURN(const nlohmann::json* sw, json_util::Get(j, "software"));
  if (!sw->is_object()) return absl::InvalidArgumentError("software: expected an object");
  for (auto it = sw->begin(); it != sw->end(); ++it) {
    if (!it.value().is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "software.", it.key(), " = ", json_util::Quote(it.value()), ": expected a string"));
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
  SPECPLAN_RETURN_IF_ERROR(ReadKind(
      *models, "linear", kLinearFields,
      [&](const LinearCoefficients& c) {
        return ValidateLinear(c, RooflineLatency(p.model_spec, p.gpu_spec));
      },
      &p.linear));
  SPECPLAN_RETURN_IF_ERROR(
      ReadKind(*models, "per_term", kPerTermFields, ValidatePerTerm, &p.per_term));
  SPECPLAN_RETURN_IF_ERROR(
      ReadKind(*models, "overlap", kOverlapFields, ValidateOverlap, &p.overlap));
  SPECPLAN_RETURN_IF_ERROR(
      ReadKind(*models, "kernel_sum", kKernelSumFields, ValidateKernelSum, &p.kernel_sum));
  if (models->contains("table")) {
    SPECPLAN_ASSIGN_OR_RETURN(p.table, LatencyTableFromJson((*models)["table"], "models.table"));
  }
  if (j.contains("drafters")) {
    const nlohmann::json& drafters = j["drafters"];
    if (!drafters.is_object()) return absl::InvalidArgumentError("drafters: expected an object");
    for (auto it = drafters.begin(); it != drafters.end(); ++it) {
      const std::string pre = absl::StrCat("drafters.", it.key());
      if (!it.value().is_object() || !it.value().contains("arch") ||
          !it.value().contains("table")) {
        return absl::InvalidArgumentError(
            absl::StrCat(pre, ": expected an object with \"arch\" and \"table\""));
      }
      DrafterProfile d;
      auto arch = DrafterArchFromJson(it.value()["arch"]);
      if (!arch.ok()) return Prefixed(pre + ".arch", arch.status());
      d.arch = *std::move(arch);
      SPECPLAN_ASSIGN_OR_RETURN(d.table, LatencyTableFromJson(it.value()["table"], pre + ".table"));
      p.drafters[it.key()] = std::move(d);
    }
  }
  SPECPLAN_ASSIGN_OR_RETURN(p.default_model, GetString(j, "default_model"));
  if (!OneOf(p.default_model, LatencyModelKinds())) {
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
            absl::StrCat("notes[", i, "] = ", json_util::Quote(notes[i]), ": expected a string"));
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
  return json_util::ReadJsonFileAs(path, ProfileFromJson);
}

absl::Status SaveProfile(const Profile& profile, const std::string& path, Env* env) {
  return WriteFileAtomically(path, ProfileToJson(profile).dump(2) + "\n", env);
}

}  // namespace specplan::costmodel
