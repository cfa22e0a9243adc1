// Engine-grade profiles on the server (issue 28): one gpu x model x dtype held under several
// engines (calib/<gpu>/<model>-<dtype>[@<engine>].json), each served by ProfileRef.engine; a
// reference without an engine gets the server's --engine default when held, else the first held
// of sglang, vllm, trtllm, specplan. A real server on loopback (and the real binary for the flag).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "client/client.h"
#include "costmodel/latency/linear_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "costmodel/profile/profile_json.h"
#include "service/cost_resolver.h"
#include "service/profile_store.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"
#include "tests/server_process.h"

namespace specplan::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace specplan::service::testing;

constexpr char kBase[] = "a100-80g/qwen3-4b-bf16";

// A100 x qwen3-4b priced by a linear model `scale` times as slow as the roofline, for `engine`.
// Written by hand rather than fitted (a fit cross-validates every model, seconds per profile, and
// every test runs in its own process).
costmodel::Profile EngineProfile(const std::string& engine, double scale,
                                 const std::string& version = "") {
  costmodel::Profile p;
  p.gpu = "a100-80g";
  p.model = "qwen3-4b";
  p.gpu_spec = *costmodel::LookupGpu("a100");
  p.model_spec = *costmodel::LookupModel("qwen3-4b");
  p.device_name = "synthetic";
  p.timer = "external";
  p.created_utc = "2025-01-01T00:00:00Z";
  p.software["generator"] = "engine_rpc_test";
  p.default_model = "linear";
  p.linear = costmodel::LinearCoefficients{1.6 * scale, 0.7e-3 * scale};
  p.engine = engine;
  p.engine_version = version;
  return p;
}

// Saves `p` to its canonical file under `dir` and returns the path.
std::string SaveCanonical(const costmodel::Profile& p, const fs::path& dir) {
  const std::string path = costmodel::BundledProfilePath(dir.string(), p.gpu, p.model, p.dtype,
                                                         p.model_spec.tp, p.engine);
  EXPECT_TRUE(costmodel::SaveProfile(p, path).ok()) << path;
  return path;
}

v1::ProfileRef Ref(const std::string& engine) {
  v1::ProfileRef ref;
  ref.set_gpu("a100");  // an alias: the canonical name is tried too
  ref.set_model("qwen3-4b");
  ref.set_engine(engine);
  return ref;
}

// EstimateLatency at (s = 64, c = 512) through the profile `ref` names.
grpc::Status Estimate(v1::Planner::Stub& stub, const v1::ProfileRef& ref,
                      v1::EstimateLatencyResponse* resp) {
  v1::EstimateLatencyRequest req;
  *req.mutable_cost()->mutable_profile() = ref;
  req.add_s(64);
  req.add_c(512);
  grpc::ClientContext ctx;
  return stub.EstimateLatency(&ctx, req, resp);
}

double InProcessVerify(const std::string& path) {
  auto profile = costmodel::LoadProfile(path);
  EXPECT_TRUE(profile.ok()) << profile.status();
  auto model = costmodel::MakeLatencyModel(*profile);
  EXPECT_TRUE(model.ok()) << model.status();
  return (*model)->VerifySeconds(64, 512);
}

// Three engines of one gpu x model x dtype: specplan (the file without "@"), sglang and vllm.
class EngineRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("engines");
    paths_["specplan"] = SaveCanonical(EngineProfile("specplan", 1.0), dir_);
    paths_["sglang"] = SaveCanonical(EngineProfile("sglang", 2.0, "0.5.14"), dir_);
    paths_["vllm"] = SaveCanonical(EngineProfile("vllm", 3.0), dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<TestServer> Start(const std::string& default_engine = "") {
    ServerConfig config;
    config.profiles_dir = dir_.string();
    config.service.auth_token = "s3cret";
    config.service.default_engine = default_engine;
    return TestServer::Start(config);
  }

  fs::path dir_;
  std::map<std::string, std::string> paths_;
};

