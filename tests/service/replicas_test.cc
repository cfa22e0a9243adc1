// The planner service at scale (issue 31), on loopback with real servers: what a load balancer
// sees through the health service at start-up, drain and reload; the Prometheus endpoint scraped
// over a real socket and parsed; the shared profile store's reload (changed, added, removed,
// corrupt files); the multi-replica channel target; and short, bounded versions of the must-show
// runs (scripts/failover.sh has the 60-s ones): a replica SIGKILLed and restarted under load, a
// profile replaced under load (then a corrupt replacement), SIGTERM under load. Every one asserts
// counts and correctness (zero failed calls, every answer equal to in-process planning), never
// timings. Over 500 lines because each of those behaviours needs its own servers and load.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "absl/strings/str_split.h"
#include "client/client.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile_json.h"
#include "service/channel.h"
#include "service/tools/fleet_load.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"

namespace specplan::service {
namespace {

using namespace specplan::service::testing;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Helpers

// GET `path` from 127.0.0.1:port over a plain socket; returns the whole HTTP response.
std::string HttpGet(int port, const std::string& path, const std::string& method = "GET") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// A parsed text exposition: sample "name{labels}" -> value, plus the families' TYPE.
struct Exposition {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  std::vector<std::string> errors;
};

Exposition ParseExposition(const std::string& body) {
  Exposition e;
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*)?\})? ([-+0-9.eE]+|\+Inf|NaN)$)");
  std::set<std::string> helped;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (line.empty()) continue;
    const std::string l(line);
    if (l.rfind("# HELP ", 0) == 0) {
      helped.insert(l.substr(7, l.find(' ', 7) - 7));
      continue;
    }
    if (l.rfind("# TYPE ", 0) == 0) {
      const std::vector<std::string> parts = absl::StrSplit(l.substr(7), ' ');
      if (parts.size() != 2 || helped.count(parts[0]) == 0) e.errors.push_back("TYPE: " + l);
      e.types[parts[0]] = parts.size() == 2 ? parts[1] : "";
      continue;
    }
    std::smatch m;
    if (!std::regex_match(l, m, kSample)) {
      e.errors.push_back("bad line: " + l);
      continue;
    }
    // The family must have been declared before its samples.
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (e.types.count(family) == 0 && family.size() > s.size() &&
          family.compare(family.size() - s.size(), s.size(), s) == 0) {
        family = family.substr(0, family.size() - s.size());
      }
    }
    if (e.types.count(family) == 0) e.errors.push_back("no TYPE before: " + l);
    e.samples[std::string(m[1]) + std::string(m[2])] = std::stod(m[7]);
  }
  return e;
}

v1::PlanTreeRequest ProfilePlanRequest(uint64_t seed) {
  v1::PlanTreeRequest req;
  *req.mutable_marginals() = RandomMarginals(8, 4, seed);
  req.mutable_cost()->mutable_profile()->set_gpu("a100");
  req.mutable_cost()->mutable_profile()->set_model("qwen3-4b");
  req.mutable_cost()->set_context_tokens(512);
  req.set_n_max(64);
  return req;
}

// A bundled profile (a100 x qwen3-4b priced for sglang; reading one takes milliseconds, fitting a
// synthetic one seconds); `v2` makes the roofline its default model, so the two versions plan
// differently.
constexpr char kId[] = "a100-80g/qwen3-4b-bf16@sglang";
costmodel::Profile FastProfile(bool v2, const std::string& model = "qwen3-4b") {
  auto p = costmodel::LoadProfile(::specplan::test_paths::SourceDir() + "/calib/a100-80g/" + model +
                                  "-bf16@sglang.json");
  EXPECT_TRUE(p.ok()) << p.status();
  if (v2) {
    p->default_model = "roofline";
    p->created_utc = "2026-11-25T00:00:00Z";
  }
  return *p;
}

std::string WriteProfile(const fs::path& dir, const costmodel::Profile& p) {
  const std::string path = costmodel::BundledProfilePath(dir.string(), p.gpu, p.model, p.dtype,
                                                         p.model_spec.tp, p.engine);
  EXPECT_TRUE(costmodel::SaveProfile(p, path).ok());
  return path;
}

// Replaces `path` atomically (temp file + rename), as an operator (or PutProfile) would.
void ReplaceFile(const std::string& path, const std::string& text) {
  { std::ofstream(path + ".tmp-test") << text; }
  fs::rename(path + ".tmp-test", path);
}

