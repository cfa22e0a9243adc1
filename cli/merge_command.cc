// specplan merge: union of two drafters' trees under one shared root (merged-tree dual drafting)
// and the verifier inputs of the merged tree.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/remote.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree_json.h"
#include "planner/tree/tree_outputs.h"
#include "util/enum_names.h"
#include "util/file.h"
#include "util/json_error.h"

namespace specplan::cli {
namespace {

struct MergeArgs {
  std::string a;
  std::string b;
  bool dedup = false;
  int n_max = -1;  // < 0: no budget
  int64_t c = 0;   // cached tokens: positions are c + depth
  bool json = false;
  std::string server;
};

absl::StatusOr<planner::Tree> ReadTreeFile(const std::string& flag, const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(flag, " ", text.status().message()));
  // A syntax error: "--a <path>:<line>:<column>: not valid JSON: ...".
  absl::StatusOr<nlohmann::json> parsed = json_util::ParseJson(*text, path);
  if (!parsed.ok())
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", parsed.status().message()));
  absl::StatusOr<planner::Tree> tree = planner::TreeFromJson(*parsed);
  if (!tree.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": ", tree.status().message()));
  }
  return tree;
}

constexpr EnumEntry<planner::MergeSource> kSourceNames[] = {
    {planner::MergeSource::kA, "a"},
    {planner::MergeSource::kB, "b"},
    {planner::MergeSource::kBoth, "both"},
};

std::vector<std::string> MaskRows(const planner::TreeOutputs& out) {
  std::vector<std::string> rows(out.size, std::string(out.size, '0'));
  for (int i = 0; i < out.size; ++i) {
    for (int j = 0; j <= i; ++j) {
      if (out.MaskBit(i, j)) rows[i][j] = '1';
    }
  }
  return rows;
}

std::vector<std::vector<int32_t>> RetrieveRows(const planner::TreeOutputs& out) {
  std::vector<std::vector<int32_t>> rows(out.num_leaves);
  for (int r = 0; r < out.num_leaves; ++r) {
    const int32_t* row = out.retrieve.data() + static_cast<size_t>(r) * out.retrieve_width;
    rows[r].assign(row, row + out.retrieve_width);
  }
  return rows;
}

int RunMerge(const MergeArgs& args) {
  absl::StatusOr<planner::Tree> a = ReadTreeFile("--a", args.a);
  if (!a.ok()) {
    std::cerr << "specplan merge: " << a.status().message() << "\n";
    return 1;
  }
  absl::StatusOr<planner::Tree> b = ReadTreeFile("--b", args.b);
  if (!b.ok()) {
    std::cerr << "specplan merge: " << b.status().message() << "\n";
    return 1;
  }
  planner::MergeOptions options;
  options.dedup = args.dedup;
  options.n_max = args.n_max;
  planner::MergedTree merged_tree;
  planner::MergedTree* merged = &merged_tree;
  planner::TreeOutputs out;
  if (!args.server.empty()) {
    absl::Status st = RemoteMergeTrees(args.server, *a, *b, options, args.c, merged, &out);
    if (!st.ok()) {
      std::cerr << "specplan merge: " << st.message() << "\n";
      return 1;
    }
  } else {
    absl::StatusOr<planner::MergedTree> local = planner::MergeTrees(*a, *b, options);
    if (!local.ok()) {
      std::cerr << "specplan merge: " << local.status().message() << "\n";
      return 1;
    }
    merged_tree = *std::move(local);
    planner::TreeOutputOptions out_options;
    out_options.position_offset = args.c;
    planner::ComputeTreeOutputs(merged->tree, out_options, &out);
  }
  const std::vector<std::string> mask = MaskRows(out);
  const std::vector<std::vector<int32_t>> retrieve = RetrieveRows(out);
  std::vector<std::string> sources;
  for (planner::MergeSource s : merged->source) sources.push_back(EnumName(kSourceNames, s));

  if (args.json) {
    nlohmann::json j = planner::TreeToJson(merged->tree);
    j["positions"] = out.positions;
    j["retrieve"] = retrieve;
    j["mask"] = mask;
    j["phi_a"] = merged->phi_a;
    j["phi_b"] = merged->phi_b;
    j["source"] = sources;
    j["num_draft"] = merged->tree.num_draft();
    j["dedup"] = args.dedup;
    j["n_max"] = args.n_max < 0 ? nlohmann::json(nullptr) : nlohmann::json(args.n_max);
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "merged tree: " << merged->tree.size() << " nodes (" << a->num_draft()
            << " draft from a, " << b->num_draft() << " from b"
            << (args.dedup ? ", shared prefixes merged" : "")
            << (args.n_max >= 0 ? absl::StrCat(", budget n_max = ", args.n_max) : "") << ")\n";
  std::cout << "tokens:    " << absl::StrJoin(merged->tree.tokens, " ") << "\n";
  std::cout << "parents:   " << absl::StrJoin(merged->tree.parents, " ") << "\n";
  std::cout << "depths:    " << absl::StrJoin(merged->tree.depths, " ") << "\n";
  std::cout << "positions: " << absl::StrJoin(out.positions, " ") << "\n";
  std::cout << "source:    " << absl::StrJoin(sources, " ") << "\n";
  std::cout << "phi_a:     " << absl::StrJoin(merged->phi_a, " ") << "\n";
  std::cout << "phi_b:     " << absl::StrJoin(merged->phi_b, " ") << "\n";
  std::cout << "mask:\n";
  for (const std::string& row : mask) std::cout << "  " << row << "\n";
  std::cout << "retrieve:\n";
  for (const std::vector<int32_t>& row : retrieve) {
    std::cout << "  " << absl::StrJoin(row, " ") << "\n";
  }
  return 0;
}

}  // namespace

void RegisterMergeCommand(CLI::App& app, int* exit_code) {
  auto [cmd, args] = AddCommand(
      &app, "merge",
      "Merge two drafters' trees (same root token) into one tree verified in a single pass",
      exit_code, &RunMerge);
  cmd->add_option("--a", args->a, "Tree A JSON: {\"tokens\": [...], \"parents\": [...]}")
      ->required();
  cmd->add_option("--b", args->b, "Tree B JSON, same root token as A")->required();
  cmd->add_flag("--dedup", args->dedup,
                "Prefix sharing: merge nodes whose root-to-node token paths are equal");
  cmd->add_option("--n-max", args->n_max,
                  "Keep at most N draft nodes, best-first by path score (needs path_probs)")
      ->check(CLI::Range(0, planner::kMaxTreeNodes));
  cmd->add_option("--c", args->c, "Cached context tokens: positions are c + depth")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd->add_flag("--json", args->json, "Print JSON instead of text");
  AddServerOption(cmd, &args->server, "Merge", " instead of in-process (same output)");
}

}  // namespace specplan::cli
