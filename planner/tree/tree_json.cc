#include "planner/tree/tree_json.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "util/json_error.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::planner {
namespace {

using json = nlohmann::json;

// Looks up obj[key] and checks that it is an array of at most kMaxTreeNodes entries; `elements`
// names the element type in the error ("integers", "numbers"). Sets *array to the array, or to
// nullptr when the key is missing and not `required`.
absl::Status FindBoundedArray(const json& obj, const char* key, bool required, const char* elements,
                              const json** array) {
  *array = nullptr;
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return absl::InvalidArgumentError(absl::StrCat(key, ": missing"));
    return absl::OkStatus();
  }
  if (!it->is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, " = ", json_util::Quote(*it), ": must be an array of ", elements));
  }
  if (it->size() > static_cast<size_t>(kMaxTreeNodes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": ", it->size(), " entries exceeds the limit of ", kMaxTreeNodes));
  }
  *array = &*it;
  return absl::OkStatus();
}

// Reads json[key] as an array of int32. `required` false: a missing key leaves *out empty.
absl::Status ReadIntArray(const json& obj, const char* key, bool required,
                          std::vector<int32_t>* out) {
  out->clear();
  const json* array = nullptr;
  SPECPLAN_RETURN_IF_ERROR(FindBoundedArray(obj, key, required, "integers", &array));
  if (array == nullptr) return absl::OkStatus();
  out->reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    const json& v = (*array)[i];
    bool in_range = false;
    int64_t value = 0;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      in_range = u <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
      value = static_cast<int64_t>(u);
    } else if (v.is_number_integer()) {
      value = v.get<int64_t>();
      in_range = value >= std::numeric_limits<int32_t>::min() &&
                 value <= std::numeric_limits<int32_t>::max();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "[", i, "] = ", json_util::Quote(v), ": must be an integer"));
    }
    if (!in_range) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "[", i, "] = ", json_util::Quote(v), ": out of the int32 range"));
    }
    out->push_back(static_cast<int32_t>(value));
  }
  return absl::OkStatus();
}

// Reads json[key] as an array of numbers. A missing key leaves *out empty.
absl::Status ReadProbArray(const json& obj, const char* key, std::vector<double>* out) {
  out->clear();
  const json* array = nullptr;
  SPECPLAN_RETURN_IF_ERROR(FindBoundedArray(obj, key, /*required=*/false, "numbers", &array));
  if (array == nullptr) return absl::OkStatus();
  out->reserve(array->size());
  for (size_t i = 0; i < array->size(); ++i) {
    const json& v = (*array)[i];
    if (!v.is_number()) {
      return absl::InvalidArgumentError(
          absl::StrCat(key, "[", i, "] = ", json_util::Quote(v), ": must be a number"));
    }
    out->push_back(v.get<double>());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Tree> TreeFromJson(const json& obj) {
  if (!obj.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tree: expected a JSON object with \"tokens\" and \"parents\", got ", obj.type_name()));
  }
  Tree tree;
  SPECPLAN_RETURN_IF_ERROR(ReadIntArray(obj, "tokens", /*required=*/true, &tree.tokens));
  SPECPLAN_RETURN_IF_ERROR(ReadIntArray(obj, "parents", /*required=*/true, &tree.parents));
  SPECPLAN_RETURN_IF_ERROR(ReadIntArray(obj, "depths", /*required=*/false, &tree.depths));
  SPECPLAN_RETURN_IF_ERROR(ReadProbArray(obj, "path_probs", &tree.path_probs));
  // Checks lengths, root, topological parents and, when given, depths against parents.
  SPECPLAN_RETURN_IF_ERROR(ValidateTree(tree));
  if (tree.depths.empty()) {
    tree.depths.resize(tree.tokens.size());
    tree.depths[0] = 0;
    for (int i = 1; i < tree.size(); ++i) tree.depths[i] = tree.depths[tree.parents[i]] + 1;
  }
  return tree;
}

absl::StatusOr<Tree> ParseTreeJson(std::string_view text, std::string_view source) {
  SPECPLAN_ASSIGN_OR_RETURN(const json obj, json_util::ParseJson(text, source));
  return TreeFromJson(obj);
}

json TreeToJson(const Tree& tree) {
  json out = json::object();
  out["tokens"] = tree.tokens;
  out["parents"] = tree.parents;
  if (!tree.depths.empty()) {
    out["depths"] = tree.depths;
  } else {
    std::vector<int32_t> depths(tree.tokens.size(), 0);
    for (int i = 1; i < tree.size(); ++i) depths[i] = depths[tree.parents[i]] + 1;
    out["depths"] = std::move(depths);
  }
  if (!tree.path_probs.empty()) out["path_probs"] = tree.path_probs;
  return out;
}

}  // namespace specplan::planner
