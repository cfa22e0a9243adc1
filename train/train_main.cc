// specplan-train: trains one decoder of the model family on a token stream and writes it in
// HuggingFace layout (config.json + model.safetensors + training.json), which specplan-bench and
// every runtime tool load like any checkpoint directory.
//
//   specplan-train --config train/configs/target.json --train corpus/train.ids
//       --heldout corpus/heldout.ids --out models/target --steps 2000
//
//   specplan-train --heads-for models/target --config train/configs/heads.json
//       --train corpus/train.ids --heldout corpus/heldout.ids --out models/heads --steps 600
//
// The second form trains draft heads (runtime/draft_heads.h: parallel heads and the causal
// correction head) on the frozen target in --heads-for and writes them as runtime::DraftHeads::Load
// reads them, with training.json (per-depth held-out losses and top-1 rates).
//
// The token streams come from `specplan-tokenizer encode --format ids`. The held-out figures
// recorded in training.json are measured on the files as written (reloaded from disk), so a later
// load reproduces them.
#include <torch/torch.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/draft_heads.h"
#include "runtime/model_config.h"
#include "runtime/model_loader.h"
#include "runtime/tool_main.h"
#include "runtime/transformer.h"
#include "train/checkpoint.h"
#include "train/heads_training.h"
#include "train/lm_training.h"
#include "util/atomic_file.h"
#include "util/file.h"
#include "util/json_util.h"