TEST_F(EngineRpcTest, StoreKeysEngineFilesByIdWithTheEngine) {
  EXPECT_EQ(paths_["sglang"], (dir_ / "a100-80g" / "qwen3-4b-bf16@sglang.json").string());
  EXPECT_EQ(paths_["specplan"], (dir_ / "a100-80g" / "qwen3-4b-bf16.json").string());
  // A second copy of the sglang profile under another name: the canonical file keeps the id.
  fs::create_directories(dir_ / "extra");
  fs::copy_file(paths_["sglang"], dir_ / "extra" / "copy.json");
  ProfileStore store(dir_.string(), 0.1);
  const std::vector<std::string> errors = store.LoadAll();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("duplicate profile id 'a100-80g/qwen3-4b-bf16@sglang'"));
  std::vector<std::string> ids;
  for (const auto& e : store.List()) ids.push_back(e->id);
  EXPECT_THAT(ids, ElementsAre("a100-80g/qwen3-4b-bf16", "a100-80g/qwen3-4b-bf16@sglang",
                               "a100-80g/qwen3-4b-bf16@vllm"));
  auto sglang = store.Find("a100-80g/qwen3-4b-bf16@sglang");
  ASSERT_NE(sglang, nullptr);
  EXPECT_EQ(sglang->path, paths_["sglang"]);
  EXPECT_EQ(sglang->profile.engine, "sglang");
  EXPECT_EQ(sglang->profile.engine_version, "0.5.14");

  // Put writes an engine's profile to its own file, beside the others.
  bool replaced = true;
  auto put = store.Put(EngineProfile("trtllm", 4.0), &replaced);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_FALSE(replaced);
  EXPECT_EQ((*put)->id, "a100-80g/qwen3-4b-bf16@trtllm");
  EXPECT_TRUE(fs::exists(dir_ / "a100-80g" / "qwen3-4b-bf16@trtllm.json"));
  EXPECT_EQ(store.List().size(), 4u);
  // Engine names become file names: only the canonical ones are taken.
  costmodel::Profile alias = EngineProfile("TRT-LLM", 4.0);
  auto refused = store.Put(alias, &replaced);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("engine = 'TRT-LLM'"));
  alias.engine = "../x";
  refused = store.Put(alias, &replaced);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("engine = '../x': unknown"));
}

TEST_F(EngineRpcTest, EachEngineIsServedByName) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  std::map<std::string, double> verify;
  for (const std::string engine : {"specplan", "sglang", "vllm"}) {
    v1::EstimateLatencyResponse resp;
    const grpc::Status st = Estimate(*server->stub, Ref(engine), &resp);
    ASSERT_TRUE(st.ok()) << engine << ": " << st.error_message();
    EXPECT_EQ(resp.profile_id(),
              costmodel::ProfileId("a100-80g", "qwen3-4b", costmodel::DType::kBFloat16, 1, engine));
    verify[engine] = resp.points(0).verify_s();
    EXPECT_DOUBLE_EQ(verify[engine], InProcessVerify(paths_[engine])) << engine;
  }
  EXPECT_GT(verify["sglang"], 1.5 * verify["specplan"]);
  EXPECT_GT(verify["vllm"], 1.2 * verify["sglang"]);
  // Names are case-insensitive, aliases included.
  v1::EstimateLatencyResponse resp;
  ASSERT_TRUE(Estimate(*server->stub, Ref("SGLang"), &resp).ok());
  EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@sglang");

  // PlanTree chooses through the same ProfileRef, and the cached sources stay apart per engine.
  for (const std::string engine : {"vllm", "specplan", "vllm"}) {
    v1::PlanTreeRequest req;
    *req.mutable_marginals() = RandomMarginals(8, 4, 3);
    *req.mutable_cost()->mutable_profile() = Ref(engine);
    req.mutable_cost()->set_context_tokens(512);
    req.set_n_max(64);
    v1::PlanTreeResponse plan;
    grpc::ClientContext ctx;
    const grpc::Status st = server->stub->PlanTree(&ctx, req, &plan);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(plan.profile_id(),
              costmodel::ProfileId("a100-80g", "qwen3-4b", costmodel::DType::kBFloat16, 1, engine));
  }
}

