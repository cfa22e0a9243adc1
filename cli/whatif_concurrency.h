// What `specplan whatif` prints, and its --concurrency and --acceptance forms: each calls its
// operation (ops/whatif_op.h) and prints the result: the JSON form (ops::ToJson), or the source's
// header lines and the result's table, and a --plot PNG drawn from the result.
#ifndef SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
#define SPECPLAN_CLI_WHATIF_CONCURRENCY_H_

#include <string>

#include "absl/status/status.h"
#include "ops/whatif_op.h"

namespace specplan::cli {

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
                         const std::string& plot);

// --concurrency LIST --acceptance FILE: runs ops::WhatIfChains (its errors in the flags' words:
// --chains, --concurrency, --context) and prints the JSON or the table. Returns the exit code.
int RunChainReplay(const ops::WhatIfChainsRequest& req, bool json);

}  // namespace specplan::cli

#endif  // SPECPLAN_CLI_WHATIF_CONCURRENCY_H_
