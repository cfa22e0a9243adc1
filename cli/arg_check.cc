#include "cli/arg_check.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace specplan::cli {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "plan", "profiles compose": the words that name `app` after the program's.
std::string CommandPath(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr && app->get_parent() != nullptr; app = app->get_parent()) {
    if (!app->get_name().empty()) names.push_back(app->get_name());
  }
  std::reverse(names.begin(), names.end());
  return absl::StrJoin(names, " ");
}

// Every option of `app` by its spellings (--long, -s), option groups' included.
void OptionNames(const CLI::App* app, std::vector<std::string>* names) {
  for (const CLI::Option* opt : app->get_options()) {
    for (const std::string& l : opt->get_lnames()) names->push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names->push_back("-" + s);
  }
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name().empty()) OptionNames(sub, names);
  }
}

const CLI::App* Subcommand(const CLI::App* app, const std::string& name) {
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty() && sub->check_name(name)) return sub;
  }
  return nullptr;
}

std::vector<std::string> SubcommandNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  return names;
}

bool IsNumber(const std::string& word) {
  double unused;
  return absl::SimpleAtod(word, &unused);
}

// A word CLI11 reads as an option name (not a negative number, not a lone "-").
bool LooksLikeOption(const std::string& word) {
  return word.size() > 1 && word[0] == '-' && !IsNumber(word);
}

std::string DidYouMean(const std::string& closest, const char* quote) {
  return closest.empty() ? "" : absl::StrCat(" (did you mean ", quote, closest, quote, "?)");
}

}  // namespace

std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string UnknownArgument(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* current = &app;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") return "";
    if (LooksLikeOption(word)) {
      std::string name = word.substr(0, word.find('='));
      // "-abc" (bundled short flags) and "-n5" (a short option with its value): CLI11 reads the
      // first letter as the option.
      if (name.size() > 2 && name[1] != '-') name = name.substr(0, 2);
      const CLI::Option* opt = current->get_option_no_throw(name);
      if (opt == nullptr) {
        std::vector<std::string> names;
        OptionNames(current, &names);
        const std::string where = CommandPath(current);
        return absl::StrCat("specplan", where.empty() ? "" : " ", where, ": unknown option ", name,
                            DidYouMean(ClosestName(name, names), ""));
      }
      if (word.find('=') != std::string::npos || opt->get_type_size_max() == 0 ||
          (name.size() == 2 && word.size() > 2 && word[1] != '-')) {
        continue;  // a flag, or its value is in this word
      }
      // Its values: the next words that are neither options nor subcommands, up to its maximum.
      int taken = 0;
      const int most = std::max(1, opt->get_items_expected_max());
      while (taken < most && i + 1 < args.size() && !LooksLikeOption(args[i + 1]) &&
             (taken == 0 || Subcommand(current, args[i + 1]) == nullptr)) {
        ++i;
        ++taken;
      }
      continue;
    }
    if (const CLI::App* sub = Subcommand(current, word); sub != nullptr) {
      current = sub;
      continue;
    }
    const std::vector<std::string> names = SubcommandNames(current);
    if (names.empty()) continue;  // a positional word: CLI11 judges it
    const std::string where = CommandPath(current);
    return absl::StrCat("specplan", where.empty() ? "" : " ", where, ": unknown command '", word,
                        "'", DidYouMean(ClosestName(word, names), "'"),
                        "; commands: ", absl::StrJoin(names, ", "));
  }
  return "";
}

int CheckArguments(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string problem = UnknownArgument(app, args);
  if (problem.empty()) return 0;
  std::cerr << problem << "\nRun with --help for more information.\n";
  return static_cast<int>(CLI::ExitCodes::ExtrasError);
}

}  // namespace specplan::cli