TEST_F(EngineRpcTest, WithoutAnEngineTheFirstHeldOfTheOrderServes) {
  // A fresh server over what the directory holds now answers a request naming no engine.
  const auto estimate = [this](v1::EstimateLatencyResponse* resp) {
    auto server = Start();
    ASSERT_NE(server, nullptr);
    ASSERT_TRUE(Estimate(*server->stub, Ref(""), resp).ok());
  };
  v1::EstimateLatencyResponse resp;
  // sglang, vllm, specplan held: sglang.
  ASSERT_NO_FATAL_FAILURE(estimate(&resp));
  EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@sglang");
  // vllm and specplan: vllm.
  fs::remove(paths_["sglang"]);
  ASSERT_NO_FATAL_FAILURE(estimate(&resp));
  EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@vllm");
  // specplan alone: specplan, under the id it always had.
  fs::remove(paths_["vllm"]);
  ASSERT_NO_FATAL_FAILURE(estimate(&resp));
  EXPECT_EQ(resp.profile_id(), kBase);
  EXPECT_DOUBLE_EQ(resp.points(0).verify_s(), InProcessVerify(paths_["specplan"]));
}

TEST_F(EngineRpcTest, ServerDefaultEngineServesRequestsThatNameNone) {
  {
    auto server = Start("specplan");
    ASSERT_NE(server, nullptr);
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(*server->stub, Ref(""), &resp).ok());
    EXPECT_EQ(resp.profile_id(), kBase);
    // A named engine still wins.
    ASSERT_TRUE(Estimate(*server->stub, Ref("vllm"), &resp).ok());
    EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@vllm");
    // GetProfile and ReportAcceptance take the same default.
    v1::GetProfileRequest get;
    *get.mutable_profile() = Ref("");
    v1::GetProfileResponse got;
    grpc::ClientContext ctx;
    ASSERT_TRUE(server->stub->GetProfile(&ctx, get, &got).ok());
    EXPECT_EQ(got.info().id(), kBase);
    EXPECT_EQ(got.info().engine(), "specplan");
  }
  {
    // Aliases are taken ("vLLM"); the default is the engine's id.
    auto server = Start("vLLM");
    ASSERT_NE(server, nullptr);
    EXPECT_EQ(server->running->service->costs().default_engine(), "vllm");
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(*server->stub, Ref(""), &resp).ok());
    EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@vllm");
  }
  {
    // A default the server does not hold for this gpu x model x dtype: the order decides.
    auto server = Start("trtllm");
    ASSERT_NE(server, nullptr);
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(*server->stub, Ref(""), &resp).ok());
    EXPECT_EQ(resp.profile_id(), "a100-80g/qwen3-4b-bf16@sglang");
  }
  // An unknown default is refused at start-up, naming the flag.
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.profiles_dir = dir_.string();
  config.service.log_requests = false;
  config.service.default_engine = "foo";
  auto bad = StartServer(config);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("--engine = 'foo': unknown engine (known: "
                                                "sglang, vllm, trtllm, specplan)"));
}

TEST_F(EngineRpcTest, ServerBinaryEngineFlag) {
  {
    test::ServerProcess server({"--listen", "127.0.0.1:0", "--profiles-dir", dir_.string(),
                                "--quiet", "--engine", "specplan"});
    if (server.binary_missing()) GTEST_SKIP() << "specplan-server not built";
    ASSERT_GT(server.port(), 0) << server.first_line();
    auto stub = v1::Planner::NewStub(
        grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials()));
    v1::EstimateLatencyResponse resp;
    ASSERT_TRUE(Estimate(*stub, Ref(""), &resp).ok());
    EXPECT_EQ(resp.profile_id(), kBase);
  }
  test::ServerProcess bad(
      {"--listen", "127.0.0.1:0", "--profiles-dir", dir_.string(), "--quiet", "--engine", "foo"});
  EXPECT_EQ(bad.port(), 0) << bad.first_line();
  EXPECT_NE(bad.WaitExit(), 0);
}

