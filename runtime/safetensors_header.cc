#include "runtime/safetensors_header.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/json_util.h"

namespace specplan::runtime {
namespace {

std::string ShapeText(const std::vector<int64_t>& s) {
  return absl::StrCat("[", absl::StrJoin(s, ", "), "]");
}

}  // namespace

int64_t SafetensorsElementSize(const std::string& dtype) {
  static constexpr std::pair<const char*, int64_t> kSizes[] = {
      {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8},
      {"I32", 4}, {"I16", 2}, {"I8", 1},   {"U8", 1},  {"BOOL", 1},
  };
  for (const auto& [name, size] : kSizes) {
    if (dtype == name) return size;
  }
  return 0;
}

absl::StatusOr<std::vector<SafetensorsEntry>> ParseSafetensorsHeader(std::string_view header_json,
                                                                     int64_t data_size,
                                                                     const std::string& where) {
  absl::StatusOr<nlohmann::json> parsed =
      json_util::ParseJson(header_json, absl::StrCat(where, ": header"));
  if (!parsed.ok()) return parsed.status();  // "<where>: header:1:5: not valid JSON: ..."
  nlohmann::json j = *std::move(parsed);
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": header: expected a JSON object"));
  }
  std::vector<SafetensorsEntry> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string pre = absl::StrCat(where, ": tensor \"", it.key(), "\": ");
    const nlohmann::json& v = it.value();
    if (!v.is_object()) return absl::InvalidArgumentError(pre + "expected an object");
    SafetensorsEntry e;
    e.name = it.key();
    if (!v.contains("dtype") || !v["dtype"].is_string()) {
      return absl::InvalidArgumentError(pre + "dtype: missing or not a string");
    }
    e.dtype = v["dtype"].get<std::string>();
    const int64_t elem_size = SafetensorsElementSize(e.dtype);
    if (elem_size == 0) {
      return absl::InvalidArgumentError(absl::StrCat(pre, "dtype = \"", e.dtype, "\": unknown"));
    }
    if (!v.contains("shape") || !v["shape"].is_array()) {
      return absl::InvalidArgumentError(pre + "shape: missing or not an array");
    }
    int64_t numel = 1;
    for (size_t i = 0; i < v["shape"].size(); ++i) {
      const auto& d = v["shape"][i];
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40)) {
        return absl::InvalidArgumentError(absl::StrCat(
            pre, "shape[", i, "] = ", json_util::Quote(d), ": must be an integer >= 0"));
      }
      e.shape.push_back(d.get<int64_t>());
      // Both factors are <= 2^50 and 2^40 here only if checked before multiplying.
      if (e.shape.back() != 0 && numel > (int64_t{1} << 50) / e.shape.back()) {
        return absl::InvalidArgumentError(
            absl::StrCat(pre, "shape = ", json_util::Quote(v["shape"]), ": too many elements"));
      }
      numel *= e.shape.back();
    }
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2 || !v["data_offsets"][0].is_number_integer() ||
        !v["data_offsets"][1].is_number_integer()) {
      return absl::InvalidArgumentError(
          pre + "data_offsets: missing or not a pair of integers [begin, end]");
    }
    e.begin = v["data_offsets"][0].get<int64_t>();
    e.end = v["data_offsets"][1].get<int64_t>();
    const std::string offs = absl::StrCat("data_offsets = [", e.begin, ", ", e.end, "]");
    if (e.begin < 0 || e.end < e.begin) {
      return absl::InvalidArgumentError(absl::StrCat(pre, offs, ": need 0 <= begin <= end"));
    }
    if (e.end > data_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(pre, offs, ": past the end of the data block (", data_size, " bytes)"));
    }
    if (e.end - e.begin != numel * elem_size) {
      return absl::InvalidArgumentError(
          absl::StrCat(pre, offs, ": span ", e.end - e.begin, " bytes, expected ",
                       numel * elem_size, " (shape ", ShapeText(e.shape), " x ", e.dtype, ")"));
    }
    out.push_back(std::move(e));
  }
  std::vector<const SafetensorsEntry*> by_offset;
  for (const auto& e : out) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
              return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
            });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const auto* a = by_offset[i - 1];
    const auto* b = by_offset[i];
    if (b->begin < a->end && b->end > b->begin) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": tensor \"", b->name, "\": data_offsets = [", b->begin, ", ", b->end,
          "]: overlaps tensor \"", a->name, "\" [", a->begin, ", ", a->end, "]"));
    }
  }
  return out;
}

}  // namespace specplan::runtime
