#include "whatif/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "test_util.h"
#include "util/file.h"

namespace specplan::whatif {
namespace {

using ::testing::HasSubstr;

constexpr char kHeader[] =
    R"({"format":"specplan.trace","version":1,"target":"t","draft":"d","vocab":50})";

std::string WithStep(const std::string& step) { return std::string(kHeader) + "\n" + step + "\n"; }

// A trace whose one step (prompt 0, c = 1, root 2, continuation [3]) carries the given node
// expansion (parents, tokens, dist_tokens, dist_probs as JSON).
std::string NodesStep(const std::string& parents, const std::string& tokens,
                      const std::string& dist_tokens, const std::string& dist_probs) {
  return WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3],"nodes":{"parents":)" + parents +
                  R"(,"tokens":)" + tokens + R"(,"dist_tokens":)" + dist_tokens +
                  R"(,"dist_probs":)" + dist_probs + "}}");
}

// The same step carrying the given marginals (tokens, probs as JSON).
std::string MarginalsStep(const std::string& tokens, const std::string& probs) {
  return WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3],"marginals":{"tokens":)" +
                  tokens + R"(,"probs":)" + probs + "}}");
}

TEST(Trace, FixtureParsesWithItsFields) {
  auto trace = LoadTrace(testing::FixturePath());
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->header.vocab, 50);
  EXPECT_EQ(trace->header.target, "tiny-target");
  ASSERT_EQ(trace->steps.size(), 3u);
  const TraceStep& a = trace->steps[0];
  EXPECT_EQ(a.c, 100);
  EXPECT_EQ(a.root, 1);
  EXPECT_EQ(a.continuation, (std::vector<int32_t>{5, 7, 9}));
  ASSERT_TRUE(a.marginals.has_value());
  EXPECT_EQ(a.marginals->gamma, 3);
  EXPECT_EQ(a.marginals->k, 2);
  EXPECT_EQ(a.marginals->root_token, 1);
  ASSERT_TRUE(a.nodes.has_value());
  EXPECT_EQ(a.nodes->size(), 5);
  EXPECT_EQ(a.nodes->Child(1, 7), 3);
  EXPECT_EQ(a.nodes->Child(1, 9), -1);
  EXPECT_TRUE(a.nodes->Expanded(1));
  EXPECT_FALSE(a.nodes->Expanded(2));
  EXPECT_DOUBLE_EQ(a.draft_s, 0.001);
  EXPECT_FALSE(trace->steps[1].nodes.has_value());
  EXPECT_FALSE(trace->steps[2].marginals.has_value());
  EXPECT_LT(trace->steps[1].draft_s, 0);
}

TEST(Trace, DraftShapeIsTheMeanContextAndTheLargestGamma) {
  Trace trace;
  EXPECT_EQ(DraftShapeOf(trace).mean_context, 0);  // no steps
  EXPECT_EQ(DraftShapeOf(trace).max_gamma, 1);
  for (int64_t c : {100, 201, 300}) {
    TraceStep st;
    st.c = c;
    trace.steps.push_back(st);
  }
  trace.steps[1].marginals.emplace();
  trace.steps[1].marginals->gamma = 7;
  trace.steps[2].marginals.emplace();
  trace.steps[2].marginals->gamma = 4;
  const TraceDraftShape shape = DraftShapeOf(trace);
  EXPECT_EQ(shape.mean_context, 200);  // (100 + 201 + 300) / 3, truncated
  EXPECT_EQ(shape.max_gamma, 7);
}

TEST(Trace, SerializeParseRoundTrip) {
  auto trace = LoadTrace(testing::FixturePath());
  ASSERT_TRUE(trace.ok()) << trace.status();
  const std::string text = SerializeTrace(*trace);
  auto again = ParseTrace(text, "roundtrip");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SerializeTrace(*again), text);
  ASSERT_EQ(again->steps.size(), trace->steps.size());
  for (size_t i = 0; i < trace->steps.size(); ++i) {
    const TraceStep& x = trace->steps[i];
    const TraceStep& y = again->steps[i];
    EXPECT_EQ(x.c, y.c);
    EXPECT_EQ(x.continuation, y.continuation);
    EXPECT_EQ(x.marginals.has_value(), y.marginals.has_value());
    if (x.marginals) {
      EXPECT_EQ(x.marginals->tokens, y.marginals->tokens);
      EXPECT_EQ(x.marginals->probs, y.marginals->probs);  // floats survive exactly
    }
    EXPECT_EQ(x.nodes.has_value(), y.nodes.has_value());
    if (x.nodes) {
      EXPECT_EQ(x.nodes->parents, y.nodes->parents);
      EXPECT_EQ(x.nodes->dist_tokens, y.nodes->dist_tokens);
      EXPECT_EQ(x.nodes->dist_probs, y.nodes->dist_probs);
    }
  }
  // SaveTrace writes the same text.
  const std::string path = ::testing::TempDir() + "/whatif_roundtrip.jsonl";
  ASSERT_TRUE(SaveTrace(*trace, path).ok());
  auto saved = ReadFileToString(path);
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(*saved, text);
}

