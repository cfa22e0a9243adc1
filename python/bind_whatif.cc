// specplan.whatif_online: `specplan whatif --online` from Python (ops/whatif_online_op.h on the
// resolved specplan.Cost). Returns the dict the CLI's --json prints.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common.h"
#include "ops/acceptance_op.h"
#include "ops/validate.h"
#include "ops/whatif_online_op.h"

namespace specplan::python {
namespace {

// An int N, or a pair (LO, HI): tokens drawn uniformly in [LO, HI]. None: not given.
ops::LengthRange ReadLengths(const char* arg, py::handle obj) {
  ops::LengthRange r;
  if (obj.is_none()) return r;
  if (py::isinstance<py::int_>(obj)) {
    r.lo = r.hi = obj.cast<int64_t>();
  } else if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    const py::sequence seq = obj.cast<py::sequence>();
    if (seq.size() != 2) ThrowInvalid(absl::StrCat(arg, ": expected N or (LO, HI)"));
    r.lo = seq[0].cast<int64_t>();
    r.hi = seq[1].cast<int64_t>();
  } else {
    ThrowWrongType(arg, obj, "int or (int, int)");
  }
  // The operation's own check of the range, in the flags' words ("N" or "LO:HI").
  ThrowIfError(ops::ParseLengthRange(absl::StrCat(r.lo, ":", r.hi)).status());
  return r;
}

template <typename T>
std::optional<T> Optional(py::handle obj) {
  if (obj.is_none()) return std::nullopt;
  return obj.cast<T>();
}

py::object WhatIfOnline(py::handle cost_obj, const std::string& acceptance,
                        std::vector<double> rates, int max_concurrency, std::vector<int> chains,
                        int64_t num_prompts, py::handle prompt_tokens, py::handle output_tokens,
                        uint64_t seed, const std::string& arrivals, double slo_ttft_ms,
                        double slo_tpot_ms, py::handle max_num_seqs,
                        py::handle max_num_batched_tokens, py::handle enable_chunked_prefill,
                        py::handle kv_cache_tokens, py::handle gpu_memory_utilization,
                        const std::string& acceptance_format, const std::string& acceptance_drafter,
                        int acceptance_k_max, int prompt_lookup_min, int prompt_lookup_max,
                        bool independent) {
  const PyCost* cost = ReadCost(cost_obj);
  if (cost == nullptr) ThrowInvalid("cost: required (a specplan.Cost)");
  if (cost->step == nullptr) {
    ThrowInvalid(
        "cost: drafter = '': the online replay prices the engine's whole step; give "
        "Cost(drafter=...) an architecture (eagle3, eagle, mtp, ngram, draft:MODEL)");
  }
  ThrowIfError(ops::CheckMs("slo_ttft_ms", slo_ttft_ms));
  ThrowIfError(ops::CheckMs("slo_tpot_ms", slo_tpot_ms));
  if (arrivals != "poisson" && arrivals != "constant") {
    ThrowInvalid(absl::StrCat("arrivals = '", arrivals, "': must be 'poisson' or 'constant'"));
  }
  if (rates.empty() == (max_concurrency == 0)) {
    ThrowInvalid("rates, max_concurrency: give one (arrival rates in requests/s, or N in flight)");
  }
  ops::AcceptanceRequest areq;
  areq.path = acceptance;
  areq.format = acceptance_format;
  areq.drafter = acceptance_drafter;
  areq.k_max = acceptance_k_max;
  areq.prompt_lookup_min = prompt_lookup_min;
  areq.prompt_lookup_max = prompt_lookup_max;

  ops::WhatIfOnlineRequest req;
  req.acceptance = ValueOrThrow(ops::LoadAcceptance(areq));
  req.independent = independent;
  req.prompt_tokens = ReadLengths("prompt_tokens", prompt_tokens);
  req.output_tokens = ReadLengths("output_tokens", output_tokens);
  req.num_prompts = num_prompts;
  req.seed = seed;
  req.online.chain_lengths = std::move(chains);
  req.online.arrivals.rates = std::move(rates);
  req.online.arrivals.in_flight = max_concurrency;
  req.online.arrivals.seed = seed;
  req.online.arrivals.constant = arrivals == "constant";
  req.online.slo.ttft_s = slo_ttft_ms / 1e3;
  req.online.slo.tpot_s = slo_tpot_ms / 1e3;
  req.limits.max_running = Optional<int>(max_num_seqs);
  req.limits.token_budget = Optional<int64_t>(max_num_batched_tokens);
  req.limits.chunked_prefill = Optional<bool>(enable_chunked_prefill);
  req.limits.kv_cache_tokens = Optional<int64_t>(kv_cache_tokens);
  req.limits.memory_fraction = Optional<double>(gpu_memory_utilization);

  // vLLM's CUDA-graph ladder follows the limits given, as the CLI's (ops::ApplyGraphLimits).
  std::optional<costmodel::StepModel> limited;
  costmodel::StepOptions options = cost->step->options();
  if (options.graphs && ops::ApplyGraphLimits(req.limits, &*options.graphs)) {
    limited.emplace(ValueOrThrow(costmodel::StepModel::Create(cost->model.get(), cost->model_spec,
                                                              cost->gpu_spec, cost->drafters.get(),
                                                              cost->engine, options)));
  }
  ops::OnlineCost online;
  online.verify = cost->model.get();
  online.step = limited ? &*limited : cost->step.get();
  online.model_spec = cost->model_spec;
  online.gpu_spec = cost->gpu_spec;
  online.engine = cost->engine;
  absl::StatusOr<ops::WhatIfOnlineResult> got = absl::InternalError("not run");
  {
    py::gil_scoped_release release;  // a replay of many requests
    got = ops::WhatIfOnline(req, online);
  }
  ops::WhatIfOnlineResult r = ValueOrThrow(std::move(got));
  // The profile by its id, as the CLI names a bundled one (a file the Cost was given by path is
  // named by its id too); its path when it has no id.
  r.source.profile = cost->profile_id.empty() ? cost->profile_path : cost->profile_id;
  r.source.engine_version = cost->engine_version;
  return py::module_::import("json").attr("loads")(ops::ToJson(r).dump());
}

}  // namespace

