// service/cost_resolver.h: resolved cost sources are cached by source (the same model object for
// a repeated spec), re-resolved after the store changes, bounded, and safe under concurrent use.
#include "service/cost_resolver.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "service_test_util.h"

namespace specplan::service {
namespace {

using namespace specplan::service::testing;

v1::CostSpec GridCost(double scale) {
  v1::CostSpec cost;
  for (int s : {1, 8, 64}) {
    cost.mutable_latency_grid()->add_s(s);
    cost.mutable_latency_grid()->add_seconds(scale * 1e-3 * s);
  }
  return cost;
}

TEST(CostResolver, RepeatedSourcesShareOneModel) {
  ProfileStore store(TempDir("resolver_share").string(), 0.1);
  CostResolver resolver(&store, ServiceLimits());
  v1::CostSpec a = InlineCost(100);
  v1::CostSpec b = InlineCost(900);  // same source, other context and drafter
  b.mutable_drafter()->set_t_net_s(1e-3);
  auto ra = resolver.Resolve(a, 16, "cost");
  auto rb = resolver.Resolve(b, 16, "cost");
  ASSERT_TRUE(ra.ok() && rb.ok());
  EXPECT_EQ(ra->source.get(), rb->source.get());
  EXPECT_EQ(ra->context, 100);
  EXPECT_EQ(rb->context, 900);
  EXPECT_EQ(rb->drafter.t_net_s, 1e-3);
  EXPECT_EQ(ra->latency_kind(), "roofline");
  EXPECT_EQ(ra->profile_id(), "");
  auto g1 = resolver.Resolve(GridCost(1), 16, "cost");
  auto g2 = resolver.Resolve(GridCost(2), 16, "cost");
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_NE(g1->source.get(), g2->source.get());
  EXPECT_EQ(g1->latency_kind(), "grid");
  EXPECT_EQ(resolver.cached(), 3u);
  // Errors are reported with the field and are not cached.
  v1::CostSpec bad = InlineCost(0);
  bad.mutable_inline_model()->set_model("nosuchmodel");
  auto r = resolver.Resolve(bad, 16, "start.cost");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("start.cost.inline_model.model"), std::string::npos);
  EXPECT_EQ(resolver.cached(), 3u);
}

// Every field of an inline model is part of the source: tensor parallelism and the interconnect of
// an inline GPU spec give other models, not the cached tp = 1 one.
TEST(CostResolver, InlineSourcesDifferingOnlyInTpOrLinkAreNotShared) {
  ProfileStore store(TempDir("resolver_tp").string(), 0.1);
  CostResolver resolver(&store, ServiceLimits());
  v1::CostSpec tp1 = InlineCost(1024);
  v1::CostSpec tp4 = InlineCost(1024);
  tp4.mutable_inline_model()->set_tp(4);
  auto r1 = resolver.Resolve(tp1, 16, "cost");
  auto r4 = resolver.Resolve(tp4, 16, "cost");
  ASSERT_TRUE(r1.ok() && r4.ok()) << r4.status();
  EXPECT_NE(r1->source.get(), r4->source.get());
  EXPECT_EQ(r4->source->model_spec.tp, 4);
  EXPECT_LT(r4->source->latency->VerifySeconds(1, 1024),
            r1->source->latency->VerifySeconds(1, 1024));

  v1::CostSpec fast = InlineCost(1024), slow = InlineCost(1024);
  for (v1::CostSpec* spec : {&fast, &slow}) {
    v1::InlineCostModel* m = spec->mutable_inline_model();
    m->clear_gpu();
    m->set_tp(2);
    m->mutable_gpu_spec()->set_peak_flops(989e12);
    m->mutable_gpu_spec()->set_mem_bw(3.35e12);
    m->mutable_gpu_spec()->set_mem_bytes(80e9);
    m->mutable_gpu_spec()->set_link_latency_s(5e-6);
  }
  fast.mutable_inline_model()->mutable_gpu_spec()->set_link_bw(450e9);
  slow.mutable_inline_model()->mutable_gpu_spec()->set_link_bw(25e9);
  auto rf = resolver.Resolve(fast, 16, "cost");
  auto rs = resolver.Resolve(slow, 16, "cost");
  ASSERT_TRUE(rf.ok() && rs.ok()) << rs.status();
  EXPECT_NE(rf->source.get(), rs->source.get());
  EXPECT_LT(rf->source->latency->VerifySeconds(64, 1024),
            rs->source->latency->VerifySeconds(64, 1024));
  EXPECT_EQ(resolver.cached(), 4u);
}

TEST(CostResolver, ProfilesAreResolvedAgainAfterAPut) {
  ProfileStore store(TempDir("resolver_put").string(), 0.1);
  CostResolver resolver(&store, ServiceLimits());
  const costmodel::Profile p1 = SyntheticProfile(1.0);
  bool replaced = false;
  ASSERT_TRUE(store.Put(p1, &replaced).ok());
  v1::CostSpec spec;
  spec.mutable_profile()->set_gpu(p1.gpu);
  spec.mutable_profile()->set_model(p1.model);
  auto first = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(first->source.get(), again->source.get());
  ASSERT_TRUE(store.Put(SyntheticProfile(3.0), &replaced).ok());
  auto after = resolver.Resolve(spec, 16, "cost");
  ASSERT_TRUE(after.ok());
  EXPECT_NE(after->source->entry.get(), first->source->entry.get());
  EXPECT_EQ(after->source->entry.get(), store.Find(after->profile_id()).get());
  EXPECT_EQ(resolver.cached(), 1u);
}

TEST(CostResolver, CacheIsBoundedAndThreadSafe) {
  ProfileStore store(TempDir("resolver_bound").string(), 0.1);
  CostResolver resolver(&store, ServiceLimits(), /*capacity=*/4);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const v1::CostSpec spec = GridCost(1.0 + (i + t) % 7);
        auto r = resolver.Resolve(spec, 16, "cost");
        if (!r.ok() || r->latency().VerifySeconds(8, 0) != spec.latency_grid().seconds(1)) {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_LE(resolver.cached(), 4u);
}

}  // namespace
}  // namespace specplan::service