namespace {

using specplan::train::LmTrainOptions;
using specplan::train::LmTrainStep;

struct Args {
  std::string config, train, heldout, out;
  std::string heads_for;        // target checkpoint: train draft heads on it
  std::string evaluate;         // evaluate this written checkpoint (or heads) instead
  double lambda_end = 0.5;      // heads: the base loss's final weight
  std::string dtype = "bf16";   // stored weights
  int64_t eval_tokens = 65536;  // held-out tokens of the periodic evaluations (0 = all)
  int threads = 0;
  uint64_t init_seed = 1;
  LmTrainOptions o;
};

// A bar on a terminal; a plain line every ~2 % of the steps otherwise (logs, CI).
void Progress(const LmTrainStep& s, int64_t steps) {
  static const bool tty = isatty(fileno(stderr)) != 0;
  const double eta = s.elapsed_seconds / s.step * (steps - s.step);
  if (tty) {
    const int width = 30;
    const int filled = static_cast<int>(s.step * width / steps);
    std::fprintf(stderr, "\r[%s%s] %lld/%lld loss %.4f lr %.2e %.0fs eta %.0fs",
                 std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
                 static_cast<long long>(s.step), static_cast<long long>(steps), s.loss, s.lr,
                 s.elapsed_seconds, eta);
    if (s.heldout_loss >= 0) std::fprintf(stderr, " heldout %.4f\n", s.heldout_loss);
    if (s.step == steps) std::fprintf(stderr, "\n");
    std::fflush(stderr);
    return;
  }
  const int64_t every = std::max<int64_t>(1, steps / 50);
  if (s.step % every == 0 || s.step == steps || s.heldout_loss >= 0) {
    std::fprintf(stderr, "specplan-train: step %lld/%lld loss %.4f lr %.2e %.0fs eta %.0fs",
                 static_cast<long long>(s.step), static_cast<long long>(steps), s.loss, s.lr,
                 s.elapsed_seconds, eta);
    if (s.heldout_loss >= 0) std::fprintf(stderr, " heldout %.4f", s.heldout_loss);
    std::fprintf(stderr, "\n");
  }
}

int Fail(const absl::Status& st) { return specplan::runtime::ReportFailure("specplan-train", st); }

// What both modes read first: the config (as text and JSON), the stored dtype and the checks that
// need no training.
struct Inputs {
  std::string config_text;
  nlohmann::json config_json;
  torch::ScalarType stored = torch::kBFloat16;
};

absl::StatusOr<Inputs> ReadInputs(const Args& a) {
  using namespace specplan;
  Inputs in;
  if (a.threads > 0) torch::set_num_threads(a.threads);
  if (a.eval_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--eval-tokens = ", a.eval_tokens, ": must be >= 0"));
  }
  auto stored = runtime::ParseDtype(a.dtype);
  if (!stored.ok()) return stored.status();
  in.stored = *stored;
  if (absl::Status st = train::ValidateLmTrainOptions(a.o); !st.ok()) return st;
  auto config_text = specplan::ReadFileToString(a.config);  // its size limit, named errors
  if (!config_text.ok()) {
    return absl::Status(config_text.status().code(),
                        absl::StrCat("--config ", config_text.status().message()));
  }
  in.config_text = *std::move(config_text);
  auto config_json = specplan::json_util::ParseJson(in.config_text, a.config);
  if (!config_json.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--config ", config_json.status().message()));
  }
  in.config_json = *std::move(config_json);
  // Nothing is written until training has run: fail on an unwritable --out first.
  if (access(a.out.c_str(), F_OK) == 0 && access(a.out.c_str(), W_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("--out ", a.out, ": not writable"));
  }
  return in;
}

// The first eval_tokens held-out tokens (all when 0): what periodic evaluations read.
std::vector<specplan::planner::TokenId> EvalSlice(
    const Args& a, const std::vector<specplan::planner::TokenId>& h) {
  const size_t n = a.eval_tokens == 0 ? h.size() : std::min<size_t>(h.size(), a.eval_tokens);
  return std::vector<specplan::planner::TokenId>(h.begin(), h.begin() + n);
}

nlohmann::json OptionsJson(const Args& a) {
  return {{"steps", a.o.steps},
          {"batch", a.o.batch},
          {"seq_len", a.o.seq_len},
          {"lr", a.o.lr},
          {"min_lr_fraction", a.o.min_lr_fraction},
          {"warmup", a.o.warmup},
          {"weight_decay", a.o.weight_decay},
          {"clip_norm", a.o.clip_norm},
          {"seed", a.o.seed},
          {"init_seed", a.init_seed},
          {"threads", torch::get_num_threads()}};
}

// training.json's fields common to both modes.
nlohmann::json RunLog(const Args& a, int64_t params, size_t train_tokens, size_t heldout_tokens,
                      const specplan::train::LmTrainResult& result) {
  nlohmann::json log;
  log["parameters"] = params;
  log["stored_dtype"] = a.dtype;
  log["train_file"] = a.train;
  log["heldout_file"] = a.heldout;
  log["train_tokens"] = train_tokens;
  log["heldout_tokens"] = heldout_tokens;
  log["options"] = OptionsJson(a);
  log["train_losses"] = result.losses;
  log["final_train_loss"] = result.losses.back();
  log["heldout_seq_len"] = a.o.seq_len;
  log["train_seconds"] = result.seconds;
  return log;
}

absl::Status WriteLog(const Args& a, const nlohmann::json& log) {
  return specplan::WriteFileAtomically(a.out + "/training.json", log.dump(1) + "\n");
}

int RunHeads(Args& a) {
  using namespace specplan;
  auto in = ReadInputs(a);
  if (!in.ok()) return Fail(in.status());
  auto target = train::LoadFrozenForTraining(a.heads_for);
  if (!target.ok()) return Fail(target.status());
  // hidden_size and vocab_size default to the target's.
  nlohmann::json cj = in->config_json;
  if (cj.is_object() && !cj.contains("hidden_size"))
    cj["hidden_size"] = (*target)->config().hidden_size;
  if (cj.is_object() && !cj.contains("vocab_size"))
    cj["vocab_size"] = (*target)->config().vocab_size;
  auto config = runtime::ParseDraftHeadsConfig(cj, "--config " + a.config);
  if (!config.ok()) return Fail(config.status());
  const int64_t vocab = config->vocab_size;
  auto train_tokens = train::ReadTokenStream(a.train, vocab);
  if (!train_tokens.ok()) return Fail(train_tokens.status());
  auto heldout_tokens = train::ReadTokenStream(a.heldout, vocab);
  if (!heldout_tokens.ok()) return Fail(heldout_tokens.status());
  auto heads = runtime::DraftHeads::CreateRandom(*config, **target, a.init_seed, true);
  if (!heads.ok()) return Fail(heads.status());
  const int64_t params = (*heads)->NumParameters();
  std::fprintf(stderr,
               "specplan-train: draft heads (%lld parallel, causal state %lld) for %s, %lld "
               "parameters; %lld steps of %lld x %lld rows\n",
               static_cast<long long>(config->num_heads),
               static_cast<long long>(config->causal_state), a.heads_for.c_str(),
               static_cast<long long>(params), static_cast<long long>(a.o.steps),
               static_cast<long long>(a.o.batch), static_cast<long long>(a.o.seq_len));
  train::HeadsTrainOptions ho;
  ho.lm = a.o;
  ho.lm.on_step = [&a](const LmTrainStep& s) { Progress(s, a.o.steps); };
  ho.lambda_end = a.lambda_end;
  auto result =
      train::TrainDraftHeads(heads->get(), *train_tokens, EvalSlice(a, *heldout_tokens), ho);
  if (!result.ok()) return Fail(result.status());
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"producer", "specplan-train"}};
  if (absl::Status st = (*heads)->Save(a.out, in->stored, meta); !st.ok()) return Fail(st);
  // The recorded figures are those of the heads as written, on the target as stored.
  auto reloaded = runtime::DraftHeads::Load(a.out, **target);
  if (!reloaded.ok()) return Fail(reloaded.status());
  auto eval =
      train::EvaluateDraftHeads(**reloaded, *heldout_tokens, a.o.seq_len, a.o.batch, a.lambda_end);
  if (!eval.ok()) return Fail(eval.status());

  nlohmann::json log = RunLog(a, params, train_tokens->size(), heldout_tokens->size(), *result);
  log["config"] = runtime::DraftHeadsConfigJson(*config);
  log["target"] = a.heads_for;
  log["options"]["lambda_end"] = a.lambda_end;
  log["heldout_objective"] = eval->objective;
  log["heldout_positions_per_depth"] = eval->positions;
  log["heldout_base_loss"] = eval->base_loss;  // per depth 1..gamma, nats
  log["heldout_final_loss"] = eval->final_loss;
  log["heldout_base_top1"] = eval->base_top1;
  log["heldout_final_top1"] = eval->final_top1;
  if (absl::Status st = WriteLog(a, log); !st.ok()) return Fail(st);
  std::printf(
      "wrote %s: %lld parameters, held-out objective %.4f nats; depth-1 top-1 %.3f "
      "(parallel) %.3f (corrected), %.0f s\n",
      a.out.c_str(), static_cast<long long>(params), eval->objective, eval->base_top1[0],
      eval->final_top1[0], result->seconds);
  return 0;
}

