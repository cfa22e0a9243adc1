// The drafter's forwards composed from the engine's kernel tables (costmodel/compose/compose.h
// ComposedDrafterPass, ComposeDrafterTable, ComposeOptions::drafters) on the project's slice of
// vLLM's H100 tables: each forward against the GEMM table by hand, the table's cells against the
// pass, the profile's drafters through JSON, and refused drafter JSON.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "costmodel/compose/compose.h"
#include "costmodel/compose/kernel_tables.h"
#include "costmodel/hardware/model_registry.h"
#include "costmodel/profile/profile_json.h"
#include "costmodel/step/drafter_arch.h"
#include "tests/paths/test_paths.h"
#include "util/check.h"

namespace specplan::costmodel {
namespace {

using ::testing::HasSubstr;

const EngineKernelTables& VllmH100() {
  static const EngineKernelTables* t = [] {
    auto loaded = LoadEngineKernelTables(::specplan::test_paths::SourceDir() +
                                         "/data/kernels/h100_sxm/vllm-0.24.0");
    SPECPLAN_CHECK(loaded.ok(), "kernel tables");
    return new EngineKernelTables(*std::move(loaded));
  }();
  return *t;
}

GpuSpec Gpu() {
  auto g = GpuForKernelTables(VllmH100());
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

DrafterArch Arch(const std::string& name) {
  auto a = DrafterArchFor(name, *ResolveModel("llama-3.1-8b"));
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

ComposedCost LayersOf(const DrafterArch& a) {
  auto c = ComposedCost::Create(&VllmH100(), a.layers, Gpu(), /*unmeasured_terms=*/true);
  EXPECT_TRUE(c.ok()) << c.status();
  return *std::move(c);
}

double Gemm(int64_t m, int64_t n, int64_t k) {
  auto s = VllmH100().gemm.Seconds(m, n, k);
  EXPECT_TRUE(s.ok()) << m << " x " << n << " x " << k << ": " << s.status();
  return s.ok() ? *s : 0;
}

ComposedPass DrafterPass(const ComposedCost& layers, const DrafterArch& a, int64_t b, int64_t s,
                         int64_t c) {
  auto p = ComposedDrafterPass(layers, a, b, s, c);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : ComposedPass{};
}

ComposedPass LayerPass(const ComposedCost& layers, int64_t b, int64_t s, int64_t c) {
  auto p = layers.Pass(b, s, c);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : ComposedPass{};
}

// Llama-3.1-8B: h = 4096, QKV output (32 + 2 x 8) x 128 = 6144.
constexpr int64_t kH = 4096;
constexpr int64_t kQkvN = 6144;

TEST(ComposedDrafterPass, Eagle3ExtendIsTheLayerPassWithAWideQkvAndTheFc) {
  const DrafterArch a = Arch("eagle3");
  const ComposedCost layers = LayersOf(a);
  for (const auto& [b, s, c] :
       {std::tuple<int64_t, int64_t, int64_t>{1, 4, 1024}, {8, 4, 300}, {64, 6, 2048}, {3, 2, 0}}) {
    SCOPED_TRACE(testing::Message() << "b = " << b << ", s = " << s << ", c = " << c);
    const int64_t m = b * s;
    const ComposedPass one_layer = LayerPass(layers, b, s, c);
    const ComposedPass p = DrafterPass(layers, a, b, s, c);
    const double want_gemm =
        one_layer.gemm_s + (Gemm(m, kQkvN, 2 * kH) - Gemm(m, kQkvN, kH)) + Gemm(m, kH, 3 * kH);
    EXPECT_DOUBLE_EQ(p.gemm_s, want_gemm);
    EXPECT_GT(p.gemm_s, one_layer.gemm_s);
    // Everything else is the one layer's pass; the LM head is the 32000-token draft vocabulary.
    EXPECT_EQ(p.attention_s, one_layer.attention_s);
    EXPECT_EQ(p.elementwise_s, one_layer.elementwise_s);
    EXPECT_EQ(p.comm_s, 0);
    EXPECT_EQ(p.lm_head_s, one_layer.lm_head_s);
    EXPECT_DOUBLE_EQ(p.lm_head_s, Gemm(m, 32000, kH));
    EXPECT_DOUBLE_EQ(p.total_s(), one_layer.total_s() + (want_gemm - one_layer.gemm_s));
  }
}

TEST(ComposedDrafterPass, Eagle3StepForwardHasNoFc) {
  const DrafterArch a = Arch("eagle3");
  const ComposedCost layers = LayersOf(a);
  for (int64_t b : {1, 4, 64, 256}) {
    SCOPED_TRACE(b);
    const ComposedPass one_layer = LayerPass(layers, b, 1, 1024);
    const ComposedPass p = DrafterPass(layers, a, b, 1, 1024);
    EXPECT_DOUBLE_EQ(p.gemm_s, one_layer.gemm_s + Gemm(b, kQkvN, 2 * kH) - Gemm(b, kQkvN, kH));
    // The extend forward of the same tokens runs the fc; the single-token forward does not.
    const ComposedPass extend = DrafterPass(layers, a, 1, b, 1024);
    const ComposedPass extend_layer = LayerPass(layers, 1, b, 1024);
    if (b > 1) {
      EXPECT_DOUBLE_EQ(extend.gemm_s - extend_layer.gemm_s,
                       Gemm(b, kQkvN, 2 * kH) - Gemm(b, kQkvN, kH) + Gemm(b, kH, 3 * kH));
    }
  }
}

TEST(ComposedDrafterPass, EagleAndMtpRunTheFcOnEveryForwardAndKeepTheQkv) {
  for (const char* name : {"eagle", "mtp"}) {
    SCOPED_TRACE(name);
    const DrafterArch a = Arch(name);
    const ComposedCost layers = LayersOf(a);
    for (int64_t s : {1, 4}) {
      const ComposedPass one_layer = LayerPass(layers, 16, s, 512);
      const ComposedPass p = DrafterPass(layers, a, 16, s, 512);
      EXPECT_DOUBLE_EQ(p.gemm_s, one_layer.gemm_s + Gemm(16 * s, kH, 2 * kH));
      EXPECT_DOUBLE_EQ(p.lm_head_s, Gemm(16 * s, 128256, kH));  // the target's LM head
    }
  }
}

TEST(ComposedDrafterPass, DraftModelIsItsOwnPass) {
  // A draft model whose heads the slice holds: two of Llama-3.1-8B's layers (32/8/128).
  DrafterArch a;
  a.name = "draft:two-layer";
  a.kind = DrafterKind::kDraftModel;
  a.layers = *ResolveModel("llama-3.1-8b");
  a.layers.layers = 2;
  a.qkv_in = a.layers.hidden;
  const ComposedCost layers = LayersOf(a);
  for (int64_t s : {1, 3}) {
    const ComposedPass one = LayerPass(layers, 4, s, 700);
    const ComposedPass p = DrafterPass(layers, a, 4, s, 700);
    EXPECT_EQ(p.gemm_s, one.gemm_s);  // no wider QKV, no fc
    EXPECT_EQ(p.total_s(), one.total_s());
  }
  // Llama-3.2-1B's heads (32/8/64) are not in the slice: refused naming the drafter.
  int64_t extrapolated = 0;
  auto d = ComposeDrafterTable(VllmH100(), Arch("draft:llama-3.2-1b"), Gpu(), ComposeOptions{},
                               &extrapolated);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("drafter = 'draft:llama-3.2-1b': "));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("32/8/64"));
}

TEST(ComposedDrafterPass, RefusesABadShape) {
  const DrafterArch a = Arch("eagle3");
  const ComposedCost layers = LayersOf(a);
  auto p = ComposedDrafterPass(layers, a, 0, 1, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("pass b = 0"));
}

ComposeOptions SmallGrids() {
  ComposeOptions o;
  o.b_grid = {1, 8};
  o.s_grid = {1, 4};
  o.c_grid = {0, 1024, 4096};
  return o;
}

TEST(ComposeDrafterTable, CellsAreTheComposedPassAtGridPoints) {
  for (const char* name : {"eagle3", "eagle", "mtp"}) {
    SCOPED_TRACE(name);
    const DrafterArch a = Arch(name);
    const ComposedCost layers = LayersOf(a);
    const ComposeOptions o = SmallGrids();
    int64_t extrapolated = 0;
    auto d = ComposeDrafterTable(VllmH100(), a, Gpu(), o, &extrapolated);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->arch.name, name);
    const std::vector<int64_t>& bg = DrafterComposeBGrid();
    const std::vector<int64_t>& sg = DrafterComposeSGrid();
    EXPECT_EQ(d->table.s_grid, sg);
    EXPECT_EQ(d->table.c_grid, o.c_grid);
    ASSERT_EQ(bg.front(), 1);
    EXPECT_EQ(d->table.b_grid, std::vector<int64_t>(bg.begin() + 1, bg.end()));
    ASSERT_EQ(d->table.seconds.size(), o.c_grid.size());
    ASSERT_EQ(d->table.batch_seconds.size(), bg.size() - 1);
    for (size_t bi = 0; bi < bg.size(); bi += 3) {  // a few batch layers, every (c, s) cell
      const auto& layer = bi == 0 ? d->table.seconds : d->table.batch_seconds[bi - 1];
      for (size_t ci = 0; ci < o.c_grid.size(); ++ci) {
        for (size_t si = 0; si < sg.size(); ++si) {
          EXPECT_EQ(layer[ci][si], DrafterPass(layers, a, bg[bi], sg[si], o.c_grid[ci]).total_s())
              << "b = " << bg[bi] << ", s = " << sg[si] << ", c = " << o.c_grid[ci];
        }
      }
    }
  }
}

TEST(ComposeDrafterTable, RefusesADrafterWithoutANetwork) {
  int64_t extrapolated = 0;
  auto d = ComposeDrafterTable(VllmH100(), Arch("ngram"), Gpu(), SmallGrids(), &extrapolated);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("drafter = 'ngram': has no network to compose"));
}

