// specplan merge: union of two drafters' trees under one shared root (merged-tree dual drafting)
// and the verifier inputs of the merged tree.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/command_util.h"
#include "cli/commands.h"
#include "cli/cost_flags.h"
#include "cli/remote.h"
#include "ops/merge.h"
#include "planner/tree/merge.h"
#include "planner/tree/tree_json.h"
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
  ops::MergeRequest req;
  req.a = &*a;
  req.b = &*b;
  req.options.dedup = args.dedup;
  req.options.n_max = args.n_max;
  req.c = args.c;
  ops::MergeResult result;
  if (!args.server.empty()) {
    absl::Status st =
        RemoteMergeTrees(args.server, *a, *b, req.options, args.c, &result.merged, &result.outputs);
    if (!st.ok()) {
      std::cerr << "specplan merge: " << st.message() << "\n";
      return 1;
    }
  } else {
    absl::StatusOr<ops::MergeResult> local = ops::Merge(req);
    if (!local.ok()) {
      std::cerr << "specplan merge: " << CostErrorInFlags(local.status()).message() << "\n";
      return 1;
    }
    result = *std::move(local);
  }
  if (args.json) {
    std::cout << ops::ToJson(req, result).dump(2) << "\n";
    return 0;
  }
  const planner::MergedTree& merged = result.merged;
  std::vector<std::string> sources;
  for (planner::MergeSource s : merged.source) sources.push_back(ops::MergeSourceName(s));
  std::cout << "merged tree: " << merged.tree.size() << " nodes (" << a->num_draft()
            << " draft from a, " << b->num_draft() << " from b"
            << (args.dedup ? ", shared prefixes merged" : "")
            << (args.n_max >= 0 ? absl::StrCat(", budget n_max = ", args.n_max) : "") << ")\n";
  std::cout << "tokens:    " << absl::StrJoin(merged.tree.tokens, " ") << "\n";
  std::cout << "parents:   " << absl::StrJoin(merged.tree.parents, " ") << "\n";
  std::cout << "depths:    " << absl::StrJoin(merged.tree.depths, " ") << "\n";
  std::cout << "positions: " << absl::StrJoin(result.outputs.positions, " ") << "\n";
  std::cout << "source:    " << absl::StrJoin(sources, " ") << "\n";
  std::cout << "phi_a:     " << absl::StrJoin(merged.phi_a, " ") << "\n";
  std::cout << "phi_b:     " << absl::StrJoin(merged.phi_b, " ") << "\n";
  std::cout << "mask:\n";
  for (const std::string& row : ops::MaskRows(result.outputs)) std::cout << "  " << row << "\n";
  std::cout << "retrieve:\n";
  for (const std::vector<int32_t>& row : ops::RetrieveRows(result.outputs)) {
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
  AddJsonFlag(cmd, &args->json, " instead of the text");
  AddServerOption(cmd, &args->server, "Merge", " instead of in-process (same output)");
}

}  // namespace specplan::cli
