#include "cli/cost_flags.h"

namespace specplan::cli {

CostFlagOptions AddCostFlags(CLI::App* cmd, CostFlags* f) {
  CostFlagOptions o;
  o.model =
      cmd->add_option("--model", f->model,
                      "Target model: built-in name (e.g. qwen3-8b) or path to a HF config.json");
  o.gpu = cmd->add_option("--gpu", f->gpu, "GPU: registry name (e.g. h100) or path to a JSON spec");
  cmd->add_option("--profile", f->profile,
                  "Calibrated profile JSON (default: the bundled calib/<gpu>/<model>-<dtype>.json "
                  "when present, else the bare roofline)");
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
