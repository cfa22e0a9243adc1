#include "costmodel/step/drafter_arch.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "costmodel/hardware/model_registry.h"
#include "util/enum_names.h"
#include "util/status_macros.h"

namespace specplan::costmodel {
namespace {

constexpr EnumEntry<DrafterKind> kDrafterKindNames[] = {
    {DrafterKind::kEagle, "eagle"}, {DrafterKind::kEagle3, "eagle3"},
    {DrafterKind::kMtp, "mtp"},     {DrafterKind::kDraftModel, "draft"},
    {DrafterKind::kBlock, "block"}, {DrafterKind::kNgram, "ngram"}};

// The released EAGLE-3 heads for Llama-3.1-8B (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) and Qwen3-8B
// (AngelSlim/Qwen3-8B_eagle3) both set draft_vocab_size = 32000 in their config.json.
constexpr int64_t kEagle3DraftVocab = 32000;

constexpr const char* kKnownDrafters =
    "eagle, eagle3, mtp, draft:MODEL, block:MODEL, ngram, suffix";

absl::Status Unknown(const std::string& name, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("drafter = '", name, "': ", why));
}

// One decoder layer of the target's width (the EAGLE and MTP heads copy the target's layer).
ModelSpec OneLayerOf(const ModelSpec& target, const std::string& name, int64_t vocab) {
  ModelSpec m = target;
  m.name = name;
  m.layers = 1;
  if (target.is_moe()) {
    // A head of a mixture-of-experts target is dense: its MLP as wide as the experts one token
    // activates (what the target's layer computes per token).
    m.ffn = target.experts_active * target.expert_ffn + target.shared_expert_ffn;
    m.experts = m.experts_active = m.expert_ffn = m.shared_expert_ffn = 0;
    m.routing_skew = 0;
    m.gated_mlp = true;
  }
  m.vocab = vocab;
  m.tied_embeddings = false;
  return m;
}

}  // namespace

const char* DrafterKindName(DrafterKind kind) { return EnumName(kDrafterKindNames, kind); }

absl::StatusOr<DrafterArch> DrafterArchFor(const std::string& name, const ModelSpec& target,
                                           const DrafterOptions& options) {
  DrafterArch a;
  a.name = name;
  const int64_t h = target.hidden;
  if (name == "eagle") {
    a.kind = DrafterKind::kEagle;
    a.layers = OneLayerOf(target, "eagle head of " + target.name, target.vocab);
    a.qkv_in = h;
    a.fc_in = 2 * h;
    a.fc_every_forward = true;
  } else if (name == "eagle3") {
    // At most 2^24 tokens (ops/validate.h kMaxVocab: the physical range every front end states).
    if (options.draft_vocab < 0 || options.draft_vocab > (int64_t{1} << 24)) {
      return absl::InvalidArgumentError(absl::StrCat("draft_vocab = ", options.draft_vocab,
                                                     ": must be in [0, 16777216] (0 = 32000)"));
    }
    a.kind = DrafterKind::kEagle3;
    a.layers = OneLayerOf(target, "eagle3 head of " + target.name,
                          options.draft_vocab > 0 ? options.draft_vocab : kEagle3DraftVocab);
    a.qkv_in = 2 * h;
    a.fc_in = 3 * h;
    a.fc_every_forward = false;
  } else if (name == "mtp") {
    a.kind = DrafterKind::kMtp;
    a.layers = OneLayerOf(target, "mtp layer of " + target.name, target.vocab);
    a.qkv_in = h;
    a.fc_in = 2 * h;
    a.fc_every_forward = true;
  } else if (name == "ngram" || name == "suffix") {
    a.kind = DrafterKind::kNgram;
  } else if (absl::StartsWith(name, "draft:") || absl::StartsWith(name, "block:")) {
    const std::string model = name.substr(name.find(':') + 1);
    if (model.empty()) return Unknown(name, "names no model (e.g. draft:llama-3.2-1b)");
    auto spec = ResolveModel(model);
    if (!spec.ok()) return Unknown(name, std::string(spec.status().message()));
    if (spec->vocab != target.vocab) {
      return Unknown(name, absl::StrCat("its vocabulary (", spec->vocab, ") is not the target ",
                                        target.name, "'s (", target.vocab,
                                        "): a draft model must share the target's tokenizer"));
    }
    a.kind = absl::StartsWith(name, "draft:") ? DrafterKind::kDraftModel : DrafterKind::kBlock;
    a.layers = *spec;
    a.layers.dtype = target.dtype;
    a.layers.tp = target.tp;
    a.qkv_in = spec->hidden;
  } else {
    return Unknown(name, absl::StrCat("unknown (known: ", kKnownDrafters, ")"));
  }
  return a;
}