void BindWhatIf(py::module_& m) {
  m.def(
      "whatif_online", &WhatIfOnline, py::arg("cost"), py::arg("acceptance"), py::kw_only(),
      py::arg("rates") = std::vector<double>{}, py::arg("max_concurrency") = 0,
      py::arg("chains") = std::vector<int>{0, 3}, py::arg("num_prompts") = 0,
      py::arg("prompt_tokens") = py::none(), py::arg("output_tokens") = py::none(),
      py::arg("seed") = 0, py::arg("arrivals") = "poisson", py::arg("slo_ttft_ms") = 0.0,
      py::arg("slo_tpot_ms") = 0.0, py::arg("max_num_seqs") = py::none(),
      py::arg("max_num_batched_tokens") = py::none(),
      py::arg("enable_chunked_prefill") = py::none(), py::arg("kv_cache_tokens") = py::none(),
      py::arg("gpu_memory_utilization") = py::none(), py::arg("acceptance_format") = "",
      py::arg("acceptance_drafter") = "", py::arg("acceptance_k_max") = 0,
      py::arg("prompt_lookup_min") = 0, py::arg("prompt_lookup_max") = 0,
      py::arg("independent") = false,
      R"doc(What `specplan whatif --online --json` reports (docs/online.md), on this Cost: a stream
of requests arriving at each of `rates` (requests/s; Poisson, or evenly spaced with
arrivals="constant") or with `max_concurrency` in flight, served by the engine's continuous
batching under its limits (each None: the engine's default), replayed for each K of `chains`
(0 = plain decoding). `acceptance` is the file `specplan acceptance` reads (a SpecDecode-Bench
step trace gives the requests; rates need prompt_tokens and output_tokens, N or (LO, HI)).
slo_ttft_ms / slo_tpot_ms (0 = no limit) give each row its goodput and each load its best K.
Returns the dict: rows (throughput, ttft/tpot/itl/e2e percentiles in ms, goodput, slo_met, ...),
best_k, limits, slo, and the source. The GIL is released during the replay.)doc");
}

}  // namespace specplan::python
