// The engine's scheduler limits as a request gives them (each one the engine's default when not
// given), and the one rule that turns them into whatif::EngineLimits for a profile's engine, GPU
// and model. Serves `whatif --online` (WhatIfOnlineRequest) and `whatif --concurrency --prefill`
// (WhatIfChainsRequest), the CLI's flags under the engines' own names (--max-num-seqs /
// --max-running-requests, --max-num-batched-tokens / --chunked-prefill-size,
// --[no-]enable-chunked-prefill, --kv-cache-tokens, --gpu-memory-utilization /
// --mem-fraction-static) and the Python keywords.
#ifndef SPECPLAN_OPS_ENGINE_LIMITS_H_
#define SPECPLAN_OPS_ENGINE_LIMITS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "ops/cost_request.h"
#include "whatif/online.h"

namespace specplan::ops {

struct EngineLimitRequest {
  std::optional<int> max_running;          // max_num_seqs / max_running_requests, [1, 2^20]
  std::optional<int64_t> token_budget;     // max_num_batched_tokens / chunked_prefill_size
  std::optional<bool> chunked_prefill;     // enable_chunked_prefill
  std::optional<int64_t> kv_cache_tokens;  // tokens the KV cache holds, [1, 2^40]
  std::optional<double> memory_fraction;   // gpu_memory_utilization / mem_fraction_static, (0, 1]
  bool any() const {
    return max_running || token_budget || chunked_prefill || kv_cache_tokens || memory_fraction;
  }
};

// Each limit given in its range; errors name the field and value.
absl::Status Validate(const EngineLimitRequest& req);

// `cost` with the limits vLLM's CUDA-graph ladder follows (max_num_seqs, max_num_batched_tokens:
// CostRequest::graph_max_num_seqs, graph_max_num_batched_tokens) set from those `limits` gives.
CostRequest WithGraphLimits(CostRequest cost, const EngineLimitRequest& limits);
// The same on a ladder already resolved (a step model built before the limits were known: the
// Python module's Cost): *graphs with the limits given. Whether it changed.
bool ApplyGraphLimits(const EngineLimitRequest& limits, costmodel::CudaGraphs* graphs);

// The engine whose scheduler and defaults apply: SGLang's for an SGLang profile, else vLLM's.
std::string SchedulerEngine(const std::string& profile_engine);

// The limits: `engine`'s defaults for the GPU (whatif::DefaultEngineLimits, `speculative` or
// not), each one given replacing its default, and the KV cache: kv_cache_tokens when given, else
// what the memory fraction (given, or the engine's default) leaves after the weights
// (whatif::KvCacheTokens). *kv_from says which: "given", or "<fraction field> = F of <gpu>'s
// memory, less the weights".
absl::StatusOr<whatif::EngineLimits> ResolveEngineLimits(const EngineLimitRequest& req,
                                                         const std::string& engine,
                                                         const costmodel::ModelSpec& model,
                                                         const costmodel::GpuSpec& gpu,
                                                         bool speculative, std::string* kv_from);

}  // namespace specplan::ops

#endif  // SPECPLAN_OPS_ENGINE_LIMITS_H_
