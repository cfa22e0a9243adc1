// The engine's work in a step besides the GPU passes the kernel tables price: scheduling, input
// preparation, the launches that CUDA graphs do not cover, sampling, and the per-token cost a
// real engine's pass shows over the sum of its isolated kernels. Each engine has defaults
// with their provenance (DefaultHostTime); a user refits them from their own benchmark numbers
// (costmodel/step/host_fit.h, `specplan step fit`).
#ifndef SPECPLAN_COSTMODEL_STEP_HOST_TIME_H_
#define SPECPLAN_COSTMODEL_STEP_HOST_TIME_H_

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace specplan::costmodel {

struct HostTime {
  double step_s = 0;               // seconds per engine step, speculative or plain
  double per_sequence_s = 0;       // seconds per sequence in the batch, per step
  double per_draft_forward_s = 0;  // seconds per drafter forward (input preparation, launches)
  double sample_call_s = 0;        // one sampling call: the target's, and each drafter forward's
  // Seconds per verified token of the target's pass that a real engine spends beyond the composed
  // kernels (isolated kernel timings miss it); counted in T_verify. Not counted for prefill tokens
  // (whatif/online.h): a prefill chunk samples only its last token.
  double verify_per_token_s = 0;
  // The n-gram / suffix drafters' proposal (on the host) as a fraction of the step's T_verify,
  // dimensionless, in [0, 1]; counted in T_draft. Not seconds: SpecDecode-Bench publishes it as a
  // fraction of the verify time, which grows with the batch far slower than per sequence would.
  double ngram_verify_fraction = 0;
  std::string provenance;  // where each number comes from
};

// HostTime's numeric terms in declaration order: the name JSON, the wire and Python give each, the
// member, a one-line description, and whether it is a fraction of T_verify (else seconds). The one
// list every reader and writer of HostTime loops over.
struct HostTimeTerm {
  const char* name;
  double HostTime::*member;
  const char* what;
  bool fraction;
};
const std::array<HostTimeTerm, 6>& HostTimeTerms();

// The defaults for a canonical engine name (costmodel/profile/engines.h): "vllm", "sglang",
// "trtllm", "specplan"; "" (the bare roofline, no engine) takes vLLM's, the engine with published
// figures. INVALID_ARGUMENT for another name.
absl::StatusOr<HostTime> DefaultHostTime(const std::string& engine);

// The fields above (seconds; ngram_verify_fraction a fraction) and the provenance.
nlohmann::json HostTimeToJson(const HostTime& h);

// Every term in [0, 1] seconds; INVALID_ARGUMENT "<prefix><field> = <value>: must be in [0, 1]
// seconds" otherwise (prefix "host." for the step model's options, "gate.host." for the gate's);
// ngram_verify_fraction in [0, 1]: "<prefix>ngram_verify_fraction = <value>: must be a fraction
// in [0, 1] of the verify time".
absl::Status ValidateHostTime(const HostTime& h, const std::string& prefix);

// Host terms a front end was given, in milliseconds (unset: keep the base's).
struct HostOverridesMs {
  std::optional<double> step, per_sequence, per_draft_forward, sample_call;
};
// `base` with the given terms replaced (ms -> s) and "<who>, over <base provenance>" as its
// provenance; `base` itself when none is given. Each given value must be in [0, 1000] ms:
// INVALID_ARGUMENT "<name> = <value>: must be in [0, 1000] ms", with the front end's `names` for
// the four terms in the struct's order (flags, keyword arguments).
absl::StatusOr<HostTime> OverrideHostTime(const HostTime& base, const HostOverridesMs& given,
                                          const std::array<const char*, 4>& names,
                                          const std::string& who);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_STEP_HOST_TIME_H_
