#include "costmodel/fit/samples_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/util/temp_dir.h"

namespace specplan::costmodel {
namespace {

std::string Message(const absl::Status& st) { return std::string(st.message()); }

// A sample read back is (s, c, seconds).
void ExpectSample(const LatencySample& got, int64_t s, int64_t c, double seconds) {
  EXPECT_EQ(got.s, s);
  EXPECT_EQ(got.c, c);
  EXPECT_DOUBLE_EQ(got.seconds, seconds);
}

// A sample file the reader must refuse, and a piece of the message that says why.
struct BadFile {
  std::string text, expect;
};

// `parse` (text -> StatusOr<samples>) refuses every file with its message.
template <typename Parse>
void ExpectEveryFileRefused(const std::vector<BadFile>& files, Parse parse) {
  for (const BadFile& c : files) {
    auto r = parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(Message(r.status()).find(c.expect), std::string::npos)
        << "got: " << r.status() << "\nwant: " << c.expect;
  }
}

void WriteAll(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path) << text;
}

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
  ExpectSample((*s)[0], 1, 0, 0.0071);
  ExpectSample((*s)[1], 64, 1024, 0.0093);
}

TEST(SamplesCsvTest, ErrorsNameTheLineAndField) {
  ExpectEveryFileRefused(
      {
          {"s,c,seconds\n1,0,0.1\n2,0,nan\n", "x.csv:3: seconds = nan: must be finite and > 0"},
          {"s,c,seconds\n1,0,0.1\n2,0,-1\n", "x.csv:3: seconds = -1: must be finite and > 0"},
          {"s,c,seconds\n1,0,inf\n", "x.csv:2: seconds = inf"},
          {"s,c,seconds\n0,0,0.1\n", "x.csv:2: s = 0: must be >= 1"},
          {"s,c,seconds\n1,-5,0.1\n", "x.csv:2: c = -5: must be >= 0"},
          {"s,c,seconds\n1.5,0,0.1\n", "x.csv:2: s = '1.5': expected an integer"},
          {"s,c,seconds\n1,x,0.1\n", "x.csv:2: c = 'x': expected an integer"},
          {"s,c,seconds\n1,0,fast\n", "x.csv:2: seconds = 'fast': expected a number"},
          {"s,c,seconds\n1,0\n", "x.csv:2: expected 3 comma-separated fields, got 2"},
          {"s,c,latency\n1,0,0.1\n",
           "x.csv:1: header 's,c,latency': missing a latency column (seconds, latency_s, "
           "latency_ms "
           "or latency_us)"},
          {"s,c,seconds,latency_ms\n1,0,0.1,100\n",
           "header 's,c,seconds,latency_ms': both 'seconds' and 'latency_ms' give the latency"},
          {"s,c,latency_ms\n1,0,-3\n", "x.csv:2: latency_ms = -3: must be finite and > 0"},
          {"s,c,latency_us\n1,0,fast\n", "x.csv:2: latency_us = 'fast': expected a number"},
          {"s,c,s,seconds\n", "column 's' appears twice"},
          {"", "x.csv: empty"},
          {"s,c,seconds\n", "x.csv: no samples"},
      },
      [](const std::string& text) { return ParseSamplesCsv(text, "x.csv"); });
}

// Regression (issue 14): the reader wanted the column `seconds` only; latency_s, latency_ms and
// latency_us carry their units in the name.
TEST(SamplesCsvTest, LatencyColumnsTakeTheirUnitsFromTheName) {
  struct Case {
    const char* column;
    const char* value;
  };
  const Case cases[] = {{"seconds", "0.0125"},
                        {"latency_s", "0.0125"},
                        {"latency_ms", "12.5"},
                        {"latency_us", "12500"},
                        {"LATENCY_MS", "12.5"}};
  for (const Case& c : cases) {
    auto s = ParseSamplesCsv(
        std::string("s,c,source,") + c.column + "\n64,1024,vidur," + c.value + "\n", "x.csv");
    ASSERT_TRUE(s.ok()) << c.column << ": " << s.status();
    ASSERT_EQ(s->size(), 1u);
    EXPECT_NEAR((*s)[0].seconds, 0.0125, 1e-15) << c.column;
  }
  // The shared public sets carry latency_s beside latency_no_kvsave_s: only the former is read.
  auto both = ParseSamplesCsv("s,c,latency_s,latency_no_kvsave_s\n1,0,0.011,0.010\n", "x.csv");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_DOUBLE_EQ((*both)[0].seconds, 0.011);
}