// --evaluate DIR: the held-out figures of a written checkpoint (or, with --heads-for, of the draft
// heads in DIR on that target), as training.json records them, printed as JSON. No training.
int RunEvaluate(const Args& a) {
  using namespace specplan;
  if (a.threads > 0) torch::set_num_threads(a.threads);
  nlohmann::json out;
  if (a.heads_for.empty()) {
    auto model = runtime::LoadModel(a.evaluate, 0, runtime::RuntimeOptions());
    if (!model.ok()) return Fail(model.status());
    auto tokens = train::ReadTokenStream(a.heldout, (*model)->config().vocab_size);
    if (!tokens.ok()) return Fail(tokens.status());
    auto loss = train::HeldoutLoss(**model, *tokens, a.o.seq_len);
    if (!loss.ok()) return Fail(loss.status());
    out["heldout_loss"] = *loss;
  } else {
    auto target = train::LoadFrozenForTraining(a.heads_for);
    if (!target.ok()) return Fail(target.status());
    auto heads = runtime::DraftHeads::Load(a.evaluate, **target);
    if (!heads.ok()) return Fail(heads.status());
    auto tokens = train::ReadTokenStream(a.heldout, (*target)->config().vocab_size);
    if (!tokens.ok()) return Fail(tokens.status());
    auto eval = train::EvaluateDraftHeads(**heads, *tokens, a.o.seq_len, a.o.batch, a.lambda_end);
    if (!eval.ok()) return Fail(eval.status());
    out["heldout_objective"] = eval->objective;
    out["heldout_base_loss"] = eval->base_loss;
    out["heldout_final_loss"] = eval->final_loss;
    out["heldout_base_top1"] = eval->base_top1;
    out["heldout_final_top1"] = eval->final_top1;
  }
  out["heldout_file"] = a.heldout;
  out["heldout_seq_len"] = a.o.seq_len;
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}

