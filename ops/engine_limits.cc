#include "ops/engine_limits.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ops/validate.h"
#include "util/status_macros.h"

namespace specplan::ops {
namespace {

const char* FractionField(const std::string& engine) {
  return engine == "sglang" ? "mem_fraction_static" : "gpu_memory_utilization";
}

}  // namespace

absl::Status Validate(const EngineLimitRequest& req) {
  if (req.max_running) {
    SPECPLAN_RETURN_IF_ERROR(
        CheckInRange("max_running", int64_t{*req.max_running}, 1, 1 << 20, "requests"));
  }
  if (req.token_budget) {
    SPECPLAN_RETURN_IF_ERROR(
        CheckInRange("token_budget", *req.token_budget, 1, int64_t{1} << 30, "tokens per step"));
  }
  if (req.kv_cache_tokens) {
    SPECPLAN_RETURN_IF_ERROR(
        CheckInRange("kv_cache_tokens", *req.kv_cache_tokens, 1, int64_t{1} << 40, "tokens"));
  }
  if (req.memory_fraction && !(*req.memory_fraction > 0 && *req.memory_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_fraction = ", *req.memory_fraction, ": must be in (0, 1]"));
  }
  return absl::OkStatus();
}

std::string SchedulerEngine(const std::string& profile_engine) {
  return profile_engine == "sglang" ? "sglang" : "vllm";
}

bool ApplyGraphLimits(const EngineLimitRequest& limits, costmodel::CudaGraphs* graphs) {
  const CostRequest given = WithGraphLimits(CostRequest(), limits);
  const costmodel::CudaGraphs before = *graphs;
  if (given.graph_max_num_seqs > 0) graphs->max_num_seqs = given.graph_max_num_seqs;
  if (given.graph_max_num_batched_tokens > 0) {
    graphs->max_num_batched_tokens = given.graph_max_num_batched_tokens;
  }
  return graphs->max_num_seqs != before.max_num_seqs ||
         graphs->max_num_batched_tokens != before.max_num_batched_tokens;
}

CostRequest WithGraphLimits(CostRequest cost, const EngineLimitRequest& limits) {
  if (limits.max_running) cost.graph_max_num_seqs = *limits.max_running;
  if (limits.token_budget) cost.graph_max_num_batched_tokens = *limits.token_budget;
  return cost;
}

absl::StatusOr<whatif::EngineLimits> ResolveEngineLimits(const EngineLimitRequest& req,
                                                         const std::string& engine,
                                                         const costmodel::ModelSpec& model,
                                                         const costmodel::GpuSpec& gpu,
                                                         bool speculative, std::string* kv_from) {
  whatif::EngineLimits l = whatif::DefaultEngineLimits(engine, gpu.mem_bytes, speculative);
  if (req.max_running) l.max_running = *req.max_running;
  if (req.token_budget) l.token_budget = *req.token_budget;
  if (req.chunked_prefill) l.chunked_prefill = *req.chunked_prefill;
  if (req.kv_cache_tokens) {
    l.kv_cache_tokens = *req.kv_cache_tokens;
    if (kv_from != nullptr) *kv_from = "given";
  } else {
    const double f = req.memory_fraction.value_or(whatif::DefaultMemoryFraction(engine));
    SPECPLAN_ASSIGN_OR_RETURN(l.kv_cache_tokens,
                              whatif::KvCacheTokens(model, gpu, f, FractionField(engine)));
    if (kv_from != nullptr) {
      *kv_from = absl::StrFormat("%s = %g of %s's %.3g bytes, less the weights",
                                 FractionField(engine), f, gpu.name, gpu.mem_bytes);
    }
  }
  return l;
}

}  // namespace specplan::ops
