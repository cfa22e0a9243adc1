// The WhatIf RPC against a real server on loopback: the report equals whatif::RunWhatIf's
// in-process report field for field (and so prints identically), the bundled trace is the default,
// bad requests name the field, and the client-side option conversion refuses what it cannot send.
// Over 500 lines because the field-by-field report comparison is spelled out once for all cases.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "client/client.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/roofline_latency.h"
#include "service/convert.h"
#include "service_test_util.h"
#include "tests/paths/test_paths.h"
#include "util/file.h"
#include "whatif/sweep.h"
#include "whatif/trace.h"

namespace specplan::service {
namespace {

using ::testing::HasSubstr;
using namespace specplan::service::testing;

std::string FixtureText() {
  auto text =
      ReadFileToString(::specplan::test_paths::SourceDir() + "/tests/whatif/data/small.jsonl");
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

// Bitwise equality of doubles, so that NaN == NaN and every digit the JSON prints agrees.
bool Same(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// One field of two structs: doubles the Same, everything else ==.
template <typename V>
void ExpectFieldSame(const V& x, const V& y, const std::string& name) {
  if constexpr (std::is_same_v<V, double>) {
    EXPECT_TRUE(Same(x, y)) << name << " = " << x << " vs " << y;
  } else {
    EXPECT_EQ(x, y) << name;
  }
}

template <typename Tie, size_t... I>
void ExpectTiesSame(const Tie& x, const Tie& y, const std::vector<std::string>& names,
                    std::index_sequence<I...>) {
  (ExpectFieldSame(std::get<I>(x), std::get<I>(y), names[I]), ...);
}

// Each field of `a` and `b` that `tie` lists ((const T&) -> std::tie of the fields) is the same;
// `names` spells the fields, comma-separated, for the failure messages.
template <typename T, typename Tie>
void ExpectFieldsSame(const T& a, const T& b, const Tie& tie, const std::string& names) {
  std::vector<std::string> name;
  for (size_t begin = 0; begin <= names.size();) {
    size_t end = names.find(',', begin);
    if (end == std::string::npos) end = names.size();
    name.push_back(names.substr(begin, end - begin));
    begin = names.find_first_not_of(' ', end + 1);
    if (begin == std::string::npos) break;
  }
  const auto x = tie(a), y = tie(b);
  constexpr size_t kFields = std::tuple_size_v<std::decay_t<decltype(x)>>;
  ASSERT_EQ(name.size(), kFields) << names;
  ExpectTiesSame(x, y, name, std::make_index_sequence<kFields>());
}

// EXPECT_FIELDS_SAME(a, b, o, o.x, o.y.z, ...): fields o.x, o.y.z, ... of a and b are the same
// (doubles bit for bit).
#define EXPECT_FIELDS_SAME(a, b, o, ...) \
  ExpectFieldsSame((a), (b), [](const auto& o) { return std::tie(__VA_ARGS__); }, #__VA_ARGS__)

void ExpectSummaryEq(const whatif::ControllerSummary& a, const whatif::ControllerSummary& b) {
  EXPECT_FIELDS_SAME(a, b, o, o.found, o.speedup, o.accepted_per_step, o.mean_tree_size,
                     o.ratio_to_oracle);
}

// Every field of two reports.
void ExpectReportsEqual(const whatif::WhatIfReport& a, const whatif::WhatIfReport& b) {
  EXPECT_FIELDS_SAME(a, b, o, o.target, o.draft, o.vocab, o.steps, o.steps_with_marginals,
                     o.steps_with_nodes, o.prompts, o.latency_model, o.budgets, o.strategies,
                     o.n_max, o.drafter.cls, o.drafter.gamma, o.drafter.t_net_s, o.drafter.t_head_s,
                     o.drafter.t_light_s, o.policy_forward_s, o.t_aux_s);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "row " << i);
    const whatif::WhatIfRow &x = a.rows[i], &y = b.rows[i];
    EXPECT_FIELDS_SAME(x, y, r, r.strategy, r.budget, r.params, r.steps_used, r.steps_skipped,
                       r.accepted_per_step, r.predicted_accepted_per_step, r.mean_tree_size,
                       r.cycle_s, r.t_ar_s, r.speedup, r.predicted_speedup, r.pearson);
    ASSERT_EQ(x.per_step.size(), y.per_step.size());
    for (size_t k = 0; k < x.per_step.size(); ++k) {
      SCOPED_TRACE(::testing::Message() << "per_step " << k);
      EXPECT_FIELDS_SAME(x.per_step[k], y.per_step[k], p, p.step, p.n, p.accepted,
                         p.predicted_accepted, p.cycle_s, p.t_ar_s, p.speedup);
    }
  }
  EXPECT_FIELDS_SAME(a.oracle, b.oracle, o, o.found, o.budget, o.speedup, o.accepted_per_step);
  ExpectSummaryEq(a.controller, b.controller);
  ExpectSummaryEq(a.scan, b.scan);
  EXPECT_FIELDS_SAME(a.surrogate, b.surrogate, s, s.steps, s.chain_pearson, s.chain_spearman,
                     s.chain_predicted_mean, s.chain_accepted_mean, s.controller_pearson,
                     s.controller_spearman);
  // What the CLI prints from them.
  EXPECT_EQ(whatif::FormatWhatIfTable(a), whatif::FormatWhatIfTable(b));
  EXPECT_EQ(whatif::WhatIfReportToJson(a).dump(2), whatif::WhatIfReportToJson(b).dump(2));
}

const whatif::WhatIfRow* FindRow(const whatif::WhatIfReport& r, whatif::Strategy s, int budget) {
  for (const whatif::WhatIfRow& row : r.rows) {
    if (row.strategy == s && row.budget == budget) return &row;
  }
  return nullptr;
}

class WhatIfRpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig config;
    config.service.limits.max_n = 512;
    config.service.limits.max_whatif_steps = 1000;
    server_ = TestServer::Start(config);
    ASSERT_NE(server_, nullptr);
    address_ = "127.0.0.1:" + std::to_string(server_->running->port);
  }

