// The bounded readers every input goes through: ReadFileToString (util/file.h: named errors for a
// missing file, a directory, an unreadable file, and its size limit, also on a device that never
// ends) and ParseJson (util/json_error.h: its depth and size limits, with the position), and the
// bounded quote error messages use instead of dump() (util/json_util.h Quote).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/util/temp_dir.h"
#include "util/file.h"
#include "util/json_error.h"
#include "util/json_util.h"
#include "util/lines.h"

namespace specplan {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

void WriteAll(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::string Nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ReadFileToStringTest, NamesMissingDirectoryAndUnreadable) {
  const fs::path dir = test::FreshTestDir("specplan_input_limits_");
  auto missing = ReadFileToString((dir / "nope.json").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), (dir / "nope.json").string() + ": no such file");

  auto directory = ReadFileToString(dir.string());
  EXPECT_EQ(directory.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(directory.status().message(), dir.string() + ": is a directory, not a file");

  const fs::path locked = dir / "locked.json";
  WriteAll(locked, "{}");
  ASSERT_EQ(chmod(locked.c_str(), 0), 0);
  if (access(locked.c_str(), R_OK) == 0) {
    GTEST_SKIP() << "running as a user who reads mode-0 files (root): no unreadable file here";
  }
  auto unreadable = ReadFileToString(locked.string());
  EXPECT_EQ(unreadable.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(unreadable.status().message(), locked.string() + ": cannot read: Permission denied");
}

TEST(ReadFileToStringTest, RefusesPastTheLimitBeforeReadingWhole) {
  const fs::path dir = test::FreshTestDir("specplan_input_limits_");
  WriteAll(dir / "big.txt", std::string(1000, 'x'));
  auto ok = ReadFileToString((dir / "big.txt").string(), 1000);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->size(), 1000u);
  auto over = ReadFileToString((dir / "big.txt").string(), 999);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(),
            (dir / "big.txt").string() + ": more than the 999 bytes an input file may hold");
  // A device that never ends is read up to the limit and refused, fast.
  const auto t0 = std::chrono::steady_clock::now();
  auto zero = ReadFileToString("/dev/zero");
  EXPECT_EQ(zero.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(zero.status().message(),
            "/dev/zero: more than the 64 MiB (67108864 bytes) an input file may hold");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  // The line reader goes through the same reader.
  absl::Status lines =
      ForEachNonBlankLine(dir.string(), [](std::string_view, size_t) { return absl::OkStatus(); });
  EXPECT_THAT(lines.message(), HasSubstr("is a directory"));
}

TEST(ParseJsonTest, RefusesDeepNestingWithPositionAndLimit) {
  EXPECT_TRUE(json_util::ParseJson(Nested(json_util::kMaxJsonDepth), "x").ok());
  auto deep = json_util::ParseJson(Nested(json_util::kMaxJsonDepth + 1), "x.json");
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(deep.status().message(), "x.json:1:65: JSON nested deeper than 64 levels (the limit)");
  // The issue's repro: 100,000 levels under a key, on the second line; brackets in strings do
  // not count.
  const std::string text = "{\"s\": \"[[[[\\\"[[\",\n \"root_token\":" + Nested(100000) + "}";
  auto repro = json_util::ParseJson(text, "nested.json");
  EXPECT_EQ(repro.status().message(),
            "nested.json:2:78: JSON nested deeper than 64 levels (the limit)");
  // A JSONL reader's line number.
  EXPECT_THAT(json_util::ParseJson(Nested(65), "t.jsonl", 7).status().message(),
              HasSubstr("t.jsonl:7:65: "));
  // Objects count as arrays do.
  std::string objects;
  for (int i = 0; i < 65; ++i) objects += "{\"a\":";
  objects += "1" + std::string(65, '}');
  EXPECT_THAT(json_util::ParseJson(objects, "o").status().message(),
              HasSubstr("o:1:321: JSON nested deeper than 64 levels"));
}

TEST(ParseJsonTest, RefusesTextPastTheSizeLimit) {
  json_util::JsonLimits limits;
  limits.max_bytes = 10;
  EXPECT_TRUE(json_util::ParseJson("[1,2,3,44]", "x", 1, limits).ok());
  auto big = json_util::ParseJson("[1,2,3,\n4444]", "x", 1, limits);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(big.status().message(), "x:2:3: JSON text longer than 10 bytes (the limit)");
}

TEST(ParseJsonTest, ErrorTextIsPrintableAndBounded) {
  // Bytes that are not UTF-8 and a long unterminated string: the message escapes the bytes and
  // keeps a bounded piece of the parser's "last read".
  auto bad = json_util::ParseJson("[\"\xff\xfe", "b.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("b.json:1:"));
  EXPECT_THAT(bad.status().message(), HasSubstr("\\xff"));
  for (unsigned char ch : std::string(bad.status().message())) EXPECT_LT(ch, 0x80);
  auto long_string = json_util::ParseJson("[\"" + std::string(1 << 20, 'a'), "l.json");
  ASSERT_FALSE(long_string.ok());
  EXPECT_LT(long_string.status().message().size(), 400u);
}

TEST(QuoteTest, IsDumpWhenShortAndABoundedPrefixOtherwise) {
  const nlohmann::json small = nlohmann::json::parse(R"({"a":[1,2.5,"x"],"b":null})");
  EXPECT_EQ(json_util::Quote(small), small.dump());
  EXPECT_EQ(json_util::Quote(nlohmann::json("\xe4\xb8\xad")), "\"\xe4\xb8\xad\"");
  // 64 levels (the parser's most) and a value of a million elements: 64 characters and "...".
  auto deep = json_util::ParseJson(Nested(64), "d");
  ASSERT_TRUE(deep.ok());
  EXPECT_EQ(json_util::Quote(*deep), std::string(64, '[') + "...");
  nlohmann::json big = nlohmann::json::array();
  for (int i = 0; i < 1000000; ++i) big.push_back(i);
  const std::string q = json_util::Quote(big, 20);
  EXPECT_EQ(q, "[0,1,2,3,4,5,6,7,8,9...");
  EXPECT_EQ(json_util::Quote(nlohmann::json(std::string(1000, 'z')), 8), "\"zzzzzzz...");
  // A cut never splits a UTF-8 sequence.
  const std::string cut = json_util::Quote(nlohmann::json("ab\xe4\xb8\xad\xe4\xb8\xad"), 5);
  EXPECT_EQ(cut, "\"ab...");
  // The typed getters quote too.
  nlohmann::json obj = {{"k", big}};
  auto n = json_util::GetNumber(obj, "k");
  EXPECT_LT(n.status().message().size(), 120u);
  EXPECT_THAT(n.status().message(), HasSubstr("k = [0,1,2,"));
}

}  // namespace
}  // namespace specplan
