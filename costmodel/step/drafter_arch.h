// What a drafter runs each speculative step, by architecture name: the shapes of one drafter
// forward (so the same engine kernel tables that price the target price it too) and how many
// forwards of what size a step takes.
//
// Names (DrafterArchFor; the target's shapes fill in the widths):
//   eagle         EAGLE(-2) head: fc [2h -> h] over (token embedding, target hidden state) on every
//                 forward, one decoder layer of the target's width, the target's LM head (vocab V).
//   eagle3        EAGLE-3 head: fc [3h -> h] over three of the target's hidden states, only for
//                 tokens the target verified (the extend forward); one decoder layer whose QKV
//                 reads [2h] (embedding ++ hidden); its own draft vocabulary (32000 in the
//                 released Llama-3.1-8B and Qwen3-8B heads; DrafterOptions::draft_vocab overrides).
//   mtp           multi-token-prediction layer (DeepSeek-V3 style): eh_proj [2h -> h] on every
//                 forward, one decoder layer of the target's width, the target's LM head.
//   draft:MODEL   a separate draft model (registry name or HF config path), all of its layers.
//   block:MODEL   a parallel (block) drafter: one forward of MODEL over the gamma positions.
//   ngram, suffix prompt-lookup / suffix-tree drafters: no network; they propose on the host,
//                 priced as a fraction of the verify pass (HostTime::ngram_verify_fraction).
//
// The heads (eagle, eagle3, mtp) of a mixture-of-experts target are priced as dense layers whose
// MLP is as wide as the experts one token activates (experts_active x expert_ffn + shared).
//
// A step that verifies s tokens per sequence and drafts D positions runs (DraftForwards):
//   chain or tree (eagle, eagle3, mtp, draft:M): one extend forward over the s tokens the target
//     just verified (it also drafts the first position), then D - 1 forwards of b * topk beams
//     of one token each (vLLM's EagleProposer and SGLang's EAGLE worker both run this pattern);
//   block:M: one forward of b sequences over D positions;
//   ngram, suffix: none.
#ifndef SPECPLAN_COSTMODEL_STEP_DRAFTER_ARCH_H_
#define SPECPLAN_COSTMODEL_STEP_DRAFTER_ARCH_H_

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/hardware/model_spec.h"

namespace specplan::costmodel {

enum class DrafterKind { kEagle, kEagle3, kMtp, kDraftModel, kBlock, kNgram };

// "eagle", "eagle3", "mtp", "draft", "block", "ngram".
const char* DrafterKindName(DrafterKind kind);

// One drafter forward's network. `layers` holds the decoder layers it runs (a ModelSpec, so the
// composer prices it as it prices a target); the extras are what EAGLE-style heads add around it.
struct DrafterArch {
  std::string name;  // as given: "eagle3", "draft:llama-3.2-1b", "ngram"
  DrafterKind kind = DrafterKind::kEagle3;
  ModelSpec layers;    // the drafter's decoder layers, hidden width and LM head (vocab); unused for
                       // ngram
  int64_t qkv_in = 0;  // width the first layer's QKV GEMM reads (2h for eagle3, else hidden)
  int64_t fc_in = 0;   // width of the fc over the target's hidden states (0 = none)
  bool fc_every_forward = false;  // eagle, mtp: the fc runs on every forward; eagle3: extend only
  bool has_network() const { return kind != DrafterKind::kNgram; }
};

struct DrafterOptions {
  int64_t draft_vocab = 0;  // eagle3's draft vocabulary; 0 = 32000
};

// The drafter `name` attached to `target` (see the top of this file). INVALID_ARGUMENT naming
// the value: an unknown name ("drafter = 'medusa': unknown (known: eagle, eagle3, mtp,
// draft:MODEL, block:MODEL, ngram, suffix)"), a draft model the registry does not know (its error),
// or one whose vocabulary differs from the target's (a draft model must share the tokenizer).
absl::StatusOr<DrafterArch> DrafterArchFor(const std::string& name, const ModelSpec& target,
                                           const DrafterOptions& options = {});

// Whether `name` is one of the names above (a draft:/block: model is not looked up); the error is
// DrafterArchFor's for an unknown name.
absl::Status CheckDrafterName(const std::string& name);

// The drafter architectures a composed profile prices by default for `target`: eagle, eagle3, mtp
// (none for a mixture-of-experts target, whose tables the composer does not read).
std::vector<std::string> DefaultComposedDrafters(const ModelSpec& target);

// One kind of drafter forward a step runs: `count` forwards of `batch` sequences, each `tokens`
// new tokens over `context` cached ones (context grows by one per chained forward; `context` is
// the first's).
struct DraftForward {
  int64_t batch = 1;
  int64_t tokens = 1;
  int64_t context = 0;
  int count = 1;
};
// The forwards of one step (see the top of this file): b sequences, each verifying s tokens over
// c cached, drafting D = draft_steps positions with topk beams. Empty for ngram/suffix and D = 0.
std::vector<DraftForward> DraftForwards(const DrafterArch& arch, int64_t b, int64_t s, int64_t c,
                                        int draft_steps, int topk);

nlohmann::json DrafterArchToJson(const DrafterArch& arch);
absl::StatusOr<DrafterArch> DrafterArchFromJson(const nlohmann::json& j);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_STEP_DRAFTER_ARCH_H_
