// Drafter architectures by name (costmodel/step/drafter_arch.h): each name's shapes on the
// registry's targets, the forwards a step runs, the JSON form and the name check.
#include "costmodel/step/drafter_arch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "costmodel/hardware/model_registry.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

ModelSpec Llama8b() { return *ResolveModel("llama-3.1-8b"); }

DrafterArch ArchOrDie(const std::string& name, const ModelSpec& target,
                      const DrafterOptions& options = {}) {
  auto a = DrafterArchFor(name, target, options);
  EXPECT_TRUE(a.ok()) << name << ": " << a.status();
  return a.ok() ? *a : DrafterArch{};
}

void ExpectRefused(const std::string& name, const ModelSpec& target, const std::string& message,
                   const DrafterOptions& options = {}) {
  auto a = DrafterArchFor(name, target, options);
  ASSERT_FALSE(a.ok()) << name;
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument) << name;
  EXPECT_THAT(std::string(a.status().message()), HasSubstr(message)) << name;
}

TEST(DrafterArch, Eagle3OnLlama8bReadsTwoHiddenWideQkvAndItsOwnVocabulary) {
  const ModelSpec t = Llama8b();
  ASSERT_EQ(t.hidden, 4096);
  const DrafterArch a = ArchOrDie("eagle3", t);
  EXPECT_EQ(a.name, "eagle3");
  EXPECT_EQ(a.kind, DrafterKind::kEagle3);
  EXPECT_TRUE(a.has_network());
  EXPECT_EQ(a.qkv_in, 2 * 4096);
  EXPECT_EQ(a.fc_in, 3 * 4096);
  EXPECT_FALSE(a.fc_every_forward);  // the fc runs on the extend forward only
  // One decoder layer of the target's width; the released heads' 32000-token draft vocabulary.
  EXPECT_EQ(a.layers.layers, 1);
  EXPECT_EQ(a.layers.hidden, t.hidden);
  EXPECT_EQ(a.layers.n_q, t.n_q);
  EXPECT_EQ(a.layers.n_kv, t.n_kv);
  EXPECT_EQ(a.layers.head_dim, t.head_dim);
  EXPECT_EQ(a.layers.ffn, t.ffn);
  EXPECT_EQ(a.layers.vocab, 32000);
  EXPECT_FALSE(a.layers.tied_embeddings);
  EXPECT_FALSE(a.layers.is_moe());

  DrafterOptions wide;
  wide.draft_vocab = 50000;
  EXPECT_EQ(ArchOrDie("eagle3", t, wide).layers.vocab, 50000);
  DrafterOptions bad;
  bad.draft_vocab = -1;
  ExpectRefused("eagle3", t, "draft_vocab = -1: must be in [0, 16777216]", bad);
}

TEST(DrafterArch, EagleAndMtpRunTheirFcOnEveryForwardWithTheTargetsHead) {
  const ModelSpec t = Llama8b();
  for (const auto& [name, kind] :
       {std::pair<std::string, DrafterKind>{"eagle", DrafterKind::kEagle},
        {"mtp", DrafterKind::kMtp}}) {
    SCOPED_TRACE(name);
    const DrafterArch a = ArchOrDie(name, t);
    EXPECT_EQ(a.kind, kind);
    EXPECT_EQ(a.qkv_in, t.hidden);
    EXPECT_EQ(a.fc_in, 2 * t.hidden);
    EXPECT_TRUE(a.fc_every_forward);
    EXPECT_EQ(a.layers.layers, 1);
    EXPECT_EQ(a.layers.hidden, t.hidden);
    EXPECT_EQ(a.layers.ffn, t.ffn);
    EXPECT_EQ(a.layers.vocab, t.vocab);  // the target's LM head
  }
}

TEST(DrafterArch, DraftModelMustShareTheTargetsVocabulary) {
  const ModelSpec t = Llama8b();
  const DrafterArch a = ArchOrDie("draft:llama-3.2-1b", t);
  const ModelSpec small = *ResolveModel("llama-3.2-1b");
  EXPECT_EQ(a.kind, DrafterKind::kDraftModel);
  EXPECT_EQ(a.layers.layers, small.layers);  // all of its layers
  EXPECT_EQ(a.layers.hidden, small.hidden);
  EXPECT_EQ(a.layers.vocab, t.vocab);
  EXPECT_EQ(a.layers.dtype, t.dtype);
  EXPECT_EQ(a.layers.tp, t.tp);
  EXPECT_EQ(a.qkv_in, small.hidden);
  EXPECT_EQ(a.fc_in, 0);

  const DrafterArch block = ArchOrDie("block:llama-3.2-1b", t);
  EXPECT_EQ(block.kind, DrafterKind::kBlock);
  EXPECT_EQ(block.layers.layers, small.layers);

  // Qwen3's tokenizer is not Llama's.
  ExpectRefused("draft:qwen3-0.6b", t, "drafter = 'draft:qwen3-0.6b': its vocabulary (151936)");
  ExpectRefused("draft:qwen3-0.6b", t, "(128256): a draft model must share the target's tokenizer");
  ExpectRefused("draft:", t, "drafter = 'draft:': names no model");
  ExpectRefused("block:", t, "drafter = 'block:': names no model");
  ExpectRefused("draft:no-such-model", t, "drafter = 'draft:no-such-model': ");
}

