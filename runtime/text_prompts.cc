#include "runtime/text_prompts.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "util/file.h"
#include "util/json_util.h"

extern char** environ;

namespace specplan::runtime {
namespace {

namespace fs = std::filesystem;

// A private temporary directory, removed with the object.
class ScratchDir {
 public:
  ScratchDir() {
    std::string t = (fs::temp_directory_path() / "specplan_text_XXXXXX").string();
    if (mkdtemp(t.data()) != nullptr) path_ = t;
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  bool ok() const { return !path_.empty(); }
  std::string file(const char* name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace

std::string DefaultTokenizerBinary() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path().parent_path() / "tokenizer" / "specplan-tokenizer";
    if (fs::exists(sibling, ec)) return sibling.string();
  }
  return "specplan-tokenizer";
}

absl::Status TokenizerProcess::Run(const std::vector<std::string>& args,
                                   const std::string& log) const {
  std::vector<std::string> all = {binary_};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, binary_.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    return absl::NotFoundError(
        absl::StrCat("tokenizer: cannot run ", binary_, " (build it, or pass --tokenizer-bin)"));
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    absl::StatusOr<std::string> out = ReadFileToString(log);
    return absl::InternalError(
        absl::StrCat("tokenizer: ", binary_, " failed: ", out.ok() ? *out : "(no output)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<planner::TokenId>>> TokenizerProcess::Encode(
    const std::vector<std::string>& texts) const {
  ScratchDir scratch;
  if (!scratch.ok()) return absl::InternalError("tokenizer: cannot create a temporary directory");
  {
    std::ofstream in(scratch.file("texts.txt"));
    for (size_t i = 0; i < texts.size(); ++i) {
      if (texts[i].find_first_not_of(" \t") == std::string::npos ||
          texts[i].find_first_of("\r\n") != std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("text ", i, ": empty or with a line break (one line of text per prompt)"));
      }
      in << texts[i] << "\n";
    }
  }
  if (absl::Status st = Run({"encode", "--model", model_, "--input", scratch.file("texts.txt"),
                             "--output", scratch.file("ids.jsonl"), "--format", "jsonl"},
                            scratch.file("log"));
      !st.ok()) {
    return st;
  }
  std::ifstream out(scratch.file("ids.jsonl"));
  std::vector<std::vector<planner::TokenId>> ids;
  std::string line;
  while (std::getline(out, line)) {
    absl::StatusOr<nlohmann::json> parsed = json_util::ParseJson(line, "tokenizer output");
    const nlohmann::json j = parsed.ok() ? *std::move(parsed) : nlohmann::json();
    if (!j.is_object() || !j.contains("ids")) {
      return absl::InternalError(absl::StrCat("tokenizer: unexpected output line: ", line));
    }
    ids.push_back(j["ids"].get<std::vector<planner::TokenId>>());
  }
  if (ids.size() != texts.size()) {
    return absl::InternalError(
        absl::StrCat("tokenizer: ", ids.size(), " id lists for ", texts.size(), " texts"));
  }
  return ids;
}

absl::StatusOr<std::vector<std::string>> TokenizerProcess::Decode(
    const std::vector<std::vector<planner::TokenId>>& ids) const {
  ScratchDir scratch;
  if (!scratch.ok()) return absl::InternalError("tokenizer: cannot create a temporary directory");
  {
    std::ofstream in(scratch.file("ids.jsonl"));
    for (const auto& row : ids) in << nlohmann::json{{"ids", row}}.dump() << "\n";
  }
  if (absl::Status st = Run({"decode", "--model", model_, "--input", scratch.file("ids.jsonl"),
                             "--output", scratch.file("texts.txt")},
                            scratch.file("log"));
      !st.ok()) {
    return st;
  }
  std::ifstream out(scratch.file("texts.txt"));
  std::vector<std::string> texts;
  std::string line;
  while (std::getline(out, line)) texts.push_back(line);
  if (texts.size() != ids.size()) {
    return absl::InternalError(
        absl::StrCat("tokenizer: ", texts.size(), " texts for ", ids.size(), " id lists"));
  }
  return texts;
}

}  // namespace specplan::runtime