int Run(Args& a) {
  using namespace specplan;
  if (!a.evaluate.empty()) return RunEvaluate(a);
  if (!a.heads_for.empty()) return RunHeads(a);
  auto in = ReadInputs(a);
  if (!in.ok()) return Fail(in.status());
  const nlohmann::json& config_json = in->config_json;
  auto config = runtime::ParseHfConfig(config_json, a.config);
  if (!config.ok()) return Fail(config.status());
  auto train_tokens = train::ReadTokenStream(a.train, config->vocab_size);
  if (!train_tokens.ok()) return Fail(train_tokens.status());
  auto heldout_tokens = train::ReadTokenStream(a.heldout, config->vocab_size);
  if (!heldout_tokens.ok()) return Fail(heldout_tokens.status());

  runtime::RuntimeOptions ro;  // fp32 on the CPU
  auto model = runtime::Transformer::CreateTrainable(*config, a.init_seed, ro);
  if (!model.ok()) return Fail(model.status());
  train::InitForTraining(model->get(), a.init_seed);
  int64_t params = 0;
  for (const auto& [name, t] : (*model)->NamedParameters()) params += t.numel();
  std::fprintf(stderr,
               "specplan-train: %s, %lld parameters; %zu training and %zu held-out tokens; "
               "%lld steps of %lld x %lld tokens\n",
               a.config.c_str(), static_cast<long long>(params), train_tokens->size(),
               heldout_tokens->size(), static_cast<long long>(a.o.steps),
               static_cast<long long>(a.o.batch), static_cast<long long>(a.o.seq_len));
  // Periodic evaluations read the first eval_tokens held-out tokens; the final one reads all.
  const std::vector<planner::TokenId> eval = EvalSlice(a, *heldout_tokens);
  a.o.on_step = [&a](const LmTrainStep& s) { Progress(s, a.o.steps); };
  auto result = train::TrainLanguageModel(model->get(), *train_tokens, eval, a.o);
  if (!result.ok()) return Fail(result.status());

  std::map<std::string, std::string> meta = {{"format", "pt"}, {"producer", "specplan-train"}};
  if (absl::Status st = train::WriteHfCheckpoint(**model, in->config_text, a.out, in->stored, meta);
      !st.ok()) {
    return Fail(st);
  }
  // The recorded held-out loss is the written checkpoint's, reloaded as any user would load it.
  auto reloaded = runtime::LoadModel(a.out, 0, ro);
  if (!reloaded.ok()) return Fail(reloaded.status());
  auto heldout = train::HeldoutLoss(**reloaded, *heldout_tokens, a.o.seq_len);
  if (!heldout.ok()) return Fail(heldout.status());

  nlohmann::json log = RunLog(a, params, train_tokens->size(), heldout_tokens->size(), *result);
  log["config"] = config_json;
  log["heldout_loss"] = *heldout;  // nats per token, every held-out token, stored weights
  if (absl::Status st = WriteLog(a, log); !st.ok()) return Fail(st);
  std::printf(
      "wrote %s: %lld parameters, train loss %.4f, held-out loss %.4f nats (%s weights), "
      "%.0f s\n",
      a.out.c_str(), static_cast<long long>(params), result->losses.back(), *heldout,
      a.dtype.c_str(), result->seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{
      "Train one decoder of the model family on a token stream (specplan-tokenizer encode "
      "--format ids) and write it in HuggingFace layout: config.json, model.safetensors and "
      "training.json (losses, held-out loss of the stored weights)"};
  auto* config_opt = app.add_option("--config", a.config,
                                    "HF config.json of the model to train; with --heads-for, the "
                                    "heads' config (num_heads, causal_state, causal_rank)");
  auto* evaluate_opt = app.add_option(
      "--evaluate", a.evaluate,
      "Only evaluate this written checkpoint (with --heads-for: these draft heads) on --heldout "
      "and print the held-out figures as JSON");
  app.add_option("--heads-for", a.heads_for,
                 "Train draft heads (parallel + causal correction) on this frozen target "
                 "checkpoint instead of a model");
  app.add_option("--lambda-end", a.lambda_end,
                 "Heads: weight of the parallel heads' own loss at the last step (curriculum "
                 "from 1)")
      ->capture_default_str();
  auto* train_opt =
      app.add_option("--train", a.train, "Training tokens: little-endian int32 stream");
  app.add_option("--heldout", a.heldout, "Held-out tokens, same format")->required();
  auto* out_opt =
      app.add_option("--out", a.out, "Checkpoint directory (created; files replaced atomically)");
  app.add_option("--steps", a.o.steps, "Optimiser steps")->capture_default_str();
  app.add_option("--batch", a.o.batch, "Windows per step")->capture_default_str();
  app.add_option("--seq-len", a.o.seq_len, "Tokens predicted per window")->capture_default_str();
  app.add_option("--lr", a.o.lr, "Peak learning rate (AdamW)")->capture_default_str();
  app.add_option("--min-lr-fraction", a.o.min_lr_fraction,
                 "The cosine decays to lr x this at the last step")
      ->capture_default_str();
  app.add_option("--warmup", a.o.warmup, "Steps of linear warm-up")->capture_default_str();
  app.add_option("--weight-decay", a.o.weight_decay, "AdamW decoupled weight decay")
      ->capture_default_str();
  app.add_option("--clip", a.o.clip_norm, "Global gradient-norm clip")->capture_default_str();
  app.add_option("--seed", a.o.seed, "Seed of the training windows")->capture_default_str();
  app.add_option("--init-seed", a.init_seed, "Seed of the initial weights")->capture_default_str();
  app.add_option("--eval-every", a.o.eval_every,
                 "Held-out loss every N steps on the first --eval-tokens tokens (0 = at the end)")
      ->capture_default_str();
  app.add_option("--eval-tokens", a.eval_tokens,
                 "Held-out tokens of the periodic evaluations (0 = all)")
      ->capture_default_str();
  app.add_option("--dtype", a.dtype, "Stored weights: fp32 | bf16 | fp16")->capture_default_str();
  specplan::runtime::AddThreadsFlag(app, &a.threads);
  CLI11_PARSE(app, argc, argv);
  if (evaluate_opt->count() == 0) {
    for (const auto* opt : {config_opt, train_opt, out_opt}) {
      if (opt->count() == 0) {
        std::cerr << "specplan-train: " << opt->get_name() << " is required (unless --evaluate)\n";
        return 2;
      }
    }
  }
  return Run(a);
}
