// ops/acceptance_op.h: the validator names field and value; a real vLLM scrape read, its JSON form.
#include "ops/acceptance_op.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace specplan::ops {
namespace {

using ::testing::HasSubstr;

std::string WriteScrape() {
  const std::string path = ::testing::TempDir() + "/acceptance_op_scrape.txt";
  // The per-position counters first, and the totals after a TYPE line: a scrape's order is free.
  std::ofstream(path) << "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"0\"} 70\n"
                         "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"1\"} 40\n"
                         "# TYPE vllm:spec_decode_num_drafts_total counter\n"
                         "vllm:spec_decode_num_drafts_total 100\n"
                         "vllm:spec_decode_num_draft_tokens_total 200\n"
                         "vllm:spec_decode_num_accepted_tokens_total 110\n";
  return path;
}

TEST(AcceptanceOp, ValidatorNamesFieldAndValue) {
  AcceptanceRequest req;
  EXPECT_THAT(Validate(req).message(), HasSubstr("path: empty"));
  req.path = "x";
  req.k_max = -1;
  EXPECT_THAT(Validate(req).message(), HasSubstr("k_max = -1: must be in [0, 4096]"));
  req.k_max = 0;
  req.format = "tgi";
  EXPECT_THAT(Validate(req).message(), HasSubstr("format"));
  EXPECT_THAT(Validate(req).message(), HasSubstr("tgi"));
}

TEST(AcceptanceOp, ReadsAScrape) {
  AcceptanceRequest req;
  req.path = WriteScrape();
  auto r = Acceptance(req);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->acceptance.k_max, 2);
  EXPECT_DOUBLE_EQ(r->acceptance.per_position[0], 0.7);
  EXPECT_DOUBLE_EQ(r->acceptance.per_position[1], 0.4);
  ASSERT_EQ(r->tokens_per_step.size(), 3u);
  EXPECT_DOUBLE_EQ(r->tokens_per_step[2], 2.1);
  const nlohmann::json j = ToJson(*r);
  EXPECT_EQ(j["tokens_per_step"].size(), 3u);
  EXPECT_THAT(ToText(*r), HasSubstr("mean acceptance length: 2.1000"));
}

}  // namespace
}  // namespace specplan::ops
