// One table per enum gives both directions between its values and their spellings, so a name is
// written once: `EnumName` prints a value, `ParseEnum` reads one back and, for an unknown name,
// returns an error naming the field, the bad value and the known spellings.
//
//   inline constexpr EnumEntry<DType> kDTypeNames[] = {
//       {DType::kFloat32, "fp32"}, {DType::kBFloat16, "bf16"}, {DType::kBFloat16, "bfloat16"}};
//   EnumName(kDTypeNames, DType::kBFloat16)           -> "bf16" (the first entry for a value)
//   ParseEnum(kDTypeNames, "dtype", "bfloat16")       -> DType::kBFloat16 (later entries: aliases)
//   ParseEnum(kDTypeNames, "dtype", "int4")           -> "dtype: unknown value 'int4' (known:
//                                                        fp32, bf16)"
#ifndef SPECPLAN_UTIL_ENUM_NAMES_H_
#define SPECPLAN_UTIL_ENUM_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace specplan {

template <typename E>
struct EnumEntry {
  E value;
  const char* name;
};

// The first spelling `table` gives `value`, or "?" for a value it does not list.
template <typename E, size_t N>
constexpr const char* EnumName(const EnumEntry<E> (&table)[N], E value) {
  for (const EnumEntry<E>& entry : table) {
    if (entry.value == value) return entry.name;
  }
  return "?";
}

// The primary spellings of `table` (the first per value), comma-separated: "fp32, bf16".
template <typename E, size_t N>
std::string EnumKnownNames(const EnumEntry<E> (&table)[N]) {
  std::string known;
  for (size_t i = 0; i < N; ++i) {
    bool first_for_value = true;
    for (size_t j = 0; j < i; ++j) {
      if (table[j].value == table[i].value) first_for_value = false;
    }
    if (!first_for_value) continue;
    if (!known.empty()) known += ", ";
    known += table[i].name;
  }
  return known;
}

// The value `name` spells in `table` (any of its spellings), or InvalidArgument
// "<field>: unknown value '<name>' (known: ...)".
template <typename E, size_t N>
absl::StatusOr<E> ParseEnum(const EnumEntry<E> (&table)[N], std::string_view field,
                            std::string_view name) {
  for (const EnumEntry<E>& entry : table) {
    if (name == entry.name) return entry.value;
  }
  // Debian's abseil has a string_view of its own, which StrCat takes; std::string_view goes
  // through std::string.
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), ": unknown value '",
                                                 std::string(name),
                                                 "' (known: ", EnumKnownNames(table), ")"));
}

}  // namespace specplan

#endif  // SPECPLAN_UTIL_ENUM_NAMES_H_
