#include "service/request_stats.h"

#include <algorithm>
#include <cmath>

#include "util/enum_names.h"
#include "util/percentile.h"

namespace specplan::service {

namespace {

constexpr EnumEntry<Method> kMethodNames[] = {{Method::kPlanTree, "PlanTree"},
                                              {Method::kPlanSession, "PlanSession"},
                                              {Method::kMergeTrees, "MergeTrees"},
                                              {Method::kEstimateLatency, "EstimateLatency"},
                                              {Method::kListProfiles, "ListProfiles"},
                                              {Method::kGetProfile, "GetProfile"},
                                              {Method::kPutProfile, "PutProfile"},
                                              {Method::kReportAcceptance, "ReportAcceptance"},
                                              {Method::kGetStats, "GetStats"},
                                              {Method::kPing, "Ping"},
                                              {Method::kWhatIf, "WhatIf"},
                                              {Method::kPlanBatch, "PlanBatch"},
                                              {Method::kWhatIfOnline, "WhatIfOnline"}};

}  // namespace

const char* MethodName(Method m) { return EnumName(kMethodNames, m); }

RequestStats::RequestStats() : start_(std::chrono::steady_clock::now()) {
  for (PerMethod& m : methods_) m.ring.reserve(kWindow);
}

void RequestStats::Record(Method m, double micros, bool ok) {
  PerMethod& pm = methods_[static_cast<int>(m)];
  std::lock_guard lock(pm.mu);
  ++pm.requests;
  if (!ok) ++pm.errors;
  if (static_cast<int>(pm.ring.size()) < kWindow) {
    pm.ring.push_back(micros);
  } else {
    pm.ring[pm.next] = micros;
    pm.next = (pm.next + 1) % kWindow;
  }
}

std::vector<MethodSummary> RequestStats::Summaries() const {
  std::vector<MethodSummary> out;
  std::vector<double> sorted;
  for (int i = 0; i < static_cast<int>(Method::kCount); ++i) {
    const PerMethod& pm = methods_[i];
    MethodSummary s;
    {
      std::lock_guard lock(pm.mu);
      if (pm.requests == 0) continue;
      s.requests = pm.requests;
      s.errors = pm.errors;
      sorted = pm.ring;
    }
    s.method = MethodName(static_cast<Method>(i));
    std::sort(sorted.begin(), sorted.end());
    s.p50_us = Percentile(sorted, 0.50);
    s.p90_us = Percentile(sorted, 0.90);
    s.p99_us = Percentile(sorted, 0.99);
    s.max_us = sorted.empty() ? 0 : sorted.back();
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(),
            [](const MethodSummary& a, const MethodSummary& b) { return a.method < b.method; });
  return out;
}

double RequestStats::UptimeSeconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

}  // namespace specplan::service