TEST_F(EngineRpcTest, MissingEngineIsNotFoundNamingProfileEngine) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  v1::EstimateLatencyResponse resp;
  grpc::Status st = Estimate(*server->stub, Ref("trtllm"), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(),
              HasSubstr("cost.profile.engine = 'trtllm': no profile "
                        "'a100-80g/qwen3-4b-bf16@trtllm' on this server (engines held for "
                        "a100-80g/qwen3-4b-bf16: sglang, vllm, specplan)"));
  // An unknown name is a malformed field.
  st = Estimate(*server->stub, Ref("foo"), &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("cost.profile.engine = 'foo': unknown engine (known: "
                                            "sglang, vllm, trtllm, specplan)"));
  // Nothing held for the gpu x model: the profile is what is missing.
  v1::ProfileRef other = Ref("sglang");
  other.set_model("qwen3-14b");
  st = Estimate(*server->stub, other, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(),
              HasSubstr("cost.profile: no profile 'a100/qwen3-14b-bf16@sglang' on this server"));
  // GetProfile and ReportAcceptance name their own field.
  v1::GetProfileRequest get;
  *get.mutable_profile() = Ref("trtllm");
  v1::GetProfileResponse got;
  grpc::ClientContext ctx;
  st = server->stub->GetProfile(&ctx, get, &got);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("profile.engine = 'trtllm'"));
  v1::ReportAcceptanceRequest report;
  *report.mutable_profile() = Ref("trtllm");
  report.add_steps()->set_draft_nodes(4);
  v1::ReportAcceptanceResponse reported;
  grpc::ClientContext ctx2;
  ctx2.AddMetadata("authorization", "Bearer s3cret");  // ReportAcceptance is a write
  st = server->stub->ReportAcceptance(&ctx2, report, &reported);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("profile.engine = 'trtllm'"));
}

TEST_F(EngineRpcTest, ListAndGetProfilesShowTheEngine) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  v1::ListProfilesResponse list;
  grpc::ClientContext ctx;
  ASSERT_TRUE(server->stub->ListProfiles(&ctx, v1::ListProfilesRequest(), &list).ok());
  ASSERT_EQ(list.profiles_size(), 3);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"a100-80g/qwen3-4b-bf16", "specplan"},
      {"a100-80g/qwen3-4b-bf16@sglang", "sglang"},
      {"a100-80g/qwen3-4b-bf16@vllm", "vllm"}};
  for (int i = 0; i < 3; ++i) {
    const v1::ProfileInfo& info = list.profiles(i);
    EXPECT_EQ(info.id(), want[i].first);
    EXPECT_EQ(info.engine(), want[i].second);
    EXPECT_EQ(info.engine_version(), info.engine() == "sglang" ? "0.5.14" : "");
    EXPECT_EQ(info.path(), paths_[want[i].second]);
    EXPECT_EQ(info.gpu(), "a100-80g");
    EXPECT_EQ(info.model(), "qwen3-4b");
  }
  // GetProfile by engine: that engine's info and JSON.
  v1::GetProfileRequest get;
  *get.mutable_profile() = Ref("sglang");
  v1::GetProfileResponse got;
  grpc::ClientContext ctx2;
  ASSERT_TRUE(server->stub->GetProfile(&ctx2, get, &got).ok());
  EXPECT_EQ(got.info().id(), "a100-80g/qwen3-4b-bf16@sglang");
  EXPECT_EQ(got.info().engine_version(), "0.5.14");
  auto parsed = costmodel::ProfileFromJson(nlohmann::json::parse(got.profile_json()));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->engine, "sglang");

  // The client library's Profiles() brings every engine back, each with its engine.
  client::PlannerClient client("127.0.0.1:" + std::to_string(server->running->port));
  auto profiles = client.Profiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  ASSERT_EQ(profiles->size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*profiles)[i].first, want[i].first);
    EXPECT_EQ((*profiles)[i].second.engine, want[i].second);
    EXPECT_EQ((*profiles)[i].second.engine_version, want[i].second == "sglang" ? "0.5.14" : "");
    EXPECT_DOUBLE_EQ(
        costmodel::MakeLatencyModel((*profiles)[i].second).value()->VerifySeconds(64, 512),
        InProcessVerify(paths_[want[i].second]));
  }
  auto keys = client.ListProfiles();
  ASSERT_TRUE(keys.ok());
  EXPECT_EQ((*keys)[1].engine, "sglang");
}

