// specplan-server (or a test build of it) as a child process on a loopback port, for the tests
// that talk to the real binary: tests/service (server_binary_test.cc, remote_backend_test.cc) and
// tests/cli (remote_test.cc, whatif_cli_test.cc).
#ifndef SPECPLAN_TESTS_SERVER_PROCESS_H_
#define SPECPLAN_TESTS_SERVER_PROCESS_H_

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "tests/paths/test_paths.h"

namespace specplan::test {

inline std::string ServerBinary() {
  return ::specplan::test_paths::BinaryDir() + "/service/specplan-server";
}

// A child process running `binary` with `args`; reads its first stdout line, "... listening on
// HOST:PORT (...)". On destruction, unless it was reaped: SIGTERM, up to 10 s to exit, then
// SIGKILL.
class ServerProcess {
 public:
  explicit ServerProcess(std::vector<std::string> args, std::string binary = ServerBinary()) {
    if (access(binary.c_str(), X_OK) != 0) return;  // built without the gRPC service
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const rlimit no_core{0, 0};  // crash tests abort the server: no core files
      setrlimit(RLIMIT_CORE, &no_core);
      std::vector<char*> argv;
      argv.push_back(binary.data());
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[512];
    if (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
      first_line_ = line;
      const size_t colon = first_line_.find(':', first_line_.find("listening on"));
      if (colon != std::string::npos) port_ = std::atoi(first_line_.c_str() + colon + 1);
    }
    if (f != nullptr) fclose(f);
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    if (pid_ <= 0 || reaped_) return;
    if (Terminate() < 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // The binary does not exist (a build without gRPC) or could not be started.
  bool binary_missing() const { return pid_ <= 0; }
  // The listening port; 0 when the server did not start.
  int port() const { return port_; }
  // "127.0.0.1:PORT"; empty when the server did not start.
  std::string address() const {
    return port_ > 0 ? "127.0.0.1:" + std::to_string(port_) : std::string();
  }
  const std::string& first_line() const { return first_line_; }

  // SIGTERM, then the exit status (-1 if it did not exit within 10 s).
  int Terminate() {
    kill(pid_, SIGTERM);
    return WaitExit();
  }
  // The exit status (128 + signal when killed), -1 if it did not exit within 10 s.
  int WaitExit() {
    for (int i = 0; i < 1000; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  bool reaped_ = false;
  std::string first_line_;
};

}  // namespace specplan::test

#endif  // SPECPLAN_TESTS_SERVER_PROCESS_H_