// A specplan-server child process with a known pid (SIGKILL, SIGTERM, restart on its port).
class Replica {
 public:
  Replica(std::vector<std::string> args) : args_(std::move(args)) { Start(); }
  ~Replica() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Start() {
    int out[2];
    ASSERT_EQ(pipe(out), 0);
    std::vector<std::string> args = args_;
    args.insert(args.begin(), ServerBinary());
    if (port_ > 0) {  // a restart keeps the port
      for (size_t i = 0; i + 1 < args.size(); ++i) {
        if (args[i] == "--listen") args[i + 1] = "127.0.0.1:" + std::to_string(port_);
      }
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    FILE* f = fdopen(out[0], "r");
    char line[1024];
    if (f != nullptr && fgets(line, sizeof(line), f) != nullptr) {
      const std::string l = line;
      const size_t colon = l.find(':', l.find("listening on"));
      if (colon != std::string::npos) port_ = std::atoi(l.c_str() + colon + 1);
      first_line_ = l;
    }
    if (f != nullptr) fclose(f);
  }
  void Signal(int sig) { kill(pid_, sig); }
  // Exit status (128 + signal when killed); -1 after 20 s.
  int Wait() {
    for (int i = 0; i < 2000; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  int port() const { return port_; }
  const std::string& first_line() const { return first_line_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  static std::string ServerBinary() {
    return ::specplan::test_paths::BinaryDir() + "/service/specplan-server";
  }

 private:
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string first_line_;
};

// Fleet inputs over the stored a100/qwen3-4b profile, with expected answers from `dirs`.
std::vector<FleetInput> FleetInputs(const std::vector<std::string>& dirs) {
  std::vector<FleetInput> inputs = MakeFleetInputs(ProfilePlanRequest(3));
  EXPECT_EQ(inputs.size(), 5u);
  const absl::Status st = ComputeExpected(dirs, &inputs);
  EXPECT_TRUE(st.ok()) << st;
  return inputs;
}

void ExpectCleanRun(const FleetReport& r) {
  EXPECT_GT(r.requests, 0);
  EXPECT_EQ(r.failed, 0) << r.first_failure;
  EXPECT_EQ(r.mismatched, 0) << r.first_mismatch;
  EXPECT_EQ(r.checked, r.requests);  // every answer compared with in-process planning
  EXPECT_GT(r.plan_tree, 0);
  EXPECT_GT(r.plan_batch, 0);
}

// ---------------------------------------------------------------------------------------------
// Health: start-up, drain

TEST(Health, NotServingWhileProfilesLoadThenServing) {
  const fs::path dir = TempDir("health_start");
  WriteProfile(dir, FastProfile(false));
  ServerConfig config;
  config.profiles_dir = dir.string();
  int seen_root = -1, seen_planner = -1;
  grpc::StatusCode plan_code = grpc::StatusCode::OK;
  std::string plan_message;
  bool ping_ok = false;
  config.metrics_port = 0;
  config.on_loading = [&](int port) {
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                       grpc::InsecureChannelCredentials());
    grpc::Status st;
    seen_root = HealthCheck(channel, "", &st);
    seen_planner = HealthCheck(channel, "specplan.v1.Planner", &st);
    auto stub = v1::Planner::NewStub(channel);
    grpc::ClientContext ctx;
    v1::PlanTreeResponse resp;
    const grpc::Status ps = stub->PlanTree(&ctx, ProfilePlanRequest(1), &resp);
    plan_code = ps.error_code();
    plan_message = ps.error_message();
    grpc::ClientContext pctx;
    v1::PingResponse pong;
    ping_ok = stub->Ping(&pctx, v1::PingRequest(), &pong).ok();
  };
  config.listen = "127.0.0.1:0";
  config.service.log_requests = false;
  auto running = StartServer(config);
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(seen_root, 2) << "health \"\" during the profile load (2 = NOT_SERVING)";
  EXPECT_EQ(seen_planner, 2) << "health specplan.v1.Planner during the profile load";
  EXPECT_EQ(plan_code, grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(plan_message, HasSubstr("loading"));
  EXPECT_TRUE(ping_ok);

  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string((*running)->port),
                                     grpc::InsecureChannelCredentials());
  grpc::Status st;
  EXPECT_EQ(HealthCheck(channel, "", &st), 1);
  EXPECT_EQ(HealthCheck(channel, "specplan.v1.Planner", &st), 1);
  const std::string http = HttpGet((*running)->metrics_port, "/metrics");
  const Exposition e = ParseExposition(http.substr(http.find("\r\n\r\n") + 4));
  EXPECT_EQ(e.samples.at("specplan_ready"), 1);
  // The refused call during loading was counted as UNAVAILABLE.
  EXPECT_EQ(e.samples.at("specplan_request_errors_total{method=\"PlanTree\",code=\"UNAVAILABLE\"}"),
            1);
}

TEST(Health, NotServingDuringDrainWhileInFlightCallsFinish) {
  const fs::path dir = TempDir("health_drain");
  WriteProfile(dir, FastProfile(false));
  auto server = StartServerOn(dir);
  ASSERT_NE(server, nullptr);
  grpc::Status st;
  ASSERT_EQ(HealthCheck(server->channel, "specplan.v1.Planner", &st), 1);

  // A PlanSession stream is a call in flight until the client closes it.
  grpc::ClientContext session_ctx;
  auto stream = server->stub->PlanSession(&session_ctx);
  for (int i = 0; i < 1000 && server->running->service->in_flight() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(server->running->service->in_flight(), 1);
  std::atomic<bool> stopped{false};
  std::thread drain([&] {
    server->running->Shutdown(30.0);
    stopped = true;
  });
  // Health turns NOT_SERVING at once; the server keeps answering the health RPC while it waits.
  int health = 1;
  for (int i = 0; i < 500 && health == 1; ++i) {
    health = HealthCheck(server->channel, "specplan.v1.Planner", &st);
    if (health == 1) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(health, 2);
  EXPECT_EQ(HealthCheck(server->channel, "", &st), 2);
  // New calls are refused UNAVAILABLE (a client's retry policy sends them to another replica).
  {
    grpc::ClientContext ctx;
    v1::PlanTreeResponse resp;
    const grpc::Status ps = server->stub->PlanTree(&ctx, ProfilePlanRequest(1), &resp);
    EXPECT_EQ(ps.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(ps.error_message(), HasSubstr("draining"));
  }
  EXPECT_FALSE(stopped.load());  // the stream in flight holds the drain open
  // The call in flight completes normally.
  stream->WritesDone();
  const grpc::Status done = stream->Finish();
  EXPECT_TRUE(done.ok()) << done.error_message();
  drain.join();
  EXPECT_TRUE(stopped.load());
}

// ---------------------------------------------------------------------------------------------
// Metrics

TEST(Metrics, ScrapedExpositionParsesAndCounts) {
  const fs::path dir = TempDir("metrics");
  WriteProfile(dir, FastProfile(false));
  ServerConfig config;
  config.profiles_dir = dir.string();
  config.metrics_port = 0;
  auto server = TestServer::Start(config);
  ASSERT_NE(server, nullptr);
  ASSERT_GT(server->running->metrics_port, 0);

  int64_t nodes = 0;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    v1::PlanTreeResponse resp;
    ASSERT_TRUE(server->stub->PlanTree(&ctx, ProfilePlanRequest(i + 1), &resp).ok());
    nodes += resp.plan().n();
  }
  {
    grpc::ClientContext ctx;
    v1::PlanTreeRequest bad = ProfilePlanRequest(1);
    bad.mutable_marginals()->set_probs(0, 2.0f);
    v1::PlanTreeResponse resp;
    EXPECT_EQ(server->stub->PlanTree(&ctx, bad, &resp).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT);
  }
  const std::string http = HttpGet(server->running->metrics_port, "/metrics");
  ASSERT_THAT(http, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(http, HasSubstr("Content-Type: text/plain; version=0.0.4"));
  const std::string body = http.substr(http.find("\r\n\r\n") + 4);
  const Exposition e = ParseExposition(body);
  EXPECT_THAT(e.errors, ::testing::IsEmpty());
  EXPECT_EQ(e.types.at("specplan_requests_total"), "counter");
  EXPECT_EQ(e.types.at("specplan_request_duration_seconds"), "histogram");
  EXPECT_EQ(e.types.at("specplan_profiles_loaded"), "gauge");
  EXPECT_EQ(e.samples.at("specplan_requests_total{method=\"PlanTree\",code=\"OK\"}"), 3);
  EXPECT_EQ(e.samples.at("specplan_requests_total{method=\"PlanTree\",code=\"INVALID_ARGUMENT\"}"),
            1);
  EXPECT_EQ(
      e.samples.at("specplan_request_errors_total{method=\"PlanTree\",code=\"INVALID_ARGUMENT\"}"),
      1);
  EXPECT_EQ(e.samples.at("specplan_nodes_planned_total{method=\"PlanTree\"}"), nodes);
  EXPECT_EQ(e.samples.at("specplan_profiles_loaded"), 1);
  EXPECT_EQ(e.samples.count(std::string("specplan_profile_age_seconds{profile=\"") + kId + "\"}"),
            1u);
  EXPECT_EQ(e.samples.at("specplan_in_flight_sessions"), 0);
  EXPECT_EQ(e.samples.at("specplan_ready"), 1);
  // The histogram: cumulative buckets in increasing le, +Inf = _count = 4 calls.
  double previous = 0, previous_le = 0;
  int buckets = 0;
  for (double le : ServiceMetrics::kBucketsSeconds) {
    char key[160];
    std::snprintf(key, sizeof(key),
                  "specplan_request_duration_seconds_bucket{method=\"PlanTree\",le=\"%.17g\"}", le);
    ASSERT_EQ(e.samples.count(key), 1u) << key;
    EXPECT_GE(e.samples.at(key), previous);
    EXPECT_GT(le, previous_le);
    previous = e.samples.at(key);
    previous_le = le;
    ++buckets;
  }
  EXPECT_EQ(buckets, 16);
  EXPECT_EQ(
      e.samples.at("specplan_request_duration_seconds_bucket{method=\"PlanTree\",le=\"+Inf\"}"), 4);
  EXPECT_EQ(e.samples.at("specplan_request_duration_seconds_count{method=\"PlanTree\"}"), 4);
  EXPECT_GT(e.samples.at("specplan_request_duration_seconds_sum{method=\"PlanTree\"}"), 0);

  EXPECT_THAT(HttpGet(server->running->metrics_port, "/nope"), HasSubstr("404"));
  EXPECT_THAT(HttpGet(server->running->metrics_port, "/metrics", "POST"), HasSubstr("405"));
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

TEST(Metrics, BadPortIsRefusedNamingTheFlag) {
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.metrics_port = 70000;
  auto running = StartServer(config);
  ASSERT_FALSE(running.ok());
  EXPECT_THAT(running.status().message(), HasSubstr("--metrics-port = 70000"));
  config.metrics_port = -1;
  config.reload_interval_s = -2;
  running = StartServer(config);
  ASSERT_FALSE(running.ok());
  EXPECT_THAT(running.status().message(), HasSubstr("--reload-interval-s = -2"));
}

// The binary: --metrics-port serves the exposition, SIGHUP reloads a changed profile (polling off),
// health stays SERVING, and SIGTERM still exits 0.
TEST(Metrics, ServerBinaryServesMetricsAndReloadsOnSighup) {
  const fs::path dir = TempDir("bin_sighup");
  const std::string file = WriteProfile(dir, FastProfile(false));
  Replica server({"--listen", "127.0.0.1:0", "--calib-dir", dir.string(), "--metrics-port", "0",
                  "--reload-interval-s", "0", "--quiet"});
  ASSERT_GT(server.port(), 0) << server.first_line();
  EXPECT_THAT(server.first_line(), HasSubstr("reload on SIGHUP only"));
  const size_t at = server.first_line().find("metrics on http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << server.first_line();
  const int metrics_port = std::atoi(server.first_line().c_str() + at + 28);
  std::string http = HttpGet(metrics_port, "/metrics");
  ASSERT_THAT(http, HasSubstr("200 OK"));
  Exposition e = ParseExposition(http.substr(http.find("\r\n\r\n") + 4));
  EXPECT_THAT(e.errors, ::testing::IsEmpty());
  EXPECT_EQ(e.samples.at("specplan_profiles_loaded"), 1);
  EXPECT_EQ(e.samples.at("specplan_profile_reloads_total"), 0);

  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Planner::NewStub(channel);
  auto default_model = [&] {
    grpc::ClientContext ctx;
    v1::GetProfileRequest req;
    req.mutable_profile()->set_gpu("a100");
    req.mutable_profile()->set_model("qwen3-4b");
    v1::GetProfileResponse resp;
    const grpc::Status st = stub->GetProfile(&ctx, req, &resp);
    return st.ok() ? resp.info().default_model() : "error: " + st.error_message();
  };
  EXPECT_EQ(default_model(), FastProfile(false).default_model);
  ReplaceFile(file, costmodel::ProfileToJson(FastProfile(true)).dump(2));
  server.Signal(SIGHUP);
  std::string now;
  for (int i = 0; i < 1000 && (now = default_model()) != "roofline"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(now, "roofline");
  grpc::Status st;
  EXPECT_EQ(HealthCheck(channel, "specplan.v1.Planner", &st), 1);
  http = HttpGet(metrics_port, "/metrics");
  e = ParseExposition(http.substr(http.find("\r\n\r\n") + 4));
  EXPECT_EQ(e.samples.at("specplan_profile_reloads_total"), 1);
  server.Signal(SIGTERM);
  EXPECT_EQ(server.Wait(), 0);
}

// ---------------------------------------------------------------------------------------------
// Shared profile store: Reload

TEST(ProfileReload, PicksUpChangedAddedRemovedAndRefusesCorruptFiles) {
  const fs::path dir = TempDir("reload_store");
  const std::string a = WriteProfile(dir, FastProfile(false));
  ProfileStore store(dir.string(), 0.1);
  ASSERT_THAT(store.LoadAll(), ::testing::IsEmpty());
  const std::string id = kId;
  auto v1 = store.Find(id);
  ASSERT_NE(v1, nullptr);
  // Feedback reported on v1 survives the reload of a new version.
  std::vector<AcceptanceReport> reports = {{3, 8, 0, 100, 0}};
  AcceptanceSnapshot acc;
  CorrectionSnapshot corr;
  ASSERT_TRUE(store.Report(id, reports, &acc, &corr).ok());

  // Nothing changed: nothing is read, the generation stays.
  const uint64_t g0 = store.generation();
  ProfileStore::ReloadResult r = store.Reload();
  EXPECT_FALSE(r.changed());
  EXPECT_THAT(r.errors, ::testing::IsEmpty());
  EXPECT_EQ(store.generation(), g0);

  // A changed file (written by rename) is loaded; the old snapshot stays intact for its holders.
  costmodel::Profile p3 = FastProfile(true);
  ReplaceFile(a, costmodel::ProfileToJson(p3).dump(2));
  r = store.Reload();
  EXPECT_THAT(r.loaded, ::testing::ElementsAre(id));
  auto v2 = store.Find(id);
  ASSERT_NE(v2, nullptr);
  EXPECT_NE(v2.get(), v1.get());
  EXPECT_EQ(costmodel::ProfileToJson(v2->profile), costmodel::ProfileToJson(p3));
  EXPECT_NE(costmodel::ProfileToJson(v1->profile), costmodel::ProfileToJson(p3));
  EXPECT_GT(store.generation(), g0);
  ProfileStore::ReadFeedback(*v2, &acc, &corr);
  EXPECT_EQ(acc.steps, 1);

  // A corrupt replacement is refused naming the file; the version loaded before keeps serving.
  ReplaceFile(a, "{\"format\": \"specplan.prof");
  r = store.Reload();
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_THAT(r.errors[0], HasSubstr(a));
  EXPECT_THAT(r.errors[0], HasSubstr("keeps serving"));
  EXPECT_FALSE(r.changed());
  EXPECT_EQ(store.Find(id).get(), v2.get());
  EXPECT_EQ(store.reload_errors(), 1);
  // Refused once per change, not on every poll.
  EXPECT_THAT(store.Reload().errors, ::testing::IsEmpty());

  // An added file is loaded; a removed one stops being served.
  const std::string b = WriteProfile(dir, FastProfile(false, "qwen3-8b"));
  r = store.Reload();
  EXPECT_THAT(r.loaded, ::testing::ElementsAre("a100-80g/qwen3-8b-bf16@sglang"));
  fs::remove(b);
  r = store.Reload();
  EXPECT_THAT(r.removed, ::testing::ElementsAre("a100-80g/qwen3-8b-bf16@sglang"));
  EXPECT_EQ(store.Find("a100-80g/qwen3-8b-bf16@sglang"), nullptr);
  EXPECT_EQ(store.reloads(), 6);

  // PutProfile's own write is not read back as a change.
  bool replaced = false;
  costmodel::Profile put = FastProfile(false);
  put.created_utc = "2026-11-25T01:00:00Z";
  ASSERT_TRUE(store.Put(put, &replaced).ok());
  EXPECT_FALSE(store.Reload().changed());
}

// ---------------------------------------------------------------------------------------------
// Channel targets

TEST(Channel, TargetsFromServerLists) {
  EXPECT_EQ(*PlannerTarget("127.0.0.1:50051", "--server"), "127.0.0.1:50051");
  EXPECT_EQ(*PlannerTarget("127.0.0.1:1,127.0.0.2:2", "--server"), "ipv4:127.0.0.1:1,127.0.0.2:2");
  EXPECT_EQ(*PlannerTarget("localhost:1, localhost:2", "--server"), "ipv4:127.0.0.1:1,127.0.0.1:2");
  EXPECT_EQ(*PlannerTarget("[::1]:1,[::1]:2", "--server"), "ipv6:[::1]:1,[::1]:2");
  EXPECT_EQ(*PlannerTarget("dns:///planner.ns.svc:50051", "--server"),
            "dns:///planner.ns.svc:50051");
  EXPECT_EQ(*PlannerTarget("ipv4:127.0.0.1:1,127.0.0.1:2", "--server"),
            "ipv4:127.0.0.1:1,127.0.0.1:2");
  auto bad = PlannerTarget("a.example:1,b.example:2", "--server");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--server = 'a.example:1,b.example:2'"));
  EXPECT_THAT(bad.status().message(), HasSubstr("dns:///"));
  EXPECT_THAT(PlannerTarget("127.0.0.1:1,", "--targets").status().message(),
              HasSubstr("--targets = '127.0.0.1:1,': an empty address"));
  EXPECT_THAT(PlannerTarget("127.0.0.1:1,127.0.0.1", "--server").status().message(),
              HasSubstr("needs a port"));
  EXPECT_THAT(PlannerTarget("127.0.0.1:1,[::1]:2", "--server").status().message(),
              HasSubstr("mixes IPv4 and IPv6"));
  // The service config: round robin, health-checked, retries for idempotent methods only.
  const auto config = nlohmann::json::parse(PlannerServiceConfigJson());
  EXPECT_EQ(config["loadBalancingConfig"][0].count("round_robin"), 1u);
  EXPECT_EQ(config["healthCheckConfig"]["serviceName"], "specplan.v1.Planner");
  std::set<std::string> retried;
  for (const auto& n : config["methodConfig"][0]["name"]) retried.insert(n["method"]);
  EXPECT_TRUE(retried.count("PlanTree") && retried.count("PlanBatch"));
  EXPECT_FALSE(retried.count("PlanSession") || retried.count("ReportAcceptance") ||
               retried.count("PutProfile"));
  EXPECT_EQ(config["methodConfig"][0]["retryPolicy"]["retryableStatusCodes"][0], "UNAVAILABLE");
}

// `n` in-process servers over `dir`, and their addresses as a comma-separated list.
void StartReplicas(const fs::path& dir, int n, std::vector<std::unique_ptr<TestServer>>* servers,
                   std::string* list) {
  for (int i = 0; i < n; ++i) {
    servers->push_back(StartServerOn(dir));
    ASSERT_NE(servers->back(), nullptr);
    *list +=
        (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(servers->back()->running->port);
  }
}

TEST(Channel, ClientSpreadsCallsOverReplicasAndNamesABadList) {
  const fs::path dir = TempDir("client_list");
  WriteProfile(dir, FastProfile(false));
  std::vector<std::unique_ptr<TestServer>> servers;
  std::string list;
  ASSERT_NO_FATAL_FAILURE(StartReplicas(dir, 2, &servers, &list));
  client::PlannerClient c(list);
  ASSERT_TRUE(c.WaitReady(10).ok());
  auto profiles = c.Profiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(c.Profiles().ok());
  for (const auto& s : servers) {
    int64_t calls = 0;
    for (const MethodSummary& m : s->running->service->stats().Summaries()) calls += m.requests;
    EXPECT_GT(calls, 0) << "round robin reached every replica";
  }
  client::PlannerClient bad("a.example:1,b.example:2");
  const absl::Status st = bad.WaitReady(1);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("--server = 'a.example:1,b.example:2'"));
}

// The Python client and the CLI take the same lists: the Python client's service config is the
// C++ one byte for byte, its calls reach both replicas, a host-name list is refused naming
// --server; `specplan plan --server A,B` prints what it prints in-process.
TEST(Channel, PythonClientAndCliTakeReplicaLists) {
  const fs::path dir = TempDir("py_cli_list");
  // The CLI below plans h100 x qwen3-8b: the servers hold the same profiles as the bundled calib/.
  fs::create_directories(dir / "h100-sxm");
  for (const auto& f :
       fs::directory_iterator(::specplan::test_paths::SourceDir() + "/calib/h100-sxm")) {
    const std::string name = f.path().filename().string();
    if (name.rfind("qwen3-8b-bf16", 0) == 0 && f.path().extension() == ".json") {
      fs::copy_file(f.path(), dir / "h100-sxm" / name);
    }
  }
  std::vector<std::unique_ptr<TestServer>> servers;
  std::string list;
  ASSERT_NO_FATAL_FAILURE(StartReplicas(dir, 2, &servers, &list));
  const std::string client = ::specplan::test_paths::SourceDir() + "/examples/python_client.py";
  const std::string stubs = ::specplan::test_paths::BinaryDir() + "/python";
  if (std::system("/usr/bin/python3 -c 'import grpc, grpc_tools' >/dev/null 2>&1") == 0 &&
      fs::exists(stubs + "/specplan/v1/planner_pb2_grpc.py")) {
    const std::string config_out = (dir / "config.txt").string();
    const std::string print_config =
        "/usr/bin/python3 -c \"import importlib.util as u; s = u.spec_from_file_location('c', '" +
        client +
        "'); m = u.module_from_spec(s); s.loader.exec_module(m); "
        "print(m.SERVICE_CONFIG, end='')\" > " +
        config_out;
    ASSERT_EQ(std::system(print_config.c_str()), 0);
    EXPECT_EQ(ReadAll(config_out), PlannerServiceConfigJson());
    const std::string out = (dir / "py.txt").string();
    const std::string cmd = "/usr/bin/python3 " + client + " --server " + list +
                            " --steps 40 --batch 2 --stubs-dir " + stubs + " > " + out + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << ReadAll(out);
    for (const auto& s : servers) {
      int64_t calls = 0;
      for (const MethodSummary& m : s->running->service->stats().Summaries()) calls += m.requests;
      EXPECT_GT(calls, 0) << "the Python client's round robin reached every replica";
    }
    const std::string bad = "/usr/bin/python3 " + client +
                            " --server a.example:1,b.example:2 --stubs-dir " + stubs + " > " + out +
                            " 2>&1";
    const int rc = std::system(bad.c_str());
    EXPECT_EQ(WEXITSTATUS(rc), 2);
    EXPECT_THAT(ReadAll(out), HasSubstr("--server = 'a.example:1,b.example:2'"));
  }
  const std::string cli = ::specplan::test_paths::BinaryDir() + "/cli/specplan";
  if (access(cli.c_str(), X_OK) == 0) {
    const std::string args =
        " plan --marginals " + ::specplan::test_paths::SourceDir() +
        "/examples/marginals.json --gpu h100 --model qwen3-8b --c 1024 --n-max 64";
    const std::string local = (dir / "local.txt").string(), remote = (dir / "remote.txt").string();
    ASSERT_EQ(std::system((cli + args + " > " + local + " 2>&1").c_str()), 0) << ReadAll(local);
    ASSERT_EQ(std::system((cli + args + " --server " + list + " > " + remote + " 2>&1").c_str()), 0)
        << ReadAll(remote);
    EXPECT_EQ(ReadAll(remote), ReadAll(local));
  }
}

// ---------------------------------------------------------------------------------------------
// Short must-show runs (bounded; assert counts and correctness)

std::vector<std::string> ReplicaArgs(const fs::path& dir, int i) {
  return {"--listen",
          "127.0.0.1:0",
          "--calib-dir",
          dir.string(),
          "--quiet",
          "--replica-id",
          "replica-" + std::to_string(i),
          "--threads",
          "4"};
}

// Three replicas over `dir` (with a fast profile written to it) and a fleet load of 2 clients at
// 300 calls/s (far below the 3 replicas' maximum on a 2-core CI machine) over them for `seconds`.
struct Fleet {
  std::vector<std::unique_ptr<Replica>> replicas;
  FleetConfig config;
};
void StartFleet(const fs::path& dir, double seconds, Fleet* fleet) {
  WriteProfile(dir, FastProfile(false));
  std::string targets;
  for (int i = 0; i < 3; ++i) {
    fleet->replicas.push_back(std::make_unique<Replica>(ReplicaArgs(dir, i)));
    ASSERT_GT(fleet->replicas.back()->port(), 0);
    targets += (i ? "," : "") + fleet->replicas.back()->address();
  }
  fleet->config.target = *PlannerTarget(targets, "--targets");
  fleet->config.clients = 2;
  fleet->config.seconds = seconds;
  fleet->config.qps = 300;
  fleet->config.inputs = FleetInputs({dir.string()});
}

TEST(FleetMustShow, ReplicaKilledAndRestartedUnderLoadFailsNoCall) {
  ASSERT_EQ(access(Replica::ServerBinary().c_str(), X_OK), 0);
  const fs::path dir = TempDir("fleet_kill");
  Fleet fleet;
  ASSERT_NO_FATAL_FAILURE(StartFleet(dir, 4, &fleet));
  std::vector<std::unique_ptr<Replica>>& replicas = fleet.replicas;
  FleetConfig& config = fleet.config;
  int kill_status = 0;
  config.events = {
      {1.0, "SIGKILL replica-1",
       [&] {
         replicas[1]->Signal(SIGKILL);
         kill_status = replicas[1]->Wait();
       }},
      {2.0, "restart replica-1", [&] { replicas[1]->Start(); }},
  };
  auto rep = RunFleet(config);
  ASSERT_TRUE(rep.ok()) << rep.status();
  SCOPED_TRACE(FormatFleetReport(*rep));
  ExpectCleanRun(*rep);
  EXPECT_EQ(kill_status, 128 + SIGKILL);
  ASSERT_EQ(rep->segments.size(), 3u);
  // Before the kill all three answered; while it was down the other two answered every call.
  EXPECT_EQ(rep->segments[0].per_replica.size(), 3u);
  EXPECT_GE(rep->segments[1].per_replica.size(), 2u);
  EXPECT_EQ(rep->segments[1].failed + rep->segments[2].failed, 0);
}

TEST(FleetMustShow, ProfileReplacedUnderLoadSwitchesAndACorruptOneIsRefused) {
  const fs::path root = TempDir("fleet_reload");
  const fs::path shared = root / "shared", old_dir = root / "old", new_dir = root / "new";
  const costmodel::Profile p_old = FastProfile(false), p_new = FastProfile(true);
  const std::string shared_file = WriteProfile(shared, p_old);
  WriteProfile(old_dir, p_old);
  WriteProfile(new_dir, p_new);
  std::vector<std::unique_ptr<TestServer>> servers;
  std::string targets;
  for (int i = 0; i < 2; ++i) {
    ServerConfig config;
    config.profiles_dir = shared.string();
    config.reload_interval_s = 0.05;
    config.service.replica_id = "replica-" + std::to_string(i);
    servers.push_back(TestServer::Start(config));
    ASSERT_NE(servers.back(), nullptr);
    targets +=
        (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(servers.back()->running->port);
  }
  FleetConfig config;
  config.target = *PlannerTarget(targets, "--targets");
  config.clients = 2;
  config.seconds = 3;
  config.qps = 300;
  config.inputs = FleetInputs({old_dir.string(), new_dir.string()});
  for (const FleetInput& in : config.inputs) {
    ASSERT_EQ(in.expected.size(), 2u);
    EXPECT_NE(in.expected[0], in.expected[1]) << "the two versions must plan differently";
  }
  const std::string id = kId;
  const std::string new_json = costmodel::ProfileToJson(p_new).dump();
  // Each event waits (bounded) until every replica has polled the change, so the segment after
  // it is fully on the new state; the test asserts on answers, not on how long that took.
  auto wait_all = [&](const std::function<bool(const RunningServer&)>& done) {
    for (int i = 0; i < 2000; ++i) {
      bool all = true;
      for (const auto& s : servers) all = all && done(*s->running);
      if (all) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  };
  bool switched = false, refused = false;
  config.events = {
      {1.0, "replace profile",
       [&] {
         ReplaceFile(shared_file, costmodel::ProfileToJson(p_new).dump(2));
         switched = wait_all([&](const RunningServer& r) {
           auto e = r.store->Find(id);
           return e != nullptr && costmodel::ProfileToJson(e->profile).dump() == new_json;
         });
       }},
      {2.0, "corrupt replacement",
       [&] {
         ReplaceFile(shared_file, "{\"format\": \"specplan.prof");
         refused = wait_all([&](const RunningServer& r) { return r.store->reload_errors() >= 1; });
       }},
  };
  auto rep = RunFleet(config);
  ASSERT_TRUE(rep.ok()) << rep.status();
  SCOPED_TRACE(FormatFleetReport(*rep));
  ExpectCleanRun(*rep);  // never a mix: every answer equals the old or the new version's
  EXPECT_TRUE(switched);
  EXPECT_TRUE(refused);
  ASSERT_EQ(rep->segments.size(), 3u);
  EXPECT_GT(rep->segments[0].per_version[0], 0);
  EXPECT_EQ(rep->segments[0].per_version[1], 0);
  // After the corrupt file: still the new version, from every replica, no errors.
  EXPECT_EQ(rep->segments[2].per_version[0], 0);
  EXPECT_GT(rep->segments[2].per_version[1], 0);
  EXPECT_EQ(rep->segments[2].per_replica.size(), 2u);
  for (const auto& s : servers) {
    auto e = s->running->store->Find(id);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(costmodel::ProfileToJson(e->profile).dump(), new_json);
    grpc::Status st;
    EXPECT_EQ(HealthCheck(s->channel, "specplan.v1.Planner", &st), 1) << "SERVING through reloads";
  }
}

TEST(FleetMustShow, SigtermUnderLoadDrainsToTheOtherReplicasAndExitsZero) {
  const fs::path dir = TempDir("fleet_drain");
  Fleet fleet;
  ASSERT_NO_FATAL_FAILURE(StartFleet(dir, 3, &fleet));
  std::vector<std::unique_ptr<Replica>>& replicas = fleet.replicas;
  FleetConfig& config = fleet.config;
  int exit_status = -2;
  config.events = {{1.0, "SIGTERM replica-2", [&] {
                      replicas[2]->Signal(SIGTERM);
                      exit_status = replicas[2]->Wait();
                    }}};
  auto rep = RunFleet(config);
  ASSERT_TRUE(rep.ok()) << rep.status();
  SCOPED_TRACE(FormatFleetReport(*rep));
  ExpectCleanRun(*rep);
  EXPECT_EQ(exit_status, 0);
  ASSERT_EQ(rep->segments.size(), 2u);
  EXPECT_EQ(rep->segments[0].per_replica.size(), 3u);
  // After the drained replica exited, the others answered everything.
  EXPECT_GT(rep->segments[1].per_replica["replica-0"], 0);
  EXPECT_GT(rep->segments[1].per_replica["replica-1"], 0);
}

}  // namespace
}  // namespace specplan::service
