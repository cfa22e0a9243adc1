// vLLM's n-gram matcher over a request's tokens (planner/acceptance/prompt_lookup.h), against
// vLLM's own documented example and cases worked by hand; and the step trace read with it
// (planner/acceptance/engine_acceptance.h): the rooms kept, the walk, the refusals.
#include "planner/acceptance/prompt_lookup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "planner/acceptance/engine_acceptance.h"

namespace specplan::planner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

int32_t RoomOf(const std::vector<int32_t>& context, int min_n, int max_n, int32_t cap = 1 << 20) {
  return PromptLookupRooms(context, {}, PromptLookup{min_n, max_n}, cap)[0];
}

// vllm/v1/spec_decode/ngram_proposer.py's docstring: context [1, 2, 3, 4, 2, 3], min_n 2, max_n 3,
// k 4: (4 2 3) has no earlier occurrence; (2 3) matches at the start and the three tokens after
// it, (4 2 3), are proposed.
TEST(PromptLookup, VllmsDocumentedExample) {
  EXPECT_EQ(RoomOf({1, 2, 3, 4, 2, 3}, 2, 3), 3);
  // Capped by K as the proposer caps it.
  EXPECT_EQ(RoomOf({1, 2, 3, 4, 2, 3}, 2, 3, 2), 2);
}

TEST(PromptLookup, NoMatchBelowMinN) {
  EXPECT_EQ(RoomOf({1, 2, 3, 4, 2, 3}, 3, 3), 0);  // (4 2 3) never occurred before
  EXPECT_EQ(RoomOf({7, 7}, 3, 5), 0);              // shorter than min_n
  EXPECT_EQ(RoomOf({}, 1, 1), 0);
}

// The longest n wins over a shorter one that occurred earlier; among occurrences of the longest,
// the earliest.
TEST(PromptLookup, LongestThenEarliest) {
  // Suffix (5 1 2). (1 2) first occurs at 0..1 (it would give room 10 - 2 = 8), but the longer
  // (5 1 2) occurs at 3..5: room 10 - 6 = 4.
  EXPECT_EQ(RoomOf({1, 2, 0, 5, 1, 2, 8, 5, 1, 2}, 2, 3), 10 - 6);
  // Suffix (1 2) occurs at 0..1 and 3..4; the earliest is taken: room 8 - 2 = 6.
  EXPECT_EQ(RoomOf({1, 2, 9, 1, 2, 7, 1, 2}, 2, 2), 8 - 2);
  // An occurrence may overlap the suffix: (7 7) in 7 7 7 ends at index 1, room 3 - 2 = 1.
  EXPECT_EQ(RoomOf({7, 7, 7}, 2, 2), 1);
}

// Position i's context is the prompt and the first i generated tokens.
TEST(PromptLookup, OnePerPositionOverPromptAndOutput) {
  const std::vector<int32_t> rooms =
      PromptLookupRooms({4, 5, 6}, {4, 5, 1}, PromptLookup{2, 2}, 1 << 20);
  // i = 0: suffix (5 6) new; i = 1: (6 4) new; i = 2: (4 5) at 0..1: room 5 - 2 = 3; i = 3:
  // (5 1) new.
  EXPECT_THAT(rooms, ElementsAre(0, 0, 3, 0));
}

constexpr char kTrace[] =
    "{\"id\": \"r\", \"prompt_token_ids\": [4, 5, 6], \"generated_token_ids\": [4, 5, 1], "
    "\"acc_ngram\": {\"acc_len\": [1, 1, 3, 1]}}\n";

absl::StatusOr<EngineAcceptance> ParseWith(const std::string& text, PromptLookup lookup) {
  EngineAcceptanceOptions o;
  o.prompt_lookup = lookup;
  return ParseEngineAcceptance(text, "t.jsonl", std::nullopt, o);
}

TEST(PromptLookupTrace, KeepsRoomsAndWalksThem) {
  auto a = ParseWith(kTrace, PromptLookup{2, 2});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(a->requests[0].draft_room, ElementsAre(0, 0, 3, 0));
  EXPECT_EQ(a->positions, 3);
  EXPECT_EQ(a->unmatched_positions, 2);
  // k_max 2: position 1 drafts nothing (emits 1), position 2 drafts 2 and emits 3: 2 steps, 4
  // tokens, 2 draft tokens.
  EXPECT_EQ(a->k_max, 2);
  EXPECT_EQ(a->drafts, 2);
  EXPECT_EQ(a->draft_tokens, 2);
  EXPECT_DOUBLE_EQ(a->TokensPerStep(2), 4.0 / 2);
  EXPECT_EQ(a->requests[0].DraftAt(1, 2), 0);
  EXPECT_EQ(a->requests[0].EmittedAt(2, 1), 2);
  const nlohmann::json j = EngineAcceptanceToJson(*a);
  EXPECT_EQ(j["prompt_lookup"]["unmatched_positions"], 2);
  EXPECT_EQ(j["prompt_lookup"]["prompt_lookup_min"], 2);
}

TEST(PromptLookupTrace, RefusesATraceRecordedWithOtherSettings) {
  // With 3..3 no 3-gram ever recurs, but position 2 accepted 2 drafts.
  auto a = ParseWith(kTrace, PromptLookup{3, 3});
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()),
              HasSubstr("acc_ngram.acc_len[2] = 3 accepts 2 drafts, but prompt_lookup_min = 3, "
                        "prompt_lookup_max = 3 proposes 0 there"));
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("t.jsonl:1:"));
}

TEST(PromptLookupTrace, RefusesMissingTokensAndBadSettings) {
  auto no_tokens = ParseWith(
      "{\"id\": \"r\", \"prompt_tokens\": 3, \"acc_ngram\": {\"acc_len\": [1, 1]}}\n", {2, 2});
  ASSERT_FALSE(no_tokens.ok());
  EXPECT_THAT(std::string(no_tokens.status().message()), HasSubstr("prompt_token_ids: missing"));
  auto short_output = ParseWith(
      "{\"prompt_token_ids\": [1], \"generated_token_ids\": [], \"acc_ngram\": {\"acc_len\": "
      "[1, 1, 1]}}\n",
      {2, 2});
  ASSERT_FALSE(short_output.ok());
  EXPECT_THAT(std::string(short_output.status().message()),
              HasSubstr("has 3 positions but generated_token_ids only 0 tokens"));
  auto bad = ParseWith(kTrace, PromptLookup{4, 3});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("prompt_lookup_min = 4, prompt_lookup_max = 3"));
  EngineAcceptanceOptions o;
  o.prompt_lookup = PromptLookup{2, 2};
  auto log = ParseEngineAcceptance("accept len: 2.0\n", "s.log", AcceptanceFormat::kSglangLog, o);
  ASSERT_FALSE(log.ok());
  EXPECT_THAT(std::string(log.status().message()), HasSubstr("only a step-trace holds the tokens"));
}

}  // namespace
}  // namespace specplan::planner