TEST_F(EngineRpcTest, FeedbackIsKeptPerEngine) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  v1::ReportAcceptanceRequest report;
  *report.mutable_profile() = Ref("vllm");
  for (int i = 0; i < 3; ++i) {
    v1::AcceptanceStep* s = report.add_steps();
    s->set_accepted_length(2);
    s->set_draft_nodes(8);
  }
  v1::ReportAcceptanceResponse reported;
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");  // ReportAcceptance is a write
  ASSERT_TRUE(server->stub->ReportAcceptance(&ctx, report, &reported).ok());
  EXPECT_EQ(reported.acceptance().steps(), 3);
  for (const auto& [engine, steps] :
       std::vector<std::pair<std::string, int>>{{"vllm", 3}, {"specplan", 0}, {"sglang", 0}}) {
    v1::GetProfileRequest get;
    *get.mutable_profile() = Ref(engine);
    v1::GetProfileResponse got;
    grpc::ClientContext c;
    ASSERT_TRUE(server->stub->GetProfile(&c, get, &got).ok());
    EXPECT_EQ(got.acceptance().steps(), steps) << engine;
  }
}

TEST_F(EngineRpcTest, PutProfileWritesTheEngineFile) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  v1::PutProfileRequest req;
  req.set_profile_json(costmodel::ProfileToJson(EngineProfile("trtllm", 5.0, "1.0")).dump());
  grpc::ClientContext ctx;
  ctx.AddMetadata("authorization", "Bearer s3cret");
  v1::PutProfileResponse resp;
  const grpc::Status st = server->stub->PutProfile(&ctx, req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(resp.replaced());
  EXPECT_EQ(resp.info().id(), "a100-80g/qwen3-4b-bf16@trtllm");
  EXPECT_EQ(resp.info().engine(), "trtllm");
  EXPECT_EQ(resp.info().engine_version(), "1.0");
  const std::string path = (dir_ / "a100-80g" / "qwen3-4b-bf16@trtllm.json").string();
  EXPECT_EQ(resp.info().path(), path);
  EXPECT_TRUE(fs::exists(path));
  v1::EstimateLatencyResponse est;
  ASSERT_TRUE(Estimate(*server->stub, Ref("trtllm"), &est).ok());
  EXPECT_DOUBLE_EQ(est.points(0).verify_s(), InProcessVerify(path));
  // The other engines are served as before.
  ASSERT_TRUE(Estimate(*server->stub, Ref("specplan"), &est).ok());
  EXPECT_DOUBLE_EQ(est.points(0).verify_s(), InProcessVerify(paths_["specplan"]));
}

