// specplan-server as a child process, for the tests that run the real binary
// (server_binary_test.cc, remote_backend_test.cc).
#ifndef SPECPLAN_TESTS_SERVICE_SERVER_PROCESS_H_
#define SPECPLAN_TESTS_SERVICE_SERVER_PROCESS_H_

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

namespace specplan::service::testing {

inline const char* ServerBinary() { return SPECPLAN_BINARY_DIR "/service/specplan-server"; }

// A child process running specplan-server; reads its "listening on HOST:PORT" line. Killed
// (SIGKILL) on destruction unless it was reaped.
class ServerProcess {
 public:
  // `env`: extra "NAME=VALUE" variables of the child.
  explicit ServerProcess(std::vector<std::string> args, std::vector<std::string> env = {}) {
    int out[2];
    if (pipe(out) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      close(out[1]);
      const rlimit no_core{0, 0};  // crash tests abort the server: no core files
      setrlimit(RLIMIT_CORE, &no_core);
      for (auto& e : env) putenv(e.data());
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(ServerBinary()));
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(ServerBinary(), argv.data());
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
  ~ServerProcess() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
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

}  // namespace specplan::service::testing

#endif  // SPECPLAN_TESTS_SERVICE_SERVER_PROCESS_H_
