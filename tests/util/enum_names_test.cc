#include "util/enum_names.h"

#include <gtest/gtest.h>

namespace specplan {
namespace {

enum class Color { kRed, kGreen, kBlue };

inline constexpr EnumEntry<Color> kColorNames[] = {{Color::kRed, "red"},
                                                   {Color::kGreen, "green"},
                                                   {Color::kBlue, "blue"},
                                                   {Color::kRed, "crimson"}};

TEST(EnumNames, NameIsTheFirstSpellingOfAValue) {
  EXPECT_STREQ(EnumName(kColorNames, Color::kRed), "red");
  EXPECT_STREQ(EnumName(kColorNames, Color::kBlue), "blue");
  EXPECT_STREQ(EnumName(kColorNames, static_cast<Color>(7)), "?");
}

TEST(EnumNames, ParseAcceptsEverySpellingIncludingAliases) {
  EXPECT_EQ(*ParseEnum(kColorNames, "color", "green"), Color::kGreen);
  EXPECT_EQ(*ParseEnum(kColorNames, "color", "crimson"), Color::kRed);
}

TEST(EnumNames, UnknownNameNamesFieldValueAndPrimarySpellings) {
  absl::StatusOr<Color> parsed = ParseEnum(kColorNames, "color", "mauve");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "color: unknown value 'mauve' (known: red, green, blue)");
}

TEST(EnumNames, NamesRoundTripThroughParse) {
  for (Color c : {Color::kRed, Color::kGreen, Color::kBlue}) {
    EXPECT_EQ(*ParseEnum(kColorNames, "color", EnumName(kColorNames, c)), c);
  }
}

}  // namespace
}  // namespace specplan
