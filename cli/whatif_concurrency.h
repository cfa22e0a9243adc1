// What `specplan whatif` prints, and its --concurrency and --acceptance forms: each calls its
// operation (ops/whatif_op.h) and prints the result: the JSON form (ops::ToJson), or the source's
// header lines and the result's table, and a --plot PNG drawn from the result. Also the flags of
// the replay with B requests in flight that whatif --concurrency and schedule share.
#ifndef SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
#define SPECPLAN_CLI_WHATIF_CONCURRENCY_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/acceptance_flags.h"
#include "cli/command_util.h"
#include "ops/whatif_online_op.h"
#include "ops/whatif_op.h"
#include "whatif/concurrency.h"

namespace specplan::cli {

// The flags of a replay with B requests in flight (ops::WhatIfConcurrencyRequest) that whatif
// --concurrency and schedule share: a command's Args derives from ReplayFlags and registers each
// flag with its own help (AddTraceOption, AddDraftTimeOption, AddDraftBatchGrowthOption, which
// sets draft_batch_growth_option, and --calibrate, --batch-scan); Fill reads them into the request
// in one place.
struct ReplayFlags {
  std::string trace;                                             // --trace; "" = the bundled trace
  double t_draft_ms = 0;                                         // --t-draft-ms
  double draft_batch_growth = whatif::kDefaultDraftBatchGrowth;  // --draft-batch-growth F
  const CLI::Option* draft_batch_growth_option = nullptr;        // set when registered
  bool calibrate = false;   // --calibrate: the batch planner calibrates its surrogate online
  bool batch_scan = false;  // --batch-scan: the batch planner takes the argmax of G(N)

  // The request's trace, t_draft_ms, calibrate and batch_scan, and its draft_batch_growth when
  // --draft-batch-growth was given (else the request's own default stays).
  void Fill(ops::WhatIfConcurrencyRequest* req) const;
};

// --calibrate and --batch-scan, bound to `flags` (which must outlive the parse), as `help` says
// for the command.
CLI::Option* AddCalibrateFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help);
CLI::Option* AddBatchScanFlag(CLI::App* cmd, ReplayFlags* flags, const std::string& help);

// An operation's error in the words of whatif's flags: "trace <msg>" -> "--trace <msg>", the cost
// request's fields as their flags (CostErrorInFlags); a replay's "<trace path>: ..." as it is.
absl::Status WhatIfErrorInFlags(const absl::Status& status);

// Prints to stdout: the source's header lines ("<model> on <gpu> (<dtype>)[, profile ...]",
// "trace file: <path>"), `table` and, when `plot` is not empty, "plot: <plot>".
void PrintWhatIfText(const ops::WhatIfSource& source, const std::string& table,
                     const std::string& plot);

// --concurrency LIST|recorded: runs ops::WhatIfConcurrency, writes --plot (throughput and speedup
// over ar vs B) and prints the JSON or the table. Returns the exit code.
int RunWhatIfConcurrency(const ops::WhatIfConcurrencyRequest& req, bool json,
                         const std::string& plot, const OutputFlags& output);

// --concurrency LIST --acceptance FILE: runs ops::WhatIfChains (its errors in the flags' words:
// --chains, --concurrency, --context) and prints the JSON or the table. Returns the exit code.
int RunChainReplay(const ops::WhatIfChainsRequest& req, bool json);

// The flags of `whatif --online` (ops::WhatIfOnlineRequest): the load (--rates or
// --max-concurrency, --arrivals, --num-prompts, --seed), lengths for rates (--prompt-tokens,
// --output-tokens) and the engine's limits under the engines' own names (--max-num-seqs /
// --max-running-requests, --max-num-batched-tokens / --chunked-prefill-size,
// --[no-]enable-chunked-prefill, --kv-cache-tokens, --gpu-memory-utilization /
// --mem-fraction-static). Registered by AddOnlineFlags; every option but --online goes to
// `options`, so a command can refuse them without --online.
struct OnlineFlags {
  bool online = false;
  std::string rates;        // requests/s, comma-separated
  int max_concurrency = 0;  // closed loop: requests in flight
  std::string arrivals = "poisson";
  int64_t num_prompts = 0;
  uint64_t seed = 0;
  std::string prompt_tokens, output_tokens;  // "N" or "LO:HI"
  int max_running = 0;
  int64_t token_budget = 0;
  bool chunked_prefill = true;
  int64_t kv_cache_tokens = 0;
  double memory_fraction = 0;
  double slo_ttft_ms = 0, slo_tpot_ms = 0;  // 0 = no limit
  std::vector<CLI::Option*> options;
  CLI::Option* max_running_option = nullptr;
  CLI::Option* token_budget_option = nullptr;
  CLI::Option* chunked_option = nullptr;
  CLI::Option* kv_option = nullptr;
  CLI::Option* fraction_option = nullptr;
  // The limits given (each flag not given: the engine's default).
  ops::EngineLimitRequest Limits() const;
  // The first flag of the engine's limits given ("" for none): they apply with --online and
  // with --prefill; the load and length flags with --online only.
  std::string LimitFlagGiven() const;
  // The options of the engine's limits, in flag order.
  std::vector<const CLI::Option*> LimitOptions() const {
    return {max_running_option, token_budget_option, chunked_option, kv_option, fraction_option};
  }
};
void AddOnlineFlags(CLI::App* cmd, OnlineFlags* flags);
// The first online-only flag given (its long name with "--"), or "" when none was; the engine's
// limits are not online-only (they apply with --prefill too: OnlineFlags::LimitFlagGiven).
std::string OnlineOnlyFlagGiven(const OnlineFlags& flags);

// --online: builds ops::WhatIfOnlineRequest from the flags, the cost, the loaded acceptance and
// --chains / --independent, runs it (progress on stderr: a bar on a terminal, else one line per
// replay), writes `plot` when given (two panels: TPOT p50 and TTFT p90 against throughput, one
// curve per setting, a point per load) and prints the JSON or the table. Errors name the flags;
// nothing is printed to stdout (or written) on an error. Returns the exit code.
int RunWhatIfOnline(const OnlineFlags& flags, const ops::CostRequest& cost,
                    const AcceptanceFlags& acceptance, const std::string& chains, bool independent,
                    bool json, const std::string& plot, const OutputFlags& output);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
