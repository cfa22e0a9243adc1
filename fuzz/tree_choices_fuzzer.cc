// Tree choices (Medusa / EAGLE paths of child ranks) as JSON [[int, ...], ...] ->
// ValidateTreeChoices -> ImportTreeChoices -> ExportTreeChoices. Checks that validation and import
// agree and that export reproduces the paths in Medusa order.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "fuzz/fuzz_util.h"
#include "planner/tree/tree.h"
#include "planner/tree/tree_choices.h"
#include "planner/tree/tree_outputs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  using namespace specplan::fuzz;
  const nlohmann::json j = ParseJsonNoThrow(AsText(data, size));
  if (!j.is_array()) return 0;
  planner::TreeChoices paths;
  for (const nlohmann::json& row : j) {
    if (!row.is_array()) return 0;
    std::vector<int32_t> path;
    for (const nlohmann::json& v : row) {
      if (!v.is_number_integer()) return 0;
      const int64_t x = v.get<int64_t>();
      if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
        return 0;
      }
      path.push_back(static_cast<int32_t>(x));
    }
    paths.push_back(std::move(path));
  }

  const absl::Status valid = planner::ValidateTreeChoices(paths);
  planner::Tree tree;
  const absl::Status imported = planner::ImportTreeChoices(paths, &tree, 3, 9);
  SPECPLAN_CHECK(valid.ok() == imported.ok(), "ValidateTreeChoices and ImportTreeChoices disagree");
  if (!imported.ok()) return 0;
  CheckOk(planner::ValidateTree(tree), "imported tree");
  SPECPLAN_CHECK(static_cast<size_t>(tree.size()) == paths.size() + 1);
  SPECPLAN_CHECK(tree.tokens[0] == 3);

  planner::TreeChoices exported;
  planner::ExportTreeChoices(tree, &exported);
  planner::TreeChoices sorted = paths;
  std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) {
    if (x.size() != y.size()) return x.size() < y.size();
    return x < y;
  });
  SPECPLAN_CHECK(exported == sorted, "ExportTreeChoices(ImportTreeChoices(p)) != sorted p");

  planner::TreeOutputs out;
  planner::ComputeTreeOutputs(tree, planner::TreeOutputOptions{}, &out);
  SPECPLAN_CHECK(out.size == tree.size());
  return 0;
}
