#include "cli/cost_flags.h"

#include "absl/strings/str_cat.h"
#include "cli/remote.h"
#include "costmodel/cost_spec.h"
#include "costmodel/engines.h"

namespace specplan::cli {

absl::StatusOr<CostFlags::Parsed> CostFlags::Parse(double t_draft_ms) const {
  auto cls = costmodel::ParseDrafterClass(drafter);
  if (!cls.ok())
    return absl::Status(cls.status().code(), "--" + std::string(cls.status().message()));
  auto parsed_dtype = costmodel::ParseDType(dtype);
  if (!parsed_dtype.ok()) {
    return absl::Status(parsed_dtype.status().code(),
                        "--" + std::string(parsed_dtype.status().message()));
  }
  Parsed parsed{{}, *parsed_dtype};
  parsed.drafter.cls = *cls;
  parsed.drafter.t_net_s = t_draft_ms * 1e-3;
  return parsed;
}

costmodel::CostSpec CostFlags::ToCostSpec(costmodel::DType dtype) const {
  // CostSpec's fields in order: model, gpu, engine, profile_path, latency_model, dtype, tp.
  return costmodel::CostSpec{model, gpu, engine, profile, latency_model, dtype, tp};
}

absl::StatusOr<costmodel::ResolvedLatencyModel> CostFlags::Resolve(costmodel::DType dtype) const {
  auto resolved = costmodel::ResolveCost(ToCostSpec(dtype));
  if (!resolved.ok()) return CostErrorInFlags(resolved.status());
  return resolved;
}

absl::Status CostErrorInFlags(const absl::Status& status) {
  return costmodel::CostErrorInNames(status, costmodel::kCostFlagNames);
}

bool CostFlags::AnyCostGiven() const {
  return !model.empty() || !gpu.empty() || !engine.empty() || !profile.empty() ||
         !latency_model.empty();
}

absl::Status CostFlags::CheckRemote() const {
  if (profile.empty() && latency_model.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "--profile and --latency-model are local; with --server the server's stored profile for "
      "--gpu/--model/--dtype and its default model are used");
}

RemoteCost CostFlags::ToRemoteCost(costmodel::DType dtype, const costmodel::DrafterCost& drafter,
                                   int64_t context) const {
  RemoteCost rc;
  rc.model = model;
  rc.gpu = gpu;
  rc.dtype = dtype;
  rc.drafter = drafter;
  rc.t_aux_s = t_aux_ms * 1e-3;
  rc.context = context;
  rc.tp = tp == 0 ? 1 : tp;
  rc.engine = engine;
  return rc;
}

std::string DescribeEngine(const std::string& engine, const std::string& engine_version) {
  if (engine.empty()) return "";
  return absl::StrCat("engine ", engine, engine_version.empty() ? "" : " ", engine_version);
}

std::string DescribeProfile(const std::string& profile, const std::string& engine,
                            const std::string& engine_version) {
  if (profile.empty() || engine.empty()) return profile;
  return absl::StrCat(profile, " (", DescribeEngine(engine, engine_version), ")");
}

UsedEngine RemoteProfileEngine(const std::string& server, const std::string& id) {
  UsedEngine used;
  if (id.empty()) return used;
  if (auto profiles = RemoteProfiles(server); profiles.ok()) {
    for (const auto& [listed, profile] : *profiles) {
      if (listed != id) continue;
      used.engine = profile.engine;
      used.version = profile.engine_version;
      return used;
    }
  }
  const size_t at = id.rfind('@');
  used.engine = at == std::string::npos ? costmodel::kRuntimeEngine : id.substr(at + 1);
  return used;
}

CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* f) {
  CostFlagOptions o;
  o.model =
      cmd->add_option("--model", f->model,
                      "Target model: built-in name (e.g. qwen3-8b) or path to a HF config.json");
  o.gpu = cmd->add_option("--gpu", f->gpu, "GPU: registry name (e.g. h100) or path to a JSON spec");
  cmd->add_option("--engine", f->engine,
                  "Whose kernels the costs describe: sglang, vllm, trtllm (engine-grade profiles "
                  "composed from the engine's kernel timings) or specplan (profiles measured on "
                  "specplan's own runtime); default: the first of sglang, vllm, trtllm, specplan "
                  "with a bundled profile for --gpu x --model");
  cmd->add_option("--profile", f->profile,
                  "Calibrated profile JSON (default: the bundled "
                  "calib/<gpu>/<model>-<dtype>[@<engine>].json, see --engine; with no --engine and "
                  "none bundled, the bare roofline)");
  cmd->add_option(
      "--latency-model", f->latency_model,
      "Latency model of the profile to use instead of its default: roofline, linear, per_term, "
      "overlap, kernel_sum or table (local only)");
  cmd->add_option("--tp", f->tp,
                  "Tensor parallelism: split the model over N GPUs (per-GPU roofline plus two "
                  "all-reduces per layer; default: the profile's, else 1)");
  cmd->add_option("--dtype", f->dtype, "Element type: bf16, fp16, fp32, fp8")
      ->capture_default_str();
  o.drafter = cmd->add_option("--drafter", f->drafter, "Drafter cost class: ar, parallel, causal")
                  ->capture_default_str();
  cmd->add_option("--t-aux-ms", f->t_aux_ms, "Tree construction/sampling overhead, ms")
      ->check(CLI::NonNegativeNumber);
  return o;
}

}  // namespace specplan::cli