  grpc::Status Call(const v1::WhatIfRequest& req, v1::WhatIfResponse* resp) {
    grpc::ClientContext ctx;
    return server_->stub->WhatIf(&ctx, req, resp);
  }

  // T_verify(s) = 10 ms + 1 ms * s at s = 1..64, as a latency grid (c-independent).
  static v1::CostSpec GridCost() {
    v1::CostSpec cost;
    v1::LatencyGrid* g = cost.mutable_latency_grid();
    for (int s = 1; s <= 64; ++s) {
      g->add_s(s);
      g->add_seconds(0.010 + 0.001 * s);
    }
    cost.mutable_drafter()->set_t_net_s(0.002);  // parallel block: T_draft = 2 ms per step
    cost.set_t_aux_s(0.0005);
    return cost;
  }
  static costmodel::GridLatency GridModel() {
    std::vector<int64_t> s;
    std::vector<double> t;
    for (int i = 1; i <= 64; ++i) {
      s.push_back(i);
      t.push_back(0.010 + 0.001 * i);
    }
    return costmodel::GridLatency(s, t, costmodel::GridSource::kCaller);
  }

  std::unique_ptr<TestServer> server_;
  std::string address_;
};

// Hand-worked on tests/whatif/data/small.jsonl (tests/whatif/sweep_test.cc): best-first accepted
// lengths per budget 1..4 are (1, 1, 2, 3) on step 0 and (0, 1, 1, 2) on step 1; step 2 has no
// marginals. With T_verify(s) = 10 + s ms: T_AR = 11 ms, C(b) = 2 + 0.5 + 10 + (b + 1) ms.
TEST_F(WhatIfRpcTest, RowsEqualInProcessReportFieldForField) {
  v1::WhatIfRequest req;
  req.set_trace_jsonl(FixtureText());
  *req.mutable_cost() = GridCost();
  for (int b : {4, 1, 3, 2}) req.add_budgets(b);  // any order; the report sorts them
  req.set_policy_forward_s(0.0015);
  req.mutable_fixed_tree()->set_tau(0.1);
  req.set_per_step(true);
  v1::WhatIfResponse resp;
  const grpc::Status st = Call(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.latency_model(), "grid");
  EXPECT_EQ(resp.profile_id(), "");
  EXPECT_EQ(resp.trace().bundled_path(), "");
  EXPECT_EQ(resp.trace().steps(), 3);
  EXPECT_EQ(resp.trace().prompts(), 2);
  EXPECT_THAT(resp.budgets(), ::testing::ElementsAre(1, 2, 3, 4));
  EXPECT_EQ(resp.strategies_size(), 6);
  EXPECT_EQ(resp.n_max(), 4);
  EXPECT_GT(resp.run_us(), 0);
  auto remote = WhatIfReportFromProto(resp);
  ASSERT_TRUE(remote.ok()) << remote.status();

  auto trace = whatif::ParseTrace(FixtureText());
  ASSERT_TRUE(trace.ok()) << trace.status();
  whatif::WhatIfOptions o;
  o.budgets = {1, 2, 3, 4};
  o.drafter.t_net_s = 0.002;
  o.t_aux_s = 0.0005;
  o.policy_forward_s = 0.0015;
  o.fixed_tree.tau = 0.1;
  o.per_step = true;
  const costmodel::GridLatency grid = GridModel();
  auto local = whatif::RunWhatIf(*trace, grid, o);
  ASSERT_TRUE(local.ok()) << local.status();
  ExpectReportsEqual(*local, *remote);

  // And by hand.
  const int l0[] = {1, 1, 2, 3}, l1[] = {0, 1, 1, 2};
  for (int b = 1; b <= 4; ++b) {
    const whatif::WhatIfRow* row = FindRow(*remote, whatif::Strategy::kBestFirst, b);
    ASSERT_NE(row, nullptr) << b;
    EXPECT_EQ(row->steps_used, 2);
    EXPECT_EQ(row->steps_skipped, 1);
    EXPECT_DOUBLE_EQ(row->accepted_per_step, (l0[b - 1] + l1[b - 1]) / 2.0);
    const double cycle = 0.0125 + 0.001 * (b + 1);
    EXPECT_NEAR(row->cycle_s, cycle, 1e-15);
    EXPECT_NEAR(row->t_ar_s, 0.011, 1e-15);
    EXPECT_NEAR(row->speedup, (2.0 + l0[b - 1] + l1[b - 1]) * 0.011 / (2 * cycle), 1e-12);
    ASSERT_EQ(row->per_step.size(), 2u);
    EXPECT_EQ(row->per_step[1].step, 1);
    EXPECT_EQ(row->per_step[1].accepted, l1[b - 1]);
  }
  EXPECT_TRUE(remote->controller.found);
  EXPECT_TRUE(remote->scan.found);

  // Counted in the stats.
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(server_->stub->GetStats(&ctx, {}, &stats).ok());
  bool found = false;
  for (const v1::MethodStats& m : stats.methods()) {
    if (m.method() == "WhatIf") {
      found = true;
      EXPECT_EQ(m.requests(), 1);
      EXPECT_EQ(m.errors(), 0);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(WhatIfRpcTest, ClientWithInlineRooflineEqualsInProcess) {
  whatif::WhatIfOptions o;
  o.budgets = {1, 2, 8};
  o.strategies = {whatif::Strategy::kBestFirst, whatif::Strategy::kController,
                  whatif::Strategy::kLinear, whatif::Strategy::kFixed};
  o.drafter.cls = costmodel::DrafterClass::kAutoregressive;
  o.drafter.t_net_s = 0.0007;
  o.drafter.t_head_s = 0.0001;
  o.t_aux_s = 0.0002;
  o.fixed_tree.depth = 3;
  o.fixed_tree.branch = 2;
  o.fixed_tree.tau = 0;
  client::CostRequest cost;  // the bare roofline of registry names, as the CLI sends it
  cost.model = "qwen3-8b";
  cost.gpu = "h100";
  client::PlannerClient c(address_);
  auto remote = c.WhatIf(FixtureText(), "small.jsonl", cost, o);
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ(remote->used.latency_model, "roofline");
  EXPECT_EQ(remote->used.profile, "");
  EXPECT_EQ(remote->bundled_trace, "");

  auto trace = whatif::ParseTrace(FixtureText());
  ASSERT_TRUE(trace.ok());
  const costmodel::RooflineLatency roofline(*costmodel::LookupModel("qwen3-8b"),
                                            *costmodel::LookupGpu("h100"));
  auto local = whatif::RunWhatIf(*trace, roofline, o);
  ASSERT_TRUE(local.ok()) << local.status();
  ExpectReportsEqual(*local, remote->report);
  for (const whatif::WhatIfRow& row : remote->report.rows) EXPECT_TRUE(row.per_step.empty());
}

// A row that used no step is all NaN; NaN crosses the wire as NaN (JSON null in the CLI).
TEST_F(WhatIfRpcTest, RowsWithoutStepsKeepNaN) {
  v1::WhatIfRequest req;
  req.set_trace_jsonl(
      R"({"format":"specplan.trace","version":1,"target":"t","draft":"d","vocab":50})"
      "\n"
      R"({"prompt":0,"c":1,"root":2,"continuation":[3],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n");
  *req.mutable_cost() = GridCost();
  req.add_budgets(2);
  req.add_strategies("linear");  // needs recorded nodes: the only step has none
  v1::WhatIfResponse resp;
  const grpc::Status st = Call(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(resp.rows_size(), 1);
  EXPECT_EQ(resp.rows(0).steps_used(), 0);
  EXPECT_EQ(resp.rows(0).steps_skipped(), 1);
  EXPECT_TRUE(std::isnan(resp.rows(0).speedup()));
  EXPECT_TRUE(std::isnan(resp.rows(0).accepted_per_step()));
  EXPECT_FALSE(resp.oracle().found());
  auto remote = WhatIfReportFromProto(resp);
  ASSERT_TRUE(remote.ok());
  EXPECT_TRUE(std::isnan(remote->rows[0].cycle_s));
  EXPECT_TRUE(whatif::WhatIfReportToJson(*remote)["rows"][0]["speedup"].is_null());
}

TEST_F(WhatIfRpcTest, EmptyTraceUsesTheBundledTrace) {
  const std::string path = whatif::DefaultTracePath();
  auto trace = whatif::LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  v1::WhatIfRequest req;  // no trace_jsonl
  *req.mutable_cost() = GridCost();
  req.add_budgets(1);
  req.add_budgets(8);
  req.add_strategies("bestfirst");
  req.add_strategies("controller");
  v1::WhatIfResponse resp;
  const grpc::Status st = Call(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.trace().bundled_path(), path);
  EXPECT_EQ(resp.trace().steps(), static_cast<int64_t>(trace->steps.size()));
  EXPECT_EQ(resp.trace().target(), trace->header.target);
  auto remote = WhatIfReportFromProto(resp);
  ASSERT_TRUE(remote.ok()) << remote.status();
  whatif::WhatIfOptions o;
  o.budgets = {1, 8};
  o.strategies = {whatif::Strategy::kBestFirst, whatif::Strategy::kController};
  o.drafter.t_net_s = 0.002;
  o.t_aux_s = 0.0005;
  const costmodel::GridLatency grid = GridModel();
  auto local = whatif::RunWhatIf(*trace, grid, o);
  ASSERT_TRUE(local.ok()) << local.status();
  ExpectReportsEqual(*local, *remote);
}

TEST_F(WhatIfRpcTest, BadRequestsNameTheFieldAndAreCounted) {
  const std::string header =
      R"({"format":"specplan.trace","version":1,"target":"t","draft":"d","vocab":50})"
      "\n";
  const std::string good_step =
      R"({"prompt":0,"c":1,"root":2,"continuation":[3],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n";
  const std::string bad_step =
      R"({"prompt":0,"c":1,"root":2,"continuation":[70],"marginals":{"tokens":[[3]],"probs":[[0.5]]}})"
      "\n";
  struct Case {
    std::string what;
    std::function<void(v1::WhatIfRequest*)> edit;
    grpc::StatusCode code;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"bad trace line", [&](auto* r) { r->set_trace_jsonl(header + good_step + bad_step); },
       grpc::INVALID_ARGUMENT, "trace_jsonl:3: continuation[0] = 70"},
      {"named bad trace line",
       [&](auto* r) {
         r->set_trace_jsonl(header + good_step + bad_step);
         r->set_trace_name("run.jsonl");
       },
       grpc::INVALID_ARGUMENT, "trace_jsonl (run.jsonl):3: continuation[0] = 70"},
      {"not JSON", [&](auto* r) { r->set_trace_jsonl(header + "{nope\n"); }, grpc::INVALID_ARGUMENT,
       "trace_jsonl:2"},
      {"no steps", [&](auto* r) { r->set_trace_jsonl(header); }, grpc::INVALID_ARGUMENT, "steps"},
      {"unknown strategy",
       [](auto* r) {
         r->add_strategies("best_first");
         r->add_strategies("nope");
       },
       grpc::INVALID_ARGUMENT, "strategies[1] = 'nope': unknown strategy"},
      {"repeated strategy",
       [](auto* r) {
         r->add_strategies("scan");
         r->add_strategies("scan");
       },
       grpc::INVALID_ARGUMENT, "strategies[1] = 'scan': repeated"},
      {"budget over the limit",
       [](auto* r) {
         r->add_budgets(1);
         r->add_budgets(600);
       },
       grpc::RESOURCE_EXHAUSTED, "budgets[1] = 600: exceeds the server limit 512 (--max-n)"},
      {"budget zero", [](auto* r) { r->add_budgets(0); }, grpc::INVALID_ARGUMENT,
       "budgets[0] = 0: must be >= 1"},
      {"repeated budget",
       [](auto* r) {
         r->add_budgets(2);
         r->add_budgets(2);
       },
       grpc::INVALID_ARGUMENT, "budgets[1] = 2: repeated"},
      {"too many budgets",
       [](auto* r) {
         for (int b = 1; b <= 65; ++b) r->add_budgets(b);
       },
       grpc::RESOURCE_EXHAUSTED, "budgets: 65 entries exceed the server limit 64"},
      {"n_max over the limit", [](auto* r) { r->set_n_max(513); }, grpc::RESOURCE_EXHAUSTED,
       "n_max = 513"},
      {"negative policy time", [](auto* r) { r->set_policy_forward_s(-1); }, grpc::INVALID_ARGUMENT,
       "policy_forward_s = -1"},
      {"bad dynatree option", [](auto* r) { r->mutable_dynatree()->set_tau_l(0.95); },
       grpc::INVALID_ARGUMENT, "dynatree.tau_l = 0.95"},
      {"bad fixed-tree option", [](auto* r) { r->mutable_fixed_tree()->set_tau(2); },
       grpc::INVALID_ARGUMENT, "fixed_tree.tau"},
      {"no cost", [](auto* r) { r->clear_cost(); }, grpc::INVALID_ARGUMENT, "cost: required"},
      {"bad drafter", [](auto* r) { r->mutable_cost()->mutable_drafter()->set_t_net_s(-2); },
       grpc::INVALID_ARGUMENT, "cost.drafter.t_net_s = -2"},
      {"unknown model", [](auto* r) { r->mutable_cost()->mutable_inline_model()->set_model("x"); },
       grpc::NOT_FOUND, "cost.inline_model.model = 'x'"},
  };
  int errors = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::WhatIfRequest req;
    req.set_trace_jsonl(FixtureText());
    *req.mutable_cost() = GridCost();
    if (c.what == "unknown model") *req.mutable_cost() = InlineCost(0);
    c.edit(&req);
    v1::WhatIfResponse resp;
    const grpc::Status st = Call(req, &resp);
    EXPECT_EQ(st.error_code(), c.code) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(c.expect));
    errors += st.ok() ? 0 : 1;
  }
  grpc::ClientContext ctx;
  v1::GetStatsResponse stats;
  ASSERT_TRUE(server_->stub->GetStats(&ctx, {}, &stats).ok());
  for (const v1::MethodStats& m : stats.methods()) {
    if (m.method() == "WhatIf") {
      EXPECT_EQ(m.errors(), errors);
    }
  }
}

// Fuzzer find (whatif_request_fuzzer): a latency grid holding a denormal time (7.9e-312 s) made a
// cycle nearly free and a row's speedup overflow to inf. Grid values now count as at least 1 ns,
// and durations above 1e6 s are refused, so every row's speedup stays finite.
TEST_F(WhatIfRpcTest, FuzzRegressionTinyAndHugeTimesKeepSpeedupsFinite) {
  // The crash input: the bundled trace's header and first step, this grid, budgets {3, 16}.
  auto bundled = ReadFileToString(whatif::DefaultTracePath());
  ASSERT_TRUE(bundled.ok()) << bundled.status();
  const size_t first = bundled->find('\n'), second = bundled->find('\n', first + 1);
  ASSERT_NE(second, std::string::npos);
  v1::WhatIfRequest req;
  req.set_trace_jsonl(bundled->substr(0, second + 1));
  v1::LatencyGrid* g = req.mutable_cost()->mutable_latency_grid();
  for (auto [s, t] : {std::pair<int64_t, double>{1, 1e-3},
                      {2, 1.1e-3},
                      {8, 7.909442231413e-312},
                      {64, 0.0039997398853302}}) {
    g->add_s(s);
    g->add_seconds(t);
  }
  req.add_budgets(3);
  req.add_budgets(16);
  v1::WhatIfResponse resp;
  grpc::Status st = Call(req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_GT(resp.rows_size(), 0);
  for (const v1::WhatIfRow& row : resp.rows()) {
    if (row.steps_used() == 0) continue;
    EXPECT_TRUE(std::isfinite(row.speedup()) && row.speedup() > 0)
        << row.strategy() << " " << row.budget() << ": " << row.speedup();
  }
  req.mutable_cost()->mutable_drafter()->set_t_net_s(1e300);
  st = Call(req, &resp);
  EXPECT_EQ(st.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_THAT(
      st.error_message(),
      HasSubstr("cost.drafter.t_net_s = 1e+300: must be a number of seconds in [0, 1e+06]"));
}

TEST(WhatIfRpcLimits, TooManyStepsIsResourceExhausted) {
  ServerConfig config;
  config.service.limits.max_whatif_steps = 2;  // the fixture has 3
  auto server = TestServer::Start(config);
  ASSERT_NE(server, nullptr);
  v1::WhatIfRequest req;
  req.set_trace_jsonl(FixtureText());
  *req.mutable_cost() = InlineCost(0);
  v1::WhatIfResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status st = server->stub->WhatIf(&ctx, req, &resp);
  EXPECT_EQ(st.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_THAT(st.error_message(), HasSubstr("trace_jsonl: 3 steps exceed the server limit 2"));
}

TEST(WhatIfConvert, OptionsRoundTripAndUnsendableOptionsAreRefused) {
  whatif::WhatIfOptions o;
  o.budgets = {3, 5};
  o.strategies = {whatif::Strategy::kScan, whatif::Strategy::kDynaTree};
  o.n_max = 9;
  o.policy_forward_s = 0.25;
  o.dynatree.tau_h = 0.8;
  o.dynatree.history_adaptation = false;
  o.fixed_tree.tau = 0;
  o.per_step = true;
  v1::WhatIfRequest req;
  ASSERT_TRUE(WhatIfOptionsToProto(o, &req).ok());
  whatif::WhatIfOptions back;
  ASSERT_TRUE(WhatIfOptionsFromProto(req, ServiceLimits{}, &back).ok());
  EXPECT_EQ(back.budgets, o.budgets);
  EXPECT_EQ(back.strategies, o.strategies);
  EXPECT_EQ(back.n_max, 9);
  EXPECT_EQ(back.policy_forward_s, 0.25);
  EXPECT_EQ(back.dynatree.tau_h, 0.8);
  EXPECT_EQ(back.dynatree.tau_l, o.dynatree.tau_l);
  EXPECT_FALSE(back.dynatree.history_adaptation);
  EXPECT_EQ(back.fixed_tree.depth, o.fixed_tree.depth);
  EXPECT_EQ(back.fixed_tree.tau, 0);
  EXPECT_TRUE(back.per_step);

  whatif::WhatIfOptions zero = o;
  zero.dynatree.rho_stop = 0;
  absl::Status st = WhatIfOptionsToProto(zero, &req);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("dynatree.rho_stop = 0"));
  whatif::WhatIfOptions window = o;
  window.dynatree.window = 3;
  st = WhatIfOptionsToProto(window, &req);
  EXPECT_THAT(std::string(st.message()), HasSubstr("dynatree.window"));
  // The client refuses before any I/O (no server at this address).
  client::PlannerClient c("127.0.0.1:1");
  client::CostRequest cost;
  cost.model = "qwen3-8b";
  cost.gpu = "h100";
  auto r = c.WhatIf("", "", cost, window);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace specplan::service