TEST(DrafterArch, NgramAndSuffixHaveNoNetwork) {
  for (const char* name : {"ngram", "suffix"}) {
    const DrafterArch a = ArchOrDie(name, Llama8b());
    EXPECT_EQ(a.kind, DrafterKind::kNgram) << name;
    EXPECT_FALSE(a.has_network()) << name;
    EXPECT_EQ(a.name, name);
  }
}

TEST(DrafterArch, UnknownNameListsTheKnownOnes) {
  ExpectRefused("medusa", Llama8b(),
                "drafter = 'medusa': unknown (known: eagle, eagle3, mtp, draft:MODEL, "
                "block:MODEL, ngram, suffix)");
  ExpectRefused("", Llama8b(), "drafter = '': unknown");
  ExpectRefused("EAGLE3", Llama8b(), "drafter = 'EAGLE3': unknown");
}

TEST(DrafterArch, HeadOfAMixtureOfExpertsTargetIsDenseAsWideAsTheActiveExperts) {
  ModelSpec t = *ResolveModel("qwen3-30b-a3b");
  ASSERT_TRUE(t.is_moe());
  t.shared_expert_ffn = 512;  // a shared expert too, so that every term of the width counts
  for (const char* name : {"eagle", "eagle3", "mtp"}) {
    SCOPED_TRACE(name);
    const DrafterArch a = ArchOrDie(name, t);
    EXPECT_FALSE(a.layers.is_moe());
    EXPECT_EQ(a.layers.ffn, t.experts_active * t.expert_ffn + 512);
    EXPECT_EQ(a.layers.ffn, 8 * 768 + 512);
    EXPECT_EQ(a.layers.experts, 0);
    EXPECT_EQ(a.layers.experts_active, 0);
    EXPECT_EQ(a.layers.expert_ffn, 0);
    EXPECT_EQ(a.layers.shared_expert_ffn, 0);
    EXPECT_EQ(a.layers.routing_skew, 0);
    EXPECT_TRUE(a.layers.gated_mlp);
    EXPECT_EQ(a.layers.layers, 1);
    EXPECT_EQ(a.layers.hidden, t.hidden);
  }
  EXPECT_TRUE(DefaultComposedDrafters(t).empty());
  EXPECT_EQ(DefaultComposedDrafters(Llama8b()),
            (std::vector<std::string>{"eagle", "eagle3", "mtp"}));
}

TEST(DrafterArch, KindNames) {
  EXPECT_STREQ(DrafterKindName(DrafterKind::kEagle), "eagle");
  EXPECT_STREQ(DrafterKindName(DrafterKind::kEagle3), "eagle3");
  EXPECT_STREQ(DrafterKindName(DrafterKind::kMtp), "mtp");
  EXPECT_STREQ(DrafterKindName(DrafterKind::kDraftModel), "draft");
  EXPECT_STREQ(DrafterKindName(DrafterKind::kBlock), "block");
  EXPECT_STREQ(DrafterKindName(DrafterKind::kNgram), "ngram");
}

void ExpectForwards(const std::vector<DraftForward>& got, const std::vector<DraftForward>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(got[i].batch, want[i].batch);
    EXPECT_EQ(got[i].tokens, want[i].tokens);
    EXPECT_EQ(got[i].context, want[i].context);
    EXPECT_EQ(got[i].count, want[i].count);
  }
}

TEST(DraftForwards, ChainIsOneExtendThenDMinusOneSingleTokenForwards) {
  const DrafterArch a = ArchOrDie("eagle3", Llama8b());
  // b = 4 sequences verify s = 4 over c = 100, drafting D = 3: the extend over the 4 verified
  // tokens (drafts position 1), then 2 forwards of one token at context c + s.
  ExpectForwards(DraftForwards(a, 4, 4, 100, 3, 1), {{4, 4, 100, 1}, {4, 1, 104, 2}});
  // D = 1: the extend alone.
  ExpectForwards(DraftForwards(a, 4, 4, 100, 1, 1), {{4, 4, 100, 1}});
  // D need not be s - 1.
  ExpectForwards(DraftForwards(a, 2, 1, 0, 5, 1), {{2, 1, 0, 1}, {2, 1, 1, 4}});
  // D = 0: no drafting.
  EXPECT_TRUE(DraftForwards(a, 4, 4, 100, 0, 1).empty());
  // Same pattern for the other heads and a draft model.
  for (const char* name : {"eagle", "mtp", "draft:llama-3.2-1b"}) {
    ExpectForwards(DraftForwards(ArchOrDie(name, Llama8b()), 8, 3, 50, 2, 1),
                   {{8, 3, 50, 1}, {8, 1, 53, 1}});
  }
}

