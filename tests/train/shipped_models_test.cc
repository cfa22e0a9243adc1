// The trained family shipped in models/ (scripts/train/package_family.sh): every model loads
// through the loader real checkpoints use and reproduces the held-out figures recorded beside it
// (models/heldout-slice.json, measured on models/heldout-slice.ids) to 1e-4 nats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runtime/draft_heads.h"
#include "runtime/model_loader.h"
#include "tests/paths/test_paths.h"
#include "train/checkpoint.h"
#include "train/heads_training.h"
#include "train/lm_training.h"
#include "util/json_util.h"

namespace specplan::train {
namespace {

const std::string kModels = ::specplan::test_paths::SourceDir() + "/models";

nlohmann::json Recorded() {
  auto j = json_util::ReadJsonFile(kModels + "/heldout-slice.json");
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : nlohmann::json::object();
}

TEST(ShippedModels, TargetAndDraftReproduceTheirHeldOutLoss) {
  const nlohmann::json recorded = Recorded();
  for (const char* name : {"target", "draft"}) {
    auto model = runtime::LoadModel(kModels + "/" + name, 0, runtime::RuntimeOptions());
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    auto tokens = ReadTokenStream(kModels + "/heldout-slice.ids", (*model)->config().vocab_size);
    ASSERT_TRUE(tokens.ok()) << tokens.status();
    const nlohmann::json& r = recorded[name];
    auto loss = HeldoutLoss(**model, *tokens, r["heldout_seq_len"].get<int64_t>());
    ASSERT_TRUE(loss.ok()) << loss.status();
    EXPECT_NEAR(*loss, r["heldout_loss"].get<double>(), 1e-4) << name;
    // A trained model: far below a uniform guess over the vocabulary (ln 4096 = 8.3 nats).
    EXPECT_LT(*loss, 6.0) << name;
  }
}

TEST(ShippedModels, HeadsReproduceTheirHeldOutFigures) {
  const nlohmann::json r = Recorded()["heads"];
  auto target = LoadFrozenForTraining(kModels + "/target");
  ASSERT_TRUE(target.ok()) << target.status();
  auto heads = runtime::DraftHeads::Load(kModels + "/heads", **target);
  ASSERT_TRUE(heads.ok()) << heads.status();
  ASSERT_TRUE((*heads)->has_causal());
  auto tokens = ReadTokenStream(kModels + "/heldout-slice.ids", (*target)->config().vocab_size);
  ASSERT_TRUE(tokens.ok()) << tokens.status();
  auto eval = EvaluateDraftHeads(**heads, *tokens, r["heldout_seq_len"].get<int64_t>(), 16, 0.5);
  ASSERT_TRUE(eval.ok()) << eval.status();
  EXPECT_NEAR(eval->objective, r["heldout_objective"].get<double>(), 1e-4);
  for (size_t k = 0; k < eval->base_loss.size(); ++k) {
    EXPECT_NEAR(eval->base_loss[k], r["heldout_base_loss"][k].get<double>(), 1e-4) << k;
    EXPECT_NEAR(eval->final_loss[k], r["heldout_final_loss"][k].get<double>(), 1e-4) << k;
  }
  // The causal correction helps beyond the first depth (it sees the drafted path).
  EXPECT_LT(eval->final_loss[1], eval->base_loss[1]);
}

}  // namespace
}  // namespace specplan::train
