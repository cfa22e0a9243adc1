// specplan-logits: one causal forward of given token ids through the runtime, and its logits, so
// another implementation (transformers, llama.cpp, ...) can be compared with the runtime.
//
//   specplan-logits --model tests/runtime/data/hf/llama --ids 1,5,9
//   specplan-logits --model random:tiny --ids-file ids.txt --json > logits.json
//   specplan-logits --model DIR --ids-file DIR/reference.safetensors --out logits.safetensors
//
// Output: a table (per position: the input id, the argmax and the top-k ids with their logits);
// --json prints {"model", "dtype", "device", "input_ids", "vocab_size", "logits" [T][V]} instead;
// --out FILE.safetensors also writes input_ids (int64 [T]) and logits (float32 [T][V]).
#include <torch/torch.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "runtime/model_loader.h"
#include "runtime/safetensors.h"
#include "runtime/tool_main.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

struct Args {
  std::string model;
  std::string ids;
  std::string ids_file;
  int top_k = 5;
  bool json = false;
  std::string out;
  std::string device = "cpu";
  std::string dtype = "fp32";
  uint64_t seed = 0;
  int threads = 0;
};

// "1,2, 3" or "1 2\n3": integers separated by commas and/or whitespace. `flag` names the source
// in errors.
absl::StatusOr<std::vector<int64_t>> ParseIdList(const std::string& text, const std::string& flag) {
  std::vector<int64_t> ids;
  for (absl::string_view piece : absl::StrSplit(text, absl::ByAnyChar(", \t\r\n"))) {
    if (piece.empty()) continue;
    int64_t id = 0;
    if (!absl::SimpleAtoi(piece, &id)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": \"", piece, "\" (token ", ids.size(), ") is not an integer"));
    }
    ids.push_back(id);
  }
  if (ids.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": no token ids"));
  return ids;
}