TEST(SamplesJsonTest, LatencyKeysTakeTheirUnitsFromTheName) {
  auto s = ParseSamplesJson(
      R"([{"s": 1, "c": 0, "latency_ms": 7.5}, {"s": 2, "c": 0, "latency_us": 7500},
          {"s": 3, "c": 0, "latency_s": 0.0075}])",
      "x.json");
  ASSERT_TRUE(s.ok()) << s.status();
  for (const LatencySample& x : *s) EXPECT_NEAR(x.seconds, 0.0075, 1e-15) << x.s;
  auto two = ParseSamplesJson(R"([{"s": 1, "c": 0, "seconds": 1, "latency_ms": 1000}])", "x.json");
  ASSERT_FALSE(two.ok());
  EXPECT_NE(Message(two.status()).find("x.json: [0]: both 'seconds' and 'latency_ms'"),
            std::string::npos)
      << two.status();
  auto none = ParseSamplesJson(R"([{"s": 1, "c": 0, "ms": 1}])", "x.json");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(Message(none.status()).find("x.json: [0]: missing a latency column"), std::string::npos)
      << none.status();
}

TEST(SamplesJsonTest, ParsesAndNamesBadElements) {
  auto s = ParseSamplesJson(R"([{"s": 1, "c": 0, "seconds": 0.5, "note": "x"},
                                {"s": 8, "c": 16, "seconds": 1}])",
                            "x.json");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->size(), 2u);
  ExpectSample((*s)[1], 8, 16, 1.0);

  ExpectEveryFileRefused(
      {
          {R"([{"s": 1, "c": 0, "seconds": 0.5}, {"s": 0, "c": 0, "seconds": 1}])",
           "x.json: [1].s = 0: must be >= 1"},
          {R"([{"s": 1, "c": 0}])", "x.json: [0]: missing a latency column"},
          {R"([{"s": "1", "c": 0, "seconds": 1}])", "[0].s = \"1\": expected an integer"},
          {R"([{"s": 1, "c": 0, "seconds": "nan"}])", "[0].seconds = \"nan\": expected a number"},
          {R"([{"s": 1, "c": 0, "seconds": 0}])", "[0].seconds = 0: must be finite and > 0"},
          {R"([3])", "x.json: [0] = 3: expected an object"},
          {R"({"s": 1})", "expected an array"},
          {R"([{"s": 1,)", "x.json:1:9: not valid JSON"},
          {R"([])", "x.json: no samples"},
      },
      [](const std::string& text) { return ParseSamplesJson(text, "x.json"); });
}

TEST(ReadSamplesFileTest, DetectsTheFormat) {
  const std::filesystem::path dir = test::FreshTestDir("specplan_samples_");
  WriteAll(dir / "a.csv", "s,c,seconds\n1,0,0.1\n");
  WriteAll(dir / "b.json", R"([{"s": 2, "c": 3, "seconds": 0.2}])");
  WriteAll(dir / "c.txt", "  [{\"s\": 4, \"c\": 5, \"seconds\": 0.3}]");
  auto a = ReadSamplesFile(dir / "a.csv");
  auto b = ReadSamplesFile(dir / "b.json");
  auto c = ReadSamplesFile(dir / "c.txt");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ((*a)[0].s, 1);
  EXPECT_EQ((*b)[0].s, 2);
  EXPECT_EQ((*c)[0].s, 4);
  auto missing = ReadSamplesFile(dir / "none.csv");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(Message(missing.status()).find("none.csv"), std::string::npos);
}

}  // namespace
}  // namespace specplan::costmodel