const Profile& ComposedLlama() {
  static const Profile* p = [] {
    auto composed = ComposeProfile(VllmH100(), "llama-3.1-8b", SmallGrids());
    SPECPLAN_CHECK(composed.ok(), "compose");
    return new Profile(*std::move(composed));
  }();
  return *p;
}

TEST(ComposeProfileDrafters, DefaultsAreEagleEagle3AndMtpFromTheSameTables) {
  const Profile& p = ComposedLlama();
  ASSERT_EQ(p.drafters.size(), 3u);
  for (const char* name : {"eagle", "eagle3", "mtp"}) {
    ASSERT_TRUE(p.drafters.count(name)) << name;
    const DrafterProfile& d = p.drafters.at(name);
    EXPECT_EQ(d.arch.name, name);
    // A cell, against the pass on the same tables.
    const DrafterArch a = Arch(name);
    const ComposedCost layers = LayersOf(a);
    EXPECT_EQ(d.table.seconds[1][3], DrafterPass(layers, a, 1, d.table.s_grid[3], 1024).total_s());
  }
  bool named = false;
  for (const std::string& note : p.notes) {
    named = named || note.find("drafters composed from the same tables: eagle, eagle3, mtp") !=
                         std::string::npos;
  }
  EXPECT_TRUE(named);
}

