#include "ops/compose_op.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/batch_shape.h"
#include "costmodel/latency/roofline_latency.h"
#include "costmodel/latency/table_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "util/clock.h"
#include "util/shipped_dir.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

// T(1, 1, 1024) and T(64, 1, 1024) on the profile's own table, in ms: the two figures a user reads
// to see the table is sane and what batching buys.
void PriceSamples(ComposedProfile* c) {
  const costmodel::TableLatency t(
      costmodel::RooflineLatency(c->profile.model_spec, c->profile.gpu_spec), *c->profile.table);
  costmodel::BatchShape batch64;
  for (int i = 0; i < 64; ++i) batch64.Add(1, 1024);
  c->t1_ms = t.VerifySeconds(1, 1024) * 1e3;
  c->t64_ms = t.VerifyBatchSeconds(batch64) * 1e3;
}

}  // namespace

absl::Status Validate(const ComposeRequest& req) {
  if (req.kernel_dirs.empty()) return absl::InvalidArgumentError("kernel_dirs: none given");
  if (req.models.empty()) return absl::InvalidArgumentError("models: none given");
  if (!req.out_file.empty() && !req.out_dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("out_file ", req.out_file, " and out_dir ",
                                                   req.out_dir, ": give one of the two"));
  }
  if (!req.out_file.empty() && (req.kernel_dirs.size() != 1 || req.models.size() != 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out_file ", req.out_file, ": takes one kernel folder and one model (got ",
        req.kernel_dirs.size(), " and ", req.models.size(), "); use out_dir for more"));
  }
  if (req.options.tp < 1) {
    return absl::InvalidArgumentError(absl::StrCat("tp = ", req.options.tp, ": must be >= 1"));
  }
  return costmodel::ParseDType(req.dtype).status();
}

absl::StatusOr<ComposeResult> Compose(const ComposeRequest& req) {
  SPECPLAN_RETURN_IF_ERROR(Validate(req));
  costmodel::ComposeOptions options = req.options;
  SPECPLAN_ASSIGN_OR_RETURN(options.dtype, costmodel::ParseDType(req.dtype));
  ComposeResult out;
  const double t0 = NowSeconds();
  for (const std::string& dir : req.kernel_dirs) {
    SPECPLAN_ASSIGN_OR_RETURN(costmodel::EngineKernelTables tables,
                              costmodel::LoadEngineKernelTables(dir));
    for (const std::string& model : req.models) {
      const double start = NowSeconds();
      absl::StatusOr<costmodel::Profile> p = costmodel::ComposeProfile(tables, model, options);
      if (!p.ok()) {
        return absl::Status(p.status().code(),
                            absl::StrCat(dir, " x ", model, ": ", p.status().message()));
      }
      ComposedProfile c;
      c.profile = *std::move(p);
      if (!req.out_file.empty()) {
        c.path = req.out_file;
      } else if (!req.out_dir.empty()) {
        c.path = costmodel::BundledProfilePath(req.out_dir, c.profile.gpu, c.profile.model,
                                               c.profile.dtype, c.profile.model_spec.tp,
                                               c.profile.engine);
      }
      c.seconds = NowSeconds() - start;
      PriceSamples(&c);
      out.profiles.push_back(std::move(c));
    }
  }
  // Nothing over the shipped profiles unless forced; checked before anything is written.
  for (const ComposedProfile& c : out.profiles) {
    if (c.path.empty()) continue;
    SPECPLAN_RETURN_IF_ERROR(CheckNotShipped(req.out_file.empty() ? "out_dir writes" : "out_file",
                                             c.path, req.protected_dirs, req.force));
  }
  out.seconds = NowSeconds() - t0;
  return out;
}

absl::Status Write(const ComposeResult& result) {
  for (const ComposedProfile& c : result.profiles) {
    if (c.path.empty()) continue;
    SPECPLAN_RETURN_IF_ERROR(costmodel::SaveProfile(c.profile, c.path));
  }
  return absl::OkStatus();
}

std::string WrittenLine(const ComposedProfile& c) {
  std::string line = absl::StrFormat(
      "wrote %s: %s %s on %s, T(1,1,1024) = %.3f ms, T(64,1,1024) = %.3f ms (%.2fx), composed "
      "in %.0f ms\n",
      c.path, c.profile.engine, c.profile.engine_version, c.profile.gpu, c.t1_ms, c.t64_ms,
      c.t64_ms / c.t1_ms, c.seconds * 1e3);
  // A MoE target: which measured block priced it, and how when its shape was not measured.
  for (const std::string& note : c.profile.notes) {
    if (absl::StartsWith(note, "MoE ")) absl::StrAppend(&line, "  ", note, "\n");
  }
  return line;
}

nlohmann::json ToJson(const ComposeResult& result) {
  nlohmann::json profiles = nlohmann::json::array();
  for (const ComposedProfile& c : result.profiles) {
    profiles.push_back({{"path", c.path},
                        {"gpu", c.profile.gpu},
                        {"model", c.profile.model},
                        {"dtype", costmodel::DTypeName(c.profile.dtype)},
                        {"tp", c.profile.model_spec.tp},
                        {"engine", c.profile.engine},
                        {"engine_version", c.profile.engine_version},
                        {"t1_ms", c.t1_ms},
                        {"t64_ms", c.t64_ms},
                        {"compose_ms", c.seconds * 1e3}});
  }
  return {{"profiles", std::move(profiles)}, {"seconds", result.seconds}};
}

}  // namespace specplan::ops