// A text file of ids (as --ids), or a .safetensors file whose int64 "input_ids" tensor is used
// (e.g. a fixture's reference.safetensors).
absl::StatusOr<std::vector<int64_t>> ReadIdsFile(const std::string& path) {
  const std::string flag = absl::StrCat("--ids-file = \"", path, "\"");
  if (absl::EndsWith(path, ".safetensors")) {
    auto file = SafetensorsFile::Open(path);
    if (!file.ok())
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", file.status().message()));
    auto ids = (*file)->Get("input_ids");
    if (!ids.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": no \"input_ids\" tensor"));
    }
    if (ids->scalar_type() != torch::kInt64 || ids->dim() != 1 || ids->numel() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": \"input_ids\" must be a non-empty 1-D int64 tensor"));
    }
    const torch::Tensor t = ids->contiguous();
    return std::vector<int64_t>(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(flag, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  return ParseIdList(text.str(), flag);
}

std::string FormatLogit(float v) { return absl::StrFormat("%.6g", v); }

absl::Status RunLogits(const Args& args) {
  if (args.ids.empty() == args.ids_file.empty()) {
    return absl::InvalidArgumentError("give exactly one of --ids and --ids-file");
  }
  if (!args.out.empty() && !absl::EndsWith(args.out, ".safetensors")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--out = \"", args.out, "\": expected a FILE.safetensors path"));
  }
  std::vector<int64_t> ids;
  if (!args.ids.empty()) {
    SPECPLAN_ASSIGN_OR_RETURN(ids,
                              ParseIdList(args.ids, absl::StrCat("--ids = \"", args.ids, "\"")));
  } else {
    SPECPLAN_ASSIGN_OR_RETURN(ids, ReadIdsFile(args.ids_file));
  }
  if (args.threads > 0) torch::set_num_threads(args.threads);
  RuntimeOptions ro;
  auto dtype = ParseDtype(args.dtype);
  if (!dtype.ok())
    return absl::InvalidArgumentError(absl::StrCat("--dtype: ", dtype.status().message()));
  ro.dtype = *dtype;
  auto device = ParseDevice(args.device);
  if (!device.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--device: ", device.status().message()));
  }
  ro.device = *device;
  auto model = LoadModel(args.model, args.seed, ro);
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("--model = \"", args.model, "\": ", model.status().message()));
  }
  const int64_t vocab = (*model)->config().vocab_size;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return absl::InvalidArgumentError(
          absl::StrCat(args.ids.empty() ? "--ids-file" : "--ids", ": token ", i, " = ", ids[i],
                       ": must be in [0, ", vocab, ") (the model's vocab_size)"));
    }
  }
  const int64_t T = static_cast<int64_t>(ids.size());
  KvCache cache = (*model)->NewCache(T);
  torch::NoGradGuard no_grad;
  // In range (checked above), so every id fits planner::TokenId.
  const std::vector<planner::TokenId> token_ids(ids.begin(), ids.end());
  const torch::Tensor logits =
      (*model)->ForwardCausal(token_ids, 0, &cache).to(torch::kCPU, torch::kFloat32).contiguous();
  const float* data = logits.data_ptr<float>();

  if (!args.out.empty()) {
    SPECPLAN_RETURN_IF_ERROR(WriteSafetensors(
        args.out, {{"input_ids", torch::tensor(ids, torch::kInt64)}, {"logits", logits}},
        {{"model", args.model}, {"dtype", args.dtype}, {"device", args.device}}));
  }
  if (args.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t t = 0; t < T; ++t) {
      rows.push_back(std::vector<float>(data + t * vocab, data + (t + 1) * vocab));
    }
    nlohmann::json report = {{"model", args.model},   {"dtype", args.dtype},
                             {"device", args.device}, {"input_ids", ids},
                             {"vocab_size", vocab},   {"logits", std::move(rows)}};
    std::cout << report.dump() << "\n";
    return absl::OkStatus();
  }
  const int64_t k = std::min<int64_t>(args.top_k, vocab);
  std::printf("model %s (%s, %s): %lld tokens, vocab %lld\n", args.model.c_str(),
              args.dtype.c_str(), args.device.c_str(), static_cast<long long>(T),
              static_cast<long long>(vocab));
  std::printf("%5s %8s %8s  top-%lld (id:logit)\n", "pos", "id", "argmax",
              static_cast<long long>(k));
  const auto top = logits.topk(k, /*dim=*/1);
  const torch::Tensor values = std::get<0>(top).contiguous();
  const torch::Tensor indices = std::get<1>(top).contiguous();
  for (int64_t t = 0; t < T; ++t) {
    std::string row;
    for (int64_t j = 0; j < k; ++j) {
      absl::StrAppend(&row, j ? " " : "", indices[t][j].item<int64_t>(), ":",
                      FormatLogit(values[t][j].item<float>()));
    }
    std::printf("%5lld %8lld %8lld  %s\n", static_cast<long long>(t),
                static_cast<long long>(ids[t]),
                static_cast<long long>(indices[t][0].item<int64_t>()), row.c_str());
  }
  if (!args.out.empty()) std::printf("wrote %s\n", args.out.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace specplan::runtime

int main(int argc, char** argv) {
  specplan::runtime::Args args;
  CLI::App app{
      "specplan-logits: the runtime's logits for given token ids (one causal forward from "
      "position 0), to compare another implementation with the runtime"};
  app.add_option("--model", args.model,
                 "DIR (config.json + safetensors), random:NAME or random:DIR (runtime/README.md "
                 "\"Model sources\")")
      ->required();
  app.add_option("--ids", args.ids, "token ids, comma or space separated: 1,2,3");
  app.add_option("--ids-file", args.ids_file,
                 "file of token ids (as --ids), or a .safetensors file whose int64 input_ids "
                 "tensor is used");
  app.add_option("--top-k", args.top_k, "ids listed per position in the table (at most V)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app.add_flag("--json", args.json,
               "print JSON {model, dtype, device, input_ids, vocab_size, logits [T][V]} instead "
               "of the table");
  app.add_option("--out", args.out,
                 "also write FILE.safetensors with input_ids (int64 [T]) and logits "
                 "(float32 [T][V])");
  specplan::runtime::AddDeviceFlag(app, &args.device);
  specplan::runtime::AddDtypeFlag(app, &args.dtype, "logits are written as float32");
  app.add_option("--seed", args.seed, "weight seed for random: models")->capture_default_str();
  specplan::runtime::AddThreadsFlag(app, &args.threads);
  CLI11_PARSE(app, argc, argv);
  return specplan::runtime::ExitStatus("specplan-logits", specplan::runtime::RunLogits(args));
}