absl::Status CheckDrafterName(const std::string& name) {
  for (const char* known : {"eagle", "eagle3", "mtp", "ngram", "suffix"}) {
    if (name == known) return absl::OkStatus();
  }
  if ((absl::StartsWith(name, "draft:") || absl::StartsWith(name, "block:")) && name.size() > 6) {
    return absl::OkStatus();
  }
  return Unknown(name, absl::StrCat("unknown (known: ", kKnownDrafters, ")"));
}

std::vector<std::string> DefaultComposedDrafters(const ModelSpec& target) {
  if (target.is_moe()) return {};
  return {"eagle", "eagle3", "mtp"};
}

std::vector<DraftForward> DraftForwards(const DrafterArch& arch, int64_t b, int64_t s, int64_t c,
                                        int draft_steps, int topk) {
  std::vector<DraftForward> out;
  if (!arch.has_network() || draft_steps <= 0) return out;
  if (arch.kind == DrafterKind::kBlock) {
    out.push_back({b, draft_steps, c, 1});
    return out;
  }
  out.push_back({b, s, c, 1});  // the extend over the verified tokens; drafts position 1
  if (draft_steps > 1) {
    out.push_back({b * std::max(topk, 1), 1, c + s, draft_steps - 1});
  }
  return out;
}

nlohmann::json DrafterArchToJson(const DrafterArch& a) {
  return {{"name", a.name},
          {"kind", DrafterKindName(a.kind)},
          {"layers", a.has_network() ? ModelSpecToJson(a.layers) : nlohmann::json(nullptr)},
          {"qkv_in", a.qkv_in},
          {"fc_in", a.fc_in},
          {"fc_every_forward", a.fc_every_forward}};
}

absl::StatusOr<DrafterArch> DrafterArchFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("drafter: expected an object");
  DrafterArch a;
  for (const char* key : {"name", "kind", "qkv_in", "fc_in", "fc_every_forward", "layers"}) {
    if (!j.contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat("drafter: missing \"", key, "\""));
    }
  }
  if (!j["name"].is_string() || !j["kind"].is_string() || !j["qkv_in"].is_number_integer() ||
      !j["fc_in"].is_number_integer() || !j["fc_every_forward"].is_boolean()) {
    return absl::InvalidArgumentError(
        "drafter: name and kind must be strings, qkv_in and fc_in integers, fc_every_forward a "
        "boolean");
  }
  a.name = j["name"].get<std::string>();
  SPECPLAN_ASSIGN_OR_RETURN(
      a.kind, ParseEnum(kDrafterKindNames, "drafter.kind", j["kind"].get<std::string>()));
  a.qkv_in = j["qkv_in"].get<int64_t>();
  a.fc_in = j["fc_in"].get<int64_t>();
  a.fc_every_forward = j["fc_every_forward"].get<bool>();
  if (a.qkv_in < 0 || a.fc_in < 0) {
    return absl::InvalidArgumentError("drafter: qkv_in and fc_in must be >= 0");
  }
  if (a.has_network()) {
    SPECPLAN_ASSIGN_OR_RETURN(a.layers, ModelSpecFromJson(j["layers"]));
  }
  return a;
}

}  // namespace specplan::costmodel
