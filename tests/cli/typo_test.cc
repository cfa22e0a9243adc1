// A mistyped option or subcommand is named first, with the closest known one (cli/arg_check.h),
// before CLI11's complaints about what is missing.
#include "tests/cli/run_command.h"

namespace {

using namespace ::specplan::testing;

TEST(Typos, UnknownOptionIsNamedWithTheClosestOne) {
  ExpectRefused({
      {"plan --n-mx 256", "specplan plan: unknown option --n-mx (did you mean --n-max?)",
       kAnyFailure},
      {"estimate --gpu h100 --model qwen3-8b --s 16 --c 1024 --modle x",
       "specplan estimate: unknown option --modle (did you mean --model?)", kAnyFailure},
      {"plan --n-max=256 --gpuu=h100", "unknown option --gpuu (did you mean --gpu?)", kAnyFailure},
      {"profiles compose --kernles DIR",
       "specplan profiles compose: unknown option --kernles (did you mean --kernels?)",
       kAnyFailure},
      // Nothing close: named without a guess.
      {"plan --zzzzzzzz 1", "specplan plan: unknown option --zzzzzzzz\n", kAnyFailure},
  });
  const CommandResult r = RunSpecplan("plan --n-mx 256");
  EXPECT_THAT(r.output, Not(HasSubstr("Exactly 1 option")));
}

TEST(Typos, UnknownSubcommandIsNamedWithTheClosestOne) {
  ExpectRefused({
      {"estimat", "specplan: unknown command 'estimat' (did you mean 'estimate'?)", kAnyFailure},
      {"profiles compse", "specplan profiles: unknown command 'compse' (did you mean 'compose'?)",
       kAnyFailure},
  });
  EXPECT_THAT(RunSpecplan("estimat").output, Not(HasSubstr("A subcommand is required")));
}

// Values are not mistaken for subcommands or options: negative numbers, values after '=',
// repeated and comma-separated values, and --help still work.
TEST(Typos, KnownCommandLinesStillParse) {
  ExpectSucceeds({
      {"estimate --gpu h100 --model qwen3-8b --s 16 --c 1024", "qwen3-8b"},
      {"estimate --gpu=h100 --model=qwen3-8b --s=16 --c=1024", "qwen3-8b"},
      {"plan --help", "--n-max"},
      {"--help", "estimate"},
  });
}

}  // namespace