TEST(ComposeProfileDrafters, OptionsChooseTheDrafters) {
  ComposeOptions none = SmallGrids();
  none.drafters = {"none"};
  auto p = ComposeProfile(VllmH100(), "llama-3.1-8b", none);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->drafters.empty());
  EXPECT_FALSE(ProfileToJson(*p).contains("drafters"));

  ComposeOptions one = SmallGrids();
  one.drafters = {"eagle3"};
  p = ComposeProfile(VllmH100(), "llama-3.1-8b", one);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->drafters.size(), 1u);
  EXPECT_EQ(p->drafters.begin()->first, "eagle3");

  ComposeOptions unknown = SmallGrids();
  unknown.drafters = {"medusa"};
  p = ComposeProfile(VllmH100(), "llama-3.1-8b", unknown);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(std::string(p.status().message()), HasSubstr("drafter = 'medusa': unknown"));

  // Host-only drafters have nothing to compose.
  ComposeOptions ngram = SmallGrids();
  ngram.drafters = {"ngram", "suffix", "mtp"};
  p = ComposeProfile(VllmH100(), "llama-3.1-8b", ngram);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->drafters.size(), 1u);
  EXPECT_EQ(p->drafters.begin()->first, "mtp");
}

TEST(ComposeProfileDrafters, RoundTripThroughJson) {
  const Profile& p = ComposedLlama();
  const nlohmann::json j = ProfileToJson(p);
  ASSERT_TRUE(j.contains("drafters"));
  auto back = ProfileFromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->drafters.size(), p.drafters.size());
  for (const auto& [name, d] : p.drafters) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(back->drafters.count(name));
    const DrafterProfile& e = back->drafters.at(name);
    EXPECT_EQ(DrafterArchToJson(e.arch), DrafterArchToJson(d.arch));
    EXPECT_EQ(e.table.s_grid, d.table.s_grid);
    EXPECT_EQ(e.table.c_grid, d.table.c_grid);
    EXPECT_EQ(e.table.b_grid, d.table.b_grid);
    EXPECT_EQ(e.table.seconds, d.table.seconds);  // bit for bit
    EXPECT_EQ(e.table.batch_seconds, d.table.batch_seconds);
  }
  EXPECT_EQ(ProfileToJson(*back), j);
}