TEST(DraftForwards, TreeDraftsBTimesTopkBeams) {
  const DrafterArch a = ArchOrDie("eagle3", Llama8b());
  ExpectForwards(DraftForwards(a, 4, 4, 100, 3, 8), {{4, 4, 100, 1}, {32, 1, 104, 2}});
  // topk below 1 is taken as 1.
  ExpectForwards(DraftForwards(a, 4, 4, 100, 3, 0), {{4, 4, 100, 1}, {4, 1, 104, 2}});
}

TEST(DraftForwards, BlockIsOneForwardOverDPositionsAndNgramNone) {
  const DrafterArch block = ArchOrDie("block:llama-3.2-1b", Llama8b());
  ExpectForwards(DraftForwards(block, 16, 5, 2048, 7, 4), {{16, 7, 2048, 1}});
  EXPECT_TRUE(DraftForwards(block, 16, 5, 2048, 0, 1).empty());
  const DrafterArch ngram = ArchOrDie("ngram", Llama8b());
  EXPECT_TRUE(DraftForwards(ngram, 16, 5, 2048, 4, 1).empty());
}

void ExpectSameArch(const DrafterArch& a, const DrafterArch& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.qkv_in, b.qkv_in);
  EXPECT_EQ(a.fc_in, b.fc_in);
  EXPECT_EQ(a.fc_every_forward, b.fc_every_forward);
  EXPECT_EQ(a.has_network(), b.has_network());
  if (a.has_network()) {
    EXPECT_EQ(ModelSpecToJson(a.layers), ModelSpecToJson(b.layers));
  }
}

TEST(DrafterArchJson, RoundTripsEveryKind) {
  ModelSpec moe = *ResolveModel("qwen3-30b-a3b");
  for (const auto& [name, target] : {std::pair<std::string, ModelSpec>{"eagle", Llama8b()},
                                     {"eagle3", Llama8b()},
                                     {"mtp", Llama8b()},
                                     {"eagle3", moe},
                                     {"draft:llama-3.2-1b", Llama8b()},
                                     {"block:llama-3.2-1b", Llama8b()},
                                     {"ngram", Llama8b()},
                                     {"suffix", Llama8b()}}) {
    SCOPED_TRACE(name);
    const DrafterArch a = ArchOrDie(name, target);
    const nlohmann::json j = DrafterArchToJson(a);
    EXPECT_EQ(j["name"], name);
    EXPECT_EQ(j["kind"], DrafterKindName(a.kind));
    EXPECT_EQ(j["layers"].is_null(), !a.has_network());
    // Through text, as a profile file carries it.
    auto back = DrafterArchFromJson(nlohmann::json::parse(j.dump()));
    ASSERT_TRUE(back.ok()) << back.status();
    ExpectSameArch(a, *back);
    EXPECT_EQ(DrafterArchToJson(*back), j);
  }
}

TEST(DrafterArchJson, RefusesBrokenObjectsNamingTheField) {
  const nlohmann::json good = DrafterArchToJson(ArchOrDie("eagle3", Llama8b()));
  auto refused = [](const nlohmann::json& j, const std::string& message) {
    auto a = DrafterArchFromJson(j);
    ASSERT_FALSE(a.ok()) << j.dump();
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(a.status().message()), HasSubstr(message)) << j.dump();
  };
  refused(nlohmann::json::array(), "drafter: expected an object");
  for (const char* key : {"name", "kind", "qkv_in", "fc_in", "fc_every_forward", "layers"}) {
    nlohmann::json j = good;
    j.erase(key);
    refused(j, std::string("drafter: missing \"") + key + "\"");
  }
  nlohmann::json j = good;
  j["qkv_in"] = "8192";
  refused(j, "qkv_in and fc_in integers");
  j = good;
  j["fc_every_forward"] = 1;
  refused(j, "fc_every_forward a boolean");
  j = good;
  j["fc_in"] = -1;
  refused(j, "qkv_in and fc_in must be >= 0");
  j = good;
  j["kind"] = "medusa";
  refused(j, "drafter.kind");
  j = good;
  j["layers"] = nlohmann::json::object();
  EXPECT_FALSE(DrafterArchFromJson(j).ok());
}

TEST(CheckDrafterName, TakesEveryKnownNameWithoutLookingModelsUp) {
  for (const char* name : {"eagle", "eagle3", "mtp", "ngram", "suffix", "draft:llama-3.2-1b",
                           "block:llama-3.2-1b", "draft:not-in-the-registry"}) {
    EXPECT_TRUE(CheckDrafterName(name).ok()) << name;
  }
  for (const char* name : {"medusa", "", "draft:", "block:", "draft", "Eagle"}) {
    const absl::Status st = CheckDrafterName(name);
    ASSERT_FALSE(st.ok()) << name;
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    // The same words as DrafterArchFor's for an unknown name.
    EXPECT_THAT(std::string(st.message()),
                HasSubstr(std::string("drafter = '") + name +
                          "': unknown (known: eagle, eagle3, mtp, draft:MODEL, block:MODEL, "
                          "ngram, suffix)"));
  }
}

}  // namespace
}  // namespace specplan::costmodel