TEST(EngineResolver, SourcesAreCachedPerEngine) {
  const fs::path dir = TempDir("engine_resolver");
  ProfileStore store(dir.string(), 0.1);
  bool replaced = false;
  ASSERT_TRUE(store.Put(EngineProfile("specplan", 1.0), &replaced).ok());
  ASSERT_TRUE(store.Put(EngineProfile("sglang", 2.0), &replaced).ok());
  CostResolver resolver(&store, ServiceLimits());
  v1::CostSpec spec;
  *spec.mutable_profile() = Ref("sglang");
  auto sglang = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(sglang.ok()) << sglang.status();
  spec.mutable_profile()->set_engine("specplan");
  auto runtime = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  EXPECT_NE(sglang->source.get(), runtime->source.get());
  EXPECT_EQ(sglang->profile_id(), "a100-80g/qwen3-4b-bf16@sglang");
  EXPECT_EQ(runtime->profile_id(), kBase);
  spec.mutable_profile()->set_engine("");
  auto none = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->profile_id(), "a100-80g/qwen3-4b-bf16@sglang");
  EXPECT_EQ(resolver.cached(), 3u);
  // A resolver with a default engine prefers it.
  CostResolver preferring(&store, ServiceLimits(), CostResolver::kDefaultCapacity, "specplan");
  auto preferred = preferring.Resolve(spec, 16, "cost");
  ASSERT_TRUE(preferred.ok());
  EXPECT_EQ(preferred->profile_id(), kBase);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace specplan::service

namespace specplan::service {
namespace {

TEST(ProfileTpRpcTest, TensorParallelProfilesAreAddressedByTp) {
  // The bundled profiles hold tp > 1 MoE targets (glm-4.5-air only at tp 4): ListProfiles gives
  // each one's tp, GetProfile finds it by ProfileRef.tp, and the client's Profiles() (which the
  // CLI's --server commands list) brings every one back.
  ServerConfig config;
  config.profiles_dir = ::specplan::test_paths::SourceDir() + "/calib";
  auto server = TestServer::Start(config);
  ASSERT_NE(server, nullptr);
  v1::ListProfilesResponse list;
  grpc::ClientContext ctx;
  ASSERT_TRUE(server->stub->ListProfiles(&ctx, v1::ListProfilesRequest(), &list).ok());
  int tp4 = 0;
  for (const v1::ProfileInfo& info : list.profiles()) {
    const bool has_tp = info.id().find("-tp") != std::string::npos;
    EXPECT_EQ(info.tp() > 1, has_tp) << info.id();
    tp4 += info.tp() == 4;
  }
  EXPECT_GT(tp4, 0);
  v1::GetProfileRequest get;
  get.mutable_profile()->set_gpu("h100");
  get.mutable_profile()->set_model("glm-4.5-air");
  get.mutable_profile()->set_engine("sglang");
  get.mutable_profile()->set_tp(4);
  v1::GetProfileResponse got;
  grpc::ClientContext ctx2;
  const grpc::Status found = server->stub->GetProfile(&ctx2, get, &got);
  ASSERT_TRUE(found.ok()) << found.error_message();
  EXPECT_EQ(got.info().id(), "h100-sxm/glm-4.5-air-bf16-tp4@sglang");
  EXPECT_EQ(got.info().tp(), 4);
  // Without tp (= 1) there is no such profile, and the error names the id it looked for.
  get.mutable_profile()->set_tp(0);
  grpc::ClientContext ctx3;
  const grpc::Status missing = server->stub->GetProfile(&ctx3, get, &got);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(missing.error_message(), HasSubstr("glm-4.5-air-bf16@sglang' on this server"));
  get.mutable_profile()->set_tp(-2);
  grpc::ClientContext ctx4;
  EXPECT_THAT(server->stub->GetProfile(&ctx4, get, &got).error_message(),
              HasSubstr("profile.tp = -2"));
  client::PlannerClient client("127.0.0.1:" + std::to_string(server->running->port));
  auto profiles = client.Profiles();
  ASSERT_TRUE(profiles.ok()) << profiles.status();
  EXPECT_EQ(profiles->size(), static_cast<size_t>(list.profiles_size()));
}

}  // namespace
}  // namespace specplan::service
