#include "profiler/samples_file.h"

#include <gtest/gtest.h>

#include "tests/profiler/test_util.h"

namespace specplan::profiler {
namespace {

std::string Message(const absl::Status& st) { return std::string(st.message()); }

TEST(SamplesCsvTest, ParsesColumnsInAnyOrderAndIgnoresExtras) {
  auto s = ParseSamplesCsv(
      "# engine timings\n"
      "seconds, c, s, kernels\n"
      "\n"
      "0.0071, 0, 1, 300\n"
      "9.3e-3, 1024, 64, 310\n",
      "x.csv");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[0].s, 1);
  EXPECT_EQ((*s)[0].c, 0);
  EXPECT_DOUBLE_EQ((*s)[0].seconds, 0.0071);
  EXPECT_EQ((*s)[1].s, 64);
  EXPECT_EQ((*s)[1].c, 1024);
  EXPECT_DOUBLE_EQ((*s)[1].seconds, 0.0093);
}

TEST(SamplesCsvTest, ErrorsNameTheLineAndField) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"s,c,seconds\n1,0,0.1\n2,0,nan\n", "x.csv:3: seconds = nan: must be finite and > 0"},
      {"s,c,seconds\n1,0,0.1\n2,0,-1\n", "x.csv:3: seconds = -1: must be finite and > 0"},
      {"s,c,seconds\n1,0,inf\n", "x.csv:2: seconds = inf"},
      {"s,c,seconds\n0,0,0.1\n", "x.csv:2: s = 0: must be >= 1"},
      {"s,c,seconds\n1,-5,0.1\n", "x.csv:2: c = -5: must be >= 0"},
      {"s,c,seconds\n1.5,0,0.1\n", "x.csv:2: s = '1.5': expected an integer"},
      {"s,c,seconds\n1,x,0.1\n", "x.csv:2: c = 'x': expected an integer"},
      {"s,c,seconds\n1,0,fast\n", "x.csv:2: seconds = 'fast': expected a number"},
      {"s,c,seconds\n1,0\n", "x.csv:2: expected 3 comma-separated fields, got 2"},
      {"s,c,latency\n1,0,0.1\n", "x.csv:1: header 's,c,latency': missing column 'seconds'"},
      {"s,c,s,seconds\n", "column 's' appears twice"},
      {"", "x.csv: empty"},
      {"s,c,seconds\n", "x.csv: no samples"},
  };
  for (const Case& c : cases) {
    auto s = ParseSamplesCsv(c.text, "x.csv");
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_NE(Message(s.status()).find(c.expect), std::string::npos)
        << "got: " << s.status() << "\nwant: " << c.expect;
  }
}

TEST(SamplesJsonTest, ParsesAndNamesBadElements) {
  auto s = ParseSamplesJson(R"([{"s": 1, "c": 0, "seconds": 0.5, "note": "x"},
                                {"s": 8, "c": 16, "seconds": 1}])",
                            "x.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  EXPECT_EQ((*s)[1].s, 8);
  EXPECT_EQ((*s)[1].c, 16);
  EXPECT_DOUBLE_EQ((*s)[1].seconds, 1.0);

  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {R"([{"s": 1, "c": 0, "seconds": 0.5}, {"s": 0, "c": 0, "seconds": 1}])",
       "x.json: [1].s = 0: must be >= 1"},
      {R"([{"s": 1, "c": 0}])", "x.json: [0].seconds: missing"},
      {R"([{"s": "1", "c": 0, "seconds": 1}])", "[0].s = \"1\": expected an integer"},
      {R"([{"s": 1, "c": 0, "seconds": "nan"}])", "[0].seconds = \"nan\": expected a number"},
      {R"([{"s": 1, "c": 0, "seconds": 0}])", "[0].seconds = 0: must be finite and > 0"},
      {R"([3])", "x.json: [0] = 3: expected an object"},
      {R"({"s": 1})", "expected an array"},
      {R"([{"s": 1,)", "x.json: not valid JSON"},
      {R"([])", "x.json: no samples"},
  };
  for (const Case& c : cases) {
    auto r = ParseSamplesJson(c.text, "x.json");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(Message(r.status()).find(c.expect), std::string::npos)
        << "got: " << r.status() << "\nwant: " << c.expect;
  }
}

TEST(ReadSamplesFileTest, DetectsTheFormat) {
  testing::TempDir dir;
  testing::WriteAll(dir.File("a.csv"), "s,c,seconds\n1,0,0.1\n");
  testing::WriteAll(dir.File("b.json"), R"([{"s": 2, "c": 3, "seconds": 0.2}])");
  testing::WriteAll(dir.File("c.txt"), "  [{\"s\": 4, \"c\": 5, \"seconds\": 0.3}]");
  auto a = ReadSamplesFile(dir.File("a.csv"));
  auto b = ReadSamplesFile(dir.File("b.json"));
  auto c = ReadSamplesFile(dir.File("c.txt"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)[0].s, 1);
  EXPECT_EQ((*b)[0].s, 2);
  EXPECT_EQ((*c)[0].s, 4);
  auto missing = ReadSamplesFile(dir.File("none.csv"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(Message(missing.status()).find("none.csv"), std::string::npos);
}

}  // namespace
}  // namespace specplan::profiler