void ExpectRefusedProfile(const nlohmann::json& j, const std::string& message) {
  auto p = ProfileFromJson(j);
  ASSERT_FALSE(p.ok()) << message;
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(p.status().message()), HasSubstr(message));
}

TEST(ComposeProfileDrafters, BadDraftersJsonIsRefusedNamingTheField) {
  const nlohmann::json good = ProfileToJson(ComposedLlama());
  nlohmann::json j = good;
  j["drafters"] = nlohmann::json::array();
  ExpectRefusedProfile(j, "drafters: expected an object");

  j = good;
  j["drafters"]["eagle3"].erase("arch");
  ExpectRefusedProfile(j, "drafters.eagle3: expected an object with \"arch\" and \"table\"");

  j = good;
  j["drafters"]["mtp"] = 7;
  ExpectRefusedProfile(j, "drafters.mtp: expected an object with \"arch\" and \"table\"");

  j = good;
  j["drafters"]["eagle3"]["table"] = 5;
  ExpectRefusedProfile(j, "drafters.eagle3.table: expected an object");

  j = good;
  j["drafters"]["eagle3"]["table"].erase("seconds");
  ExpectRefusedProfile(j, "drafters.eagle3.table");

  j = good;
  j["drafters"]["eagle"]["arch"].erase("qkv_in");
  ExpectRefusedProfile(j, "drafters.eagle.arch");
  ExpectRefusedProfile(j, "missing \"qkv_in\"");

  j = good;
  j["drafters"]["eagle"]["arch"]["kind"] = "medusa";
  ExpectRefusedProfile(j, "drafters.eagle.arch");
}

TEST(ComposeProfileDrafters, BundledVllmH100LlamaHoldsTheComposedHeads) {
  auto p = LoadProfile(::specplan::test_paths::SourceDir() +
                       "/calib/h100-sxm/llama-3.1-8b-bf16@vllm.json");
  ASSERT_TRUE(p.ok()) << p.status();
  for (const char* name : {"eagle", "eagle3", "mtp"}) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(p->drafters.count(name));
    const DrafterProfile& d = p->drafters.at(name);
    EXPECT_EQ(DrafterArchToJson(d.arch), DrafterArchToJson(Arch(name)));
    // The shipped cells are this composer's on the shipped slice (s = 4 and 1, c = 1024).
    const DrafterArch a = Arch(name);
    const ComposedCost layers = LayersOf(a);
    const auto& cg = d.table.c_grid;
    const auto& sg = d.table.s_grid;
    const size_t ci = static_cast<size_t>(std::find(cg.begin(), cg.end(), 1024) - cg.begin());
    ASSERT_LT(ci, cg.size());
    for (size_t si : {size_t{0}, size_t{3}}) {
      const double want = DrafterPass(layers, a, 1, sg[si], 1024).total_s();
      EXPECT_NEAR(d.table.seconds[ci][si], want, 1e-12 * want) << "s = " << sg[si];
    }
  }
}

}  // namespace
}  // namespace specplan::costmodel
