// A JSON input that does not parse is refused with its file, line and column
// (util/json_error.h), e.g. a marginals file holding NaN.
#include "tests/cli/run_command.h"

namespace {

using namespace ::specplan::testing;

TEST(ParseErrors, NanMarginalsAreRefusedWithLineAndColumn) {
  const std::string path = WriteTemp("nan_marginals.json",
                                     "{\"root_token\": 1,\n \"tokens\": [[5, 6]],\n"
                                     " \"probs\": [[0.5, NaN]]}\n");
  ExpectRefused({{"plan --marginals " + path + " --budget 4 --c 0",
                  "specplan plan: --marginals " + path +
                      ":3:18: not valid JSON: syntax error while parsing value - invalid literal",
                  1}});
}

TEST(ParseErrors, TreeFilesAreRefusedWithLineAndColumn) {
  const std::string bad = WriteTemp("bad_tree.json", "{\"tokens\": [1, 2],\n \"parents\": [-1 0]}");
  const std::string good = WriteTemp("good_tree.json", R"({"tokens": [1, 2], "parents": [-1, 0]})");
  ExpectRefused({{"merge --a " + bad + " --b " + good, "--a " + bad + ":2:17: not valid JSON", 1}});
}

}  // namespace
