// specplan-train: trains one decoder of the model family on a token stream and writes it in
// HuggingFace layout (config.json + model.safetensors + training.json), which specplan-bench and
// every runtime tool load like any checkpoint directory.
//
//   specplan-train --config train/configs/target.json --train corpus/train.ids
//       --heldout corpus/heldout.ids --out models/target --steps 2000
//
// The token streams come from `specplan-tokenizer encode --format ids`. The held-out loss recorded
// in training.json is measured on the checkpoint as written (reloaded from disk), so a later load
// reproduces it.
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
#include "runtime/model_config.h"
#include "runtime/model_loader.h"
#include "runtime/transformer.h"
#include "train/checkpoint.h"
#include "train/lm_training.h"
#include "util/atomic_file.h"

namespace {

using specplan::train::LmTrainOptions;
using specplan::train::LmTrainStep;

struct Args {
  std::string config, train, heldout, out;
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

int Fail(const absl::Status& st) {
  std::cerr << "specplan-train: " << st.message() << "\n";
  return 1;
}

int Run(Args& a) {
  using namespace specplan;
  if (a.threads > 0) torch::set_num_threads(a.threads);
  if (a.eval_tokens < 0) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--eval-tokens = ", a.eval_tokens, ": must be >= 0")));
  }
  auto stored = runtime::ParseDtype(a.dtype);
  if (!stored.ok()) return Fail(stored.status());
  if (absl::Status st = train::ValidateLmTrainOptions(a.o); !st.ok()) return Fail(st);
  std::ifstream cf(a.config);
  if (!cf) return Fail(absl::NotFoundError(absl::StrCat("--config ", a.config, ": cannot open")));
  std::stringstream config_text;
  config_text << cf.rdbuf();
  nlohmann::json config_json = nlohmann::json::parse(config_text.str(), nullptr, false);
  if (config_json.is_discarded()) {
    return Fail(absl::InvalidArgumentError(absl::StrCat("--config ", a.config, ": not JSON")));
  }
  auto config = runtime::ParseHfConfig(config_json, a.config);
  if (!config.ok()) return Fail(config.status());
  auto train_tokens = train::ReadTokenStream(a.train, config->vocab_size);
  if (!train_tokens.ok()) return Fail(train_tokens.status());
  auto heldout_tokens = train::ReadTokenStream(a.heldout, config->vocab_size);
  if (!heldout_tokens.ok()) return Fail(heldout_tokens.status());
  // Nothing is written until training has run: fail on an unwritable --out first.
  if (access(a.out.c_str(), F_OK) == 0 && access(a.out.c_str(), W_OK) != 0) {
    return Fail(absl::PermissionDeniedError(absl::StrCat("--out ", a.out, ": not writable")));
  }

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
  const size_t n_eval = a.eval_tokens == 0
                            ? heldout_tokens->size()
                            : std::min<size_t>(heldout_tokens->size(), a.eval_tokens);
  const std::vector<planner::TokenId> eval(heldout_tokens->begin(),
                                           heldout_tokens->begin() + n_eval);
  a.o.on_step = [&a](const LmTrainStep& s) { Progress(s, a.o.steps); };
  auto result = train::TrainLanguageModel(model->get(), *train_tokens, eval, a.o);
  if (!result.ok()) return Fail(result.status());

  std::map<std::string, std::string> meta = {{"format", "pt"}, {"producer", "specplan-train"}};
  if (absl::Status st = train::WriteHfCheckpoint(**model, config_text.str(), a.out, *stored, meta);
      !st.ok()) {
    return Fail(st);
  }
  // The recorded held-out loss is the written checkpoint's, reloaded as any user would load it.
  auto reloaded = runtime::LoadModel(a.out, 0, ro);
  if (!reloaded.ok()) return Fail(reloaded.status());
  auto heldout = train::HeldoutLoss(**reloaded, *heldout_tokens, a.o.seq_len);
  if (!heldout.ok()) return Fail(heldout.status());

  nlohmann::json log;
  log["config"] = config_json;
  log["parameters"] = params;
  log["stored_dtype"] = a.dtype;
  log["train_file"] = a.train;
  log["heldout_file"] = a.heldout;
  log["train_tokens"] = train_tokens->size();
  log["heldout_tokens"] = heldout_tokens->size();
  log["options"] = {{"steps", a.o.steps},
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
  log["train_losses"] = result->losses;
  log["final_train_loss"] = result->losses.back();
  log["heldout_loss"] = *heldout;  // nats per token, every held-out token, stored weights
  log["heldout_seq_len"] = a.o.seq_len;
  log["train_seconds"] = result->seconds;
  if (absl::Status st = WriteFileAtomically(a.out + "/training.json", log.dump(1) + "\n");
      !st.ok()) {
    return Fail(st);
  }
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
  app.add_option("--config", a.config, "HF config.json of the model to train")->required();
  app.add_option("--train", a.train, "Training tokens: little-endian int32 stream")->required();
  app.add_option("--heldout", a.heldout, "Held-out tokens, same format")->required();
  app.add_option("--out", a.out, "Checkpoint directory (created; files replaced atomically)")
      ->required();
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
  app.add_option("--threads", a.threads, "torch intra-op threads (0 = default)");
  CLI11_PARSE(app, argc, argv);
  return Run(a);
}
