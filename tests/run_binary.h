// Runs a built binary in a shell and captures its output, and reads back the files it wrote, for
// the tests of command-line tools.
#ifndef SPECPLAN_TESTS_RUN_BINARY_H_
#define SPECPLAN_TESTS_RUN_BINARY_H_

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace specplan::testing {

struct CommandResult {
  int exit_code = -1;  // -1 when the binary could not be run or died of a signal
  std::string output;  // stdout and stderr together
};

// `args` is appended to the binary's path as shell words.
inline CommandResult RunBinary(const std::string& binary, const std::string& args) {
  CommandResult r;
  const std::string cmd = binary + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace specplan::testing

#endif  // SPECPLAN_TESTS_RUN_BINARY_H_
