// What the main() of the LibTorch command-line tools (specplan-bench, specplan-logits,
// specplan-train, calibrate) share: how a failure ends the program, the flags that mean the
// same in every tool, registered once so that their names and help agree, and the kinds of
// option they all declare (a choice among names, a number in a range). Header-only: the tools
// link CLI11, the runtime library does not.
#ifndef SPECPLAN_RUNTIME_TOOL_MAIN_H_
#define SPECPLAN_RUNTIME_TOOL_MAIN_H_

#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace specplan::runtime {

// Prints "PROGRAM: MESSAGE" to stderr; returns 1, the exit status of a failed run.
inline int ReportFailure(std::string_view program, const absl::Status& st) {
  std::cerr << program << ": " << st.message() << "\n";
  return 1;
}

// main()'s exit status after a run that ended with `st`: 0, else ReportFailure's.
inline int ExitStatus(std::string_view program, const absl::Status& st) {
  return st.ok() ? 0 : ReportFailure(program, st);
}

// --threads N: LibTorch's intra-op threads (0 keeps LibTorch's default).
inline CLI::Option* AddThreadsFlag(CLI::App& app, int* threads) {
  return app.add_option("--threads", *threads, "torch intra-op threads (0 = default)");
}

// "<values>", or "<values> (<note>)" with a note: the help of a flag whose values every tool
// shares.
inline std::string FlagHelp(std::string_view values, std::string_view note) {
  std::string help(values);
  if (!note.empty()) help.append(" (").append(note).append(")");
  return help;
}

// --device: where the models run (runtime::ParseDevice reads it); `note` says more (the tool's
// default when it is not a value).
inline CLI::Option* AddDeviceFlag(CLI::App& app, std::string* device, std::string_view note = "") {
  return app.add_option("--device", *device, FlagHelp("cpu | cuda | cuda:N", note))
      ->capture_default_str();
}

// --dtype: the models' weights and activations (runtime::ParseDtype reads it); `note` as
// AddDeviceFlag's.
inline CLI::Option* AddDtypeFlag(CLI::App& app, std::string* dtype, std::string_view note = "") {
  return app.add_option("--dtype", *dtype, FlagHelp("fp32 | bf16 | fp16", note))
      ->capture_default_str();
}

// An option that takes one of `choices` (CLI11 refuses any other while parsing); --help shows the
// choices and the default.
inline CLI::Option* AddChoiceOption(CLI::App& app, const std::string& name, std::string* value,
                                    const std::vector<std::string>& choices,
                                    const std::string& help) {
  return app.add_option(name, *value, help)->check(CLI::IsMember(choices))->capture_default_str();
}

// A numeric option in [lo, hi] (CLI11 refuses any other value while parsing); --help shows the
// range and the default.
template <typename T, typename Bound>
CLI::Option* AddRangeOption(CLI::App& app, const std::string& name, T* value, Bound lo, Bound hi,
                            const std::string& help) {
  return app.add_option(name, *value, help)->capture_default_str()->check(CLI::Range(lo, hi));
}

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_TOOL_MAIN_H_