// A batch run's verification pass survives the round trip; steps of different prompts share one.
TEST(Trace, PassRoundTrips) {
  const std::string marg = R"("marginals":{"tokens":[[3]],"probs":[[0.5]]})";
  const std::string text =
      WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3],"pass":7,)" + marg + "}\n" +
               R"({"prompt":1,"c":4,"root":2,"continuation":[3],"pass":7,)" + marg + "}\n" +
               R"({"prompt":1,"c":6,"root":2,"continuation":[3],)" + marg + "}");
  auto trace = ParseTrace(text, "t.jsonl");
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->steps.size(), 3u);
  EXPECT_EQ(trace->steps[0].pass, 7);
  EXPECT_EQ(trace->steps[1].pass, 7);
  EXPECT_EQ(trace->steps[2].pass, -1);  // not recorded
  auto again = ParseTrace(SerializeTrace(*trace), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(SerializeTrace(*again), SerializeTrace(*trace));
  EXPECT_NE(SerializeTrace(*trace).find("\"pass\":7"), std::string::npos);
  EXPECT_EQ(TraceStepLine(trace->steps[2]).find("pass"), std::string::npos);
}

TEST(Trace, BlankLinesAndCrlfAreAccepted) {
  const std::string text = std::string(kHeader) + "\r\n\n  \n" +
                           R"({"prompt":0,"c":1,"root":2,"continuation":[3],)"
                           R"("marginals":{"tokens":[[3]],"probs":[[0.5]]}})" +
                           "\r\n";
  auto trace = ParseTrace(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(trace->steps.size(), 1u);
}

struct BadCase {
  const char* name;
  std::string text;
  const char* expect;
};

TEST(Trace, MalformedTracesNameTheLineAndField) {
  const std::string ok_marg = R"("marginals":{"tokens":[[3]],"probs":[[0.5]]})";
  const BadCase cases[] = {
      {"bad json", WithStep(R"({"prompt":0,"c":1,)"), "t.jsonl:2:18: not valid JSON"},
      {"not an object", WithStep("[1,2]"), "t.jsonl:2: expected a JSON object"},
      {"missing continuation", WithStep(R"({"prompt":0,"c":1,"root":2,)" + ok_marg + "}"),
       "t.jsonl:2: continuation: missing"},
      {"missing c", WithStep(R"({"prompt":0,"root":2,"continuation":[3],)" + ok_marg + "}"),
       "t.jsonl:2: c: missing"},
      {"no drafter output", WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3]})"),
       "t.jsonl:2: marginals, nodes: missing"},
      {"empty continuation",
       WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[],)" + ok_marg + "}"),
       "continuation: empty"},
      {"token >= vocab",
       WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3,50],)" + ok_marg + "}"),
       "t.jsonl:2: continuation[1] = 50: must be a token id in [0, vocab = 50)"},
      {"marginal token >= vocab", MarginalsStep(R"([[3,77]])", R"([[0.5,0.1]])"),
       "marginals.tokens[0][1] = 77"},
      {"ragged marginals", MarginalsStep(R"([[3,4],[5]])", R"([[0.5,0.1],[0.2]])"),
       "marginals.tokens[1]"},
      {"nodes tokens length", NodesStep(R"([-1,0])", R"([2])", R"([[3],[-1]])", R"([[0.5],[0]])"),
       "t.jsonl:2: nodes.tokens: 1 entries, expected 2"},
      {"nodes rows mismatch", NodesStep(R"([-1,0])", R"([2,3])", R"([[3]])", R"([[0.5]])"),
       "nodes.dist_tokens: 1 rows, expected 2"},
      {"non-topological",
       NodesStep(R"([-1,0,2])", R"([2,3,4])", R"([[3,4],[-1,-1],[-1,-1]])",
                 R"([[0.5,0.2],[0,0],[0,0]])"),
       "t.jsonl:2: nodes.parents[2] = 2: must be in [0, 2) (topological order)"},
      {"node token not in parent row",
       NodesStep(R"([-1,0])", R"([2,9])", R"([[3],[-1]])", R"([[0.5],[0]])"),
       "nodes.tokens[1] = 9: not among the candidates"},
      {"root mismatch", NodesStep(R"([-1])", R"([5])", R"([[3]])", R"([[0.5]])"),
       "nodes.tokens[0] = 5: must equal root = 2"},
      {"prob out of range", MarginalsStep(R"([[3]])", R"([[1.5]])"), "marginals.probs[0][0]"},
      {"bad header",
       R"({"format":"other","version":1})"
       "\n",
       "t.jsonl:1: format = \"other\""},
      {"header vocab",
       R"({"format":"specplan.trace","version":1,"target":"t","draft":"d"})"
       "\n",
       "t.jsonl:1: vocab: missing"},
      {"empty", "\n\n", "empty trace"},
      {"negative pass",
       WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3],"pass":-2,)" + ok_marg + "}"),
       "t.jsonl:2: pass = -2: must be >= 0"},
      {"one prompt twice in a pass",
       WithStep(R"({"prompt":0,"c":1,"root":2,"continuation":[3],"pass":4,)" + ok_marg + "}\n" +
                R"({"prompt":0,"c":2,"root":3,"continuation":[3],"pass":4,)" + ok_marg + "}"),
       "t.jsonl:3: pass = 4: prompt 0 already has a step in this pass"},
  };
  for (const BadCase& c : cases) {
    auto trace = ParseTrace(c.text, "t.jsonl");
    ASSERT_FALSE(trace.ok()) << c.name;
    EXPECT_THAT(std::string(trace.status().message()), HasSubstr(c.expect)) << c.name;
  }
}

