// Fault tests of the atomic profile write: a crash at every step of write -> fsync -> rename
// (injected through FaultEnv), and a full disk, each leave either the previous profile or the new
// one, complete and readable.
#include "util/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "tests/util/fault_env.h"
#include "tests/util/temp_dir.h"

namespace specplan::costmodel {
namespace {

namespace fs = std::filesystem;

fs::path TempDir() { return test::FreshTestDir("specplan_atomic_test_"); }

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int RegularFiles(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.is_regular_file();
  return n;
}

// Runs `body` in a forked child and returns its wait status.
template <typename F>
int InChild(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    body();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

Profile SmallProfile(const std::string& device) {
  Profile p;
  p.gpu = "h100-sxm";
  p.model = "qwen3-8b";
  p.gpu_spec = *LookupGpu("h100");
  p.model_spec = *LookupModel("qwen3-8b");
  p.device_name = device;
  p.created_utc = "2026-11-22T00:00:00Z";
  return p;
}

TEST(AtomicFile, CrashAtEveryStepLeavesOldOrNewFileComplete) {
  const fs::path dir = TempDir();
  const std::string path = (dir / "p.json").string();
  const std::string old_text(4096, 'o');
  const std::string new_text(8192, 'n');
  using test::CrashPoint;
  for (CrashPoint fault :
       {CrashPoint::kMidTmpWrite, CrashPoint::kAfterTmpWrite, CrashPoint::kAfterRename}) {
    ASSERT_TRUE(WriteFileAtomically(path, old_text).ok());
    const int status = InChild([&] {
      test::FaultEnv env(fault);
      (void)WriteFileAtomically(path, new_text, &env);
    });
    ASSERT_TRUE(WIFSIGNALED(status)) << "fault " << static_cast<int>(fault);
    EXPECT_EQ(WTERMSIG(status), SIGABRT);
    const std::string now = Slurp(path);
    if (fault == CrashPoint::kAfterRename) {
      EXPECT_EQ(now, new_text);
    } else {
      EXPECT_EQ(now, old_text) << "fault " << static_cast<int>(fault);
    }
    // The crashed writer's temp file may remain; it never replaces the target on its own.
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename() != "p.json") fs::remove(e.path());
    }
  }
  fs::remove_all(dir);
}

TEST(AtomicFile, FullDiskFailsCleanlyAndKeepsTheOldProfile) {
  const fs::path dir = TempDir();
  const std::string path = (dir / "h100" / "qwen3-8b-bf16.json").string();
  ASSERT_TRUE(SaveProfile(SmallProfile("old"), path).ok());
  const std::string before = Slurp(path);
  Profile big = SmallProfile("new");
  for (int i = 0; i < 2000; ++i) big.samples.push_back({{1 + i % 64, 128 * (i % 16), 1e-3}, false});
  // A file-size limit makes write() fail with EFBIG part-way, as a full disk fails with ENOSPC.
  const int status = InChild([&] {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit limit{static_cast<rlim_t>(before.size() + 100),
                 static_cast<rlim_t>(before.size() + 100)};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    const absl::Status st = SaveProfile(big, path);
    const bool names_step = st.message().find("write failed") != std::string::npos;
    ::_exit(!st.ok() && names_step ? 0 : 1);
  });
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "SaveProfile should fail with 'write failed'";
  EXPECT_EQ(Slurp(path), before);
  auto loaded = LoadProfile(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->device_name, "old");
  EXPECT_EQ(RegularFiles(dir / "h100"), 1);  // the temp file was removed
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::costmodel