TEST(Trace, LineNumbersCountBlankLines) {
  const std::string text = std::string(kHeader) + "\n\n" +
                           R"({"prompt":0,"c":1,"root":2,"continuation":[3],)"
                           R"("marginals":{"tokens":[[3]],"probs":[[0.5]]}})" +
                           "\n" + R"({"prompt":-1})" + "\n";
  auto trace = ParseTrace(text, "x");
  ASSERT_FALSE(trace.ok());
  EXPECT_THAT(std::string(trace.status().message()), HasSubstr("x:4: prompt = -1"));
}

TEST(Trace, SaveRejectsInvalidStepsAndKeepsTheOldFile) {
  auto trace = LoadTrace(testing::FixturePath());
  ASSERT_TRUE(trace.ok());
  const std::string path = ::testing::TempDir() + "/whatif_keep.jsonl";
  ASSERT_TRUE(SaveTrace(*trace, path).ok());
  trace->steps[1].continuation[0] = 999;
  auto st = SaveTrace(*trace, path);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(std::string(st.message()), HasSubstr("step 1: continuation[0] = 999"));
  auto reread = LoadTrace(path);
  ASSERT_TRUE(reread.ok()) << reread.status();
  EXPECT_EQ(reread->steps[1].continuation[0], 12);
}

// The default is the trained family's trace (heads' marginals, draft model's nodes, recorded
// from a --batch 4 run); the tiny random pair's trace stays bundled for fast tests.
TEST(Trace, DefaultPathPointsAtTheBundledTrace) {
  EXPECT_EQ(DefaultTracePath(), BundledTracePath("family.jsonl"));
  auto family = LoadTrace(DefaultTracePath());
  ASSERT_TRUE(family.ok()) << family.status();
  EXPECT_EQ(family->header.target, "models/target");
  EXPECT_EQ(family->header.draft, "models/draft");
  EXPECT_EQ(family->header.vocab, 4096);
  EXPECT_THAT(family->header.source, HasSubstr("--trace-marginals heads"));
  EXPECT_THAT(family->header.source, HasSubstr("--batch 4"));
  ASSERT_EQ(family->steps.size(), 248u);
  for (const TraceStep& s : family->steps) {
    ASSERT_TRUE(s.marginals.has_value());
    EXPECT_GE(s.pass, 0);
    EXPECT_TRUE(ValidateTraceStep(s, family->header).ok());
  }
  auto tiny = LoadTrace(BundledTracePath("tiny.jsonl"));
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_EQ(tiny->header.target, "random:tiny");
}

}  // namespace
}  // namespace specplan::whatif
