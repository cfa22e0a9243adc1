// specplan-loadgen --targets: PlanTree and PlanBatch load across replicas (service/tools/
// fleet_load.h). Over 500 lines because one run paces the load, runs the --event commands, checks
// every answer against in-process planning and reports per segment and per replica.
#include "service/tools/fleet_load.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "planner/marginals/marginals.h"
#include "service/channel.h"
#include "service/planner_service.h"
#include "service/profile_store.h"
#include "service/tools/client_threads.h"
#include "service/tools/pacer.h"
#include "specplan/v1/planner.grpc.pb.h"

namespace specplan::service {

namespace {

using Clock = std::chrono::steady_clock;

std::string Serialise(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One completed call.
struct Sample {
  double start_s;  // since the phase start (the scheduled time when paced)
  float latency_us;
  int16_t version;  // index of the matching expected answer; -1 failed, -2 mismatched
  int16_t replica;  // index into the client's replica names; -1 unknown
  bool batch;
};

struct ClientOut {
  std::vector<Sample> samples;
  std::vector<std::string> replicas;  // names seen, indexed by Sample::replica
  std::string first_failure, first_mismatch;
  absl::Status warmup = absl::OkStatus();
};

class FleetClient : public ClientBase<FleetConfig> {
 public:
  // Round robin over the replicas with the clients' service config (channel.h).
  FleetClient(const FleetConfig& config, int index)
      : ClientBase(config, index, NewClientStub(config.target, PlannerChannelArguments())) {}

  // One call of input `i`; sets *version (-1 failed, -2 mismatched), *replica, and the messages.
  void Call(size_t i, double t_s, int16_t* version, int16_t* replica, ClientOut* out) {
    const FleetInput& in = config_.inputs[i];
    grpc::ClientContext ctx;
    SetDeadline(&ctx, config_.deadline_s);
    grpc::Status st;
    std::string got;
    if (in.batch) {
      st = stub_->PlanBatch(&ctx, in.batch_request, &batch_resp_);
      if (st.ok()) got = NormalisedReply(batch_resp_);
    } else {
      st = stub_->PlanTree(&ctx, in.tree, &tree_resp_);
      if (st.ok()) got = NormalisedReply(tree_resp_);
    }
    *replica = -1;
    const auto& md = ctx.GetServerTrailingMetadata();
    if (auto it = md.find("x-replica"); it != md.end()) {
      const std::string name(it->second.data(), it->second.size());
      auto pos = std::find(out->replicas.begin(), out->replicas.end(), name);
      if (pos == out->replicas.end()) pos = out->replicas.insert(out->replicas.end(), name);
      *replica = static_cast<int16_t>(pos - out->replicas.begin());
    }
    const char* rpc = in.batch ? "PlanBatch" : "PlanTree";
    if (!st.ok()) {
      *version = -1;
      if (out->first_failure.empty()) {
        out->first_failure = absl::StrFormat("t=%.2fs %s input %d: %s: %s", t_s, rpc, i,
                                             GrpcCodeName(st.error_code()), st.error_message());
      }
      return;
    }
    for (size_t v = 0; v < in.expected.size(); ++v) {
      if (got == in.expected[v]) {
        *version = static_cast<int16_t>(v);
        return;
      }
    }
    *version = -2;
    if (out->first_mismatch.empty()) {
      out->first_mismatch = absl::StrFormat(
          "t=%.2fs %s input %d: the answer equals none of the %d expected (in-process) answers",
          t_s, rpc, i, in.expected.size());
    }
  }

  void Run(Phase* phase, ClientOut* out) {
    for (int w = 0; w < config_.warmup_per_client; ++w) {
      int16_t version = 0, replica = 0;
      ClientOut scratch;
      Call((index_ + w) % config_.inputs.size(), 0, &version, &replica, &scratch);
      if (version == -1) {
        out->warmup = absl::UnavailableError(absl::StrCat(
            "--targets ", config_.target, ": warm-up failed: ", scratch.first_failure));
        break;
      }
    }
    Pacer pacer = phase->ArriveAndWait(config_, index_);
    if (!out->warmup.ok()) return;
    out->samples.reserve(static_cast<size_t>(CallsToReserve(config_, int64_t{1} << 16)));
    Clock::time_point t0;
    for (size_t i = static_cast<size_t>(index_); pacer.Next(&t0); ++i) {
      const double t_s = Seconds(t0 - phase->start);
      Sample s{t_s, 0, 0, -1, config_.inputs[i % config_.inputs.size()].batch};
      Call(i % config_.inputs.size(), t_s, &s.version, &s.replica, out);
      s.latency_us =
          static_cast<float>(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      out->samples.push_back(s);
    }
  }

 private:
  v1::PlanTreeResponse tree_resp_;
  v1::PlanBatchResponse batch_resp_;
};

double Quantile(std::vector<float>* v, double q) {
  if (v->empty()) return 0;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(q * (v->size() - 1) + 0.5));
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(k), v->end());
  return (*v)[k];
}

}  // namespace

std::string NormalisedReply(v1::PlanTreeResponse reply) {
  reply.clear_plan_us();
  return Serialise(reply);
}

std::string NormalisedReply(v1::PlanBatchResponse reply) {
  reply.clear_plan_us();
  return Serialise(reply);
}

std::vector<FleetInput> MakeFleetInputs(const v1::PlanTreeRequest& plan) {
  std::vector<FleetInput> inputs;
  const int64_t c = std::max<int64_t>(1, plan.cost().context_tokens());
  for (int n_max : {64, 256}) {
    for (int64_t context : {c, 4 * c}) {
      FleetInput in;
      in.tree = plan;
      in.tree.set_n_max(n_max);
      in.tree.mutable_cost()->set_context_tokens(context);
      inputs.push_back(std::move(in));
    }
  }
  FleetInput b;
  b.batch = true;
  v1::PlanBatchRequest& req = b.batch_request;
  *req.mutable_cost() = plan.cost();
  req.mutable_cost()->set_context_tokens(0);
  req.set_mode(v1::BUDGET_MODE_CONTROLLER);
  req.set_n_max(256);
  req.set_layout(v1::BATCH_LAYOUT_RAGGED);
  const double weights[] = {1, 2, 1, 0.5};
  for (int i = 0; i < 4; ++i) {
    v1::BatchEntry* e = req.add_requests();
    *e->mutable_marginals() = plan.marginals();
    e->set_context_tokens(c * (i + 1));
    e->set_weight(weights[i]);
  }
  inputs.push_back(std::move(b));
  return inputs;
}

absl::Status ComputeExpected(const std::vector<std::string>& profile_dirs,
                             std::vector<FleetInput>* inputs) {
  for (FleetInput& in : *inputs) in.expected.clear();
  for (const std::string& dir : profile_dirs) {
    ProfileStore store(dir, 0.1);
    store.LoadAll();
    ServiceOptions options;
    options.log_requests = false;
    PlannerService service(&store, options);
    for (size_t i = 0; i < inputs->size(); ++i) {
      FleetInput& in = (*inputs)[i];
      absl::Status st;
      if (in.batch) {
        v1::PlanBatchResponse resp;
        st = service.DoPlanBatch(in.batch_request, &resp);
        in.expected.push_back(NormalisedReply(resp));
      } else {
        v1::PlanTreeResponse resp;
        st = service.DoPlanTree(in.tree, &resp);
        in.expected.push_back(NormalisedReply(resp));
      }
      if (!st.ok()) {
        return absl::Status(st.code(),
                            absl::StrCat("expected answers from ", dir, ": input ", i, " (",
                                         in.batch ? "PlanBatch" : "PlanTree", "): ", st.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFleetConfig(const FleetConfig& c) {
  if (c.clients < 1)
    return absl::InvalidArgumentError(absl::StrCat("--clients = ", c.clients, ": must be >= 1"));
  if (!(c.seconds > 0 && c.seconds <= 3600)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--seconds = ", c.seconds, ": must be in (0, 3600]"));
  }
  if (!(c.qps >= 0))
    return absl::InvalidArgumentError(absl::StrCat("--qps = ", c.qps, ": must be >= 0"));
  if (!(c.deadline_s > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--deadline-ms = ", c.deadline_s * 1e3, ": must be > 0"));
  }
  if (c.inputs.empty()) return absl::InvalidArgumentError("fleet: no inputs");
  for (size_t i = 1; i < c.events.size(); ++i) {
    if (c.events[i].at_s < c.events[i - 1].at_s) {
      return absl::InvalidArgumentError("--event: times must be increasing");
    }
  }
  for (const FleetEvent& e : c.events) {
    if (!(e.at_s >= 0 && e.at_s < c.seconds)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--event at ", e.at_s, " s ('", e.name, "'): must be in [0, --seconds)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<FleetReport> RunFleet(const FleetConfig& config) {
  if (absl::Status st = ValidateFleetConfig(config); !st.ok()) return st;
  Phase phase;
  std::vector<std::string> event_log;
  // The --event commands run on this thread, at their times, while the clients call.
  std::vector<ClientOut> outs =
      RunClientThreads<FleetClient, ClientOut>(config, &phase, nullptr, [&] {
        for (const FleetEvent& e : config.events) {
          std::this_thread::sleep_until(phase.start + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(e.at_s)));
          const double t = Seconds(Clock::now() - phase.start);
          if (e.run) e.run();
          event_log.push_back(
              absl::StrFormat("t=%.2fs..%.2fs %s", t, Seconds(Clock::now() - phase.start), e.name));
        }
      });
  for (const ClientOut& o : outs) {
    if (!o.warmup.ok()) return o.warmup;
  }

  FleetReport rep;
  rep.target = config.target;
  rep.clients = config.clients;
  rep.target_qps = config.qps;
  rep.seconds = config.seconds;
  rep.event_log = event_log;
  size_t versions = 0;
  for (const FleetInput& in : config.inputs) versions = std::max(versions, in.expected.size());
  rep.per_version.assign(versions, 0);
  rep.first_seen_s.assign(versions, -1);
  rep.last_seen_s.assign(versions, -1);
  // Segments: [0, e1), [e1, e2), ..., [ek, seconds].
  std::vector<double> bounds = {0};
  std::vector<std::string> names = {"start"};
  for (const FleetEvent& e : config.events) {
    bounds.push_back(e.at_s);
    names.push_back(e.name);
  }
  bounds.push_back(config.seconds);
  const size_t nseg = names.size();
  rep.segments.resize(nseg);
  std::vector<std::vector<float>> seg_lat(nseg);
  std::vector<float> all_lat;
  for (size_t s = 0; s < nseg; ++s) {
    rep.segments[s].name = names[s];
    rep.segments[s].from_s = bounds[s];
    rep.segments[s].to_s = bounds[s + 1];
    rep.segments[s].per_version.assign(versions, 0);
  }
  for (const ClientOut& o : outs) {
    if (rep.first_failure.empty()) rep.first_failure = o.first_failure;
    if (rep.first_mismatch.empty()) rep.first_mismatch = o.first_mismatch;
    for (const Sample& x : o.samples) {
      size_t s = static_cast<size_t>(
          std::upper_bound(bounds.begin() + 1, bounds.end() - 1, x.start_s) - (bounds.begin() + 1));
      s = std::min(s, nseg - 1);
      FleetSegment& seg = rep.segments[s];
      ++seg.requests;
      ++rep.requests;
      ++(x.batch ? rep.plan_batch : rep.plan_tree);
      seg_lat[s].push_back(x.latency_us);
      all_lat.push_back(x.latency_us);
      if (x.replica >= 0) {
        ++seg.per_replica[o.replicas[x.replica]];
        ++rep.per_replica[o.replicas[x.replica]];
      }
      if (x.version == -1) {
        ++seg.failed;
        ++rep.failed;
      } else if (x.version == -2) {
        ++seg.mismatched;
        ++rep.mismatched;
        ++rep.checked;
      } else {
        ++rep.checked;
        ++seg.per_version[x.version];
        ++rep.per_version[x.version];
        double& first = rep.first_seen_s[x.version];
        double& last = rep.last_seen_s[x.version];
        if (first < 0 || x.start_s < first) first = x.start_s;
        last = std::max(last, x.start_s);
      }
    }
  }
  for (size_t s = 0; s < nseg; ++s) {
    FleetSegment& seg = rep.segments[s];
    const double len = seg.to_s - seg.from_s;
    seg.qps = len > 0 ? seg.requests / len : 0;
    seg.p50_us = Quantile(&seg_lat[s], 0.50);
    seg.p99_us = Quantile(&seg_lat[s], 0.99);
    seg.max_us = seg_lat[s].empty() ? 0 : *std::max_element(seg_lat[s].begin(), seg_lat[s].end());
  }
  rep.qps = rep.requests / config.seconds;
  rep.p50_us = Quantile(&all_lat, 0.50);
  rep.p99_us = Quantile(&all_lat, 0.99);
  rep.max_us = all_lat.empty() ? 0 : *std::max_element(all_lat.begin(), all_lat.end());
  return rep;
}

std::string FormatFleetReport(const FleetReport& r) {
  std::string out = absl::StrFormat(
      "target %s, %d clients, %s, %.0f s\n", r.target, r.clients,
      r.target_qps > 0 ? absl::StrFormat("paced at %.0f/s", r.target_qps) : "flat out", r.seconds);
  absl::StrAppend(&out, absl::StrFormat("%-36s %7s %7s %9s %7s %8s %9s %9s %9s  %s\n", "segment",
                                        "from_s", "to_s", "requests", "failed", "mismatch", "qps",
                                        "p50_us", "p99_us", "per replica"));
  auto row = [&](const std::string& name, double from, double to, int64_t req, int64_t failed,
                 int64_t mism, double qps, double p50, double p99,
                 const std::map<std::string, int64_t>& per) {
    std::string reps;
    for (const auto& [k, v] : per) absl::StrAppend(&reps, reps.empty() ? "" : " ", k, "=", v);
    absl::StrAppend(&out, absl::StrFormat("%-36s %7.1f %7.1f %9d %7d %8d %9.0f %9.0f %9.0f  %s\n",
                                          name.substr(0, 36), from, to, req, failed, mism, qps, p50,
                                          p99, reps));
  };
  for (const FleetSegment& s : r.segments) {
    row(s.name, s.from_s, s.to_s, s.requests, s.failed, s.mismatched, s.qps, s.p50_us, s.p99_us,
        s.per_replica);
    if (r.per_version.size() > 1) {
      std::string versions;
      for (size_t v = 0; v < s.per_version.size(); ++v) {
        absl::StrAppend(&versions, v ? ", " : "", "v", v, "=", s.per_version[v]);
      }
      absl::StrAppend(&out, "    answers by profile version: ", versions, "\n");
    }
  }
  row("all", 0, r.seconds, r.requests, r.failed, r.mismatched, r.qps, r.p50_us, r.p99_us,
      r.per_replica);
  absl::StrAppend(
      &out, absl::StrFormat("calls: %d PlanTree + %d PlanBatch; %d failed; %d answers checked "
                            "against in-process planning, %d mismatched\n",
                            r.plan_tree, r.plan_batch, r.failed, r.checked, r.mismatched));
  for (size_t v = 0; v < r.per_version.size(); ++v) {
    absl::StrAppend(
        &out, absl::StrFormat("profile version %d: %d answers, first at %.2f s, last at %.2f s\n",
                              v, r.per_version[v], r.first_seen_s[v], r.last_seen_s[v]));
  }
  for (const std::string& e : r.event_log) absl::StrAppend(&out, "event ", e, "\n");
  if (!r.first_failure.empty()) absl::StrAppend(&out, "first failure: ", r.first_failure, "\n");
  if (!r.first_mismatch.empty()) absl::StrAppend(&out, "first mismatch: ", r.first_mismatch, "\n");
  return out;
}

// Every field under its own name but event_log, written "events" (a run always has its "start"
// segment, so "segments" is never empty).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FleetSegment, name, from_s, to_s, requests, failed, mismatched,
                                   qps, p50_us, p99_us, max_us, per_replica, per_version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FleetReport, target, clients, target_qps, seconds, requests,
                                   failed, mismatched, checked, plan_tree, plan_batch, qps, p50_us,
                                   p99_us, max_us, per_replica, per_version, first_seen_s,
                                   last_seen_s, first_failure, first_mismatch, segments)

nlohmann::json FleetReportToJson(const FleetReport& r) {
  nlohmann::json j = r;
  j["events"] = r.event_log;
  return j;
}

int FleetMain(const std::string& targets, bool allow_remote, const std::string& profiles_dir,
              std::vector<std::string> expect_profiles, const std::vector<std::string>& events,
              const LoadConfig& base, double at_fraction, double probe_seconds,
              const std::string& scaling_baseline, bool json, const std::string& marginals_path,
              int n_max, int64_t context, const std::string& gpu, const std::string& model,
              const std::string& profile, bool engine_outputs) {
  auto fail = [](const std::string& msg) {
    std::cerr << "specplan-loadgen: " << msg << "\n";
    return 1;
  };
  auto target = PlannerTarget(targets, "--targets");
  if (!target.ok()) return fail(std::string(target.status().message()));
  if (!allow_remote) {
    std::string list = *target;
    for (const char* prefix : {"ipv4:", "ipv6:"}) {
      if (absl::StartsWith(list, prefix)) list = list.substr(std::strlen(prefix));
    }
    for (absl::string_view one : absl::StrSplit(list, ',')) {
      if (absl::Status st = CheckLoopbackTarget(std::string(one)); !st.ok()) {
        return fail(absl::StrCat("--targets: ", st.message()));
      }
    }
  }
  auto marginals = planner::LoadMarginalsFile(marginals_path);
  if (!marginals.ok()) return fail(absl::StrCat("--marginals ", marginals.status().message()));
  std::vector<FleetInput> inputs = MakeFleetInputs(
      MakePlanRequest(*marginals, n_max, context, gpu, model, profile, engine_outputs));
  if (expect_profiles.empty()) expect_profiles.push_back(profiles_dir);
  if (absl::Status st = ComputeExpected(expect_profiles, &inputs); !st.ok()) {
    return fail(absl::StrCat("--expect-profiles: ", st.message()));
  }
  FleetConfig config;
  config.target = *target;
  config.clients = base.clients;
  config.seconds = base.seconds;
  config.qps = base.qps;
  config.deadline_s = base.deadline_s;
  config.inputs = inputs;
  for (const std::string& spec : events) {
    const size_t eq = spec.find('=');
    double at = 0;
    if (eq == std::string::npos || !absl::SimpleAtod(spec.substr(0, eq), &at) ||
        eq + 1 >= spec.size()) {
      return fail(absl::StrCat("--event = '", spec, "': expected AT_SECONDS=COMMAND"));
    }
    const std::string command = spec.substr(eq + 1);
    config.events.push_back(FleetEvent{at, command, [command] {
                                         const int rc = std::system(command.c_str());
                                         if (rc != 0) {
                                           std::cerr << "specplan-loadgen: --event '" << command
                                                     << "' exited with status " << rc << "\n";
                                         }
                                       }});
  }
  std::stable_sort(config.events.begin(), config.events.end(),
                   [](const FleetEvent& a, const FleetEvent& b) { return a.at_s < b.at_s; });
  if (absl::Status st = ValidateFleetConfig(config); !st.ok())
    return fail(std::string(st.message()));

  nlohmann::json j;
  double baseline_qps = 0, max_qps = 0;
  auto probe = [&](const std::string& t) -> absl::StatusOr<FleetReport> {
    FleetConfig p = config;
    p.target = t;
    p.qps = 0;
    p.seconds = probe_seconds;
    p.events.clear();
    return RunFleet(p);
  };
  if (!scaling_baseline.empty()) {
    auto one = PlannerTarget(scaling_baseline, "--scaling-baseline");
    if (!one.ok()) return fail(std::string(one.status().message()));
    auto b = probe(*one);
    if (!b.ok()) return fail(std::string(b.status().message()));
    auto all = probe(config.target);
    if (!all.ok()) return fail(std::string(all.status().message()));
    baseline_qps = b->qps;
    max_qps = all->qps;
    j["scaling"] = {{"baseline", scaling_baseline},
                    {"baseline_qps", b->qps},
                    {"targets_qps", all->qps},
                    {"ratio", b->qps > 0 ? all->qps / b->qps : 0},
                    {"baseline_failed", b->failed + b->mismatched},
                    {"targets_failed", all->failed + all->mismatched}};
    if (!json) {
      std::cout << absl::StrFormat(
          "scaling (flat out, %.0f s each, %d clients): 1 replica %s %.0f/s; %s %.0f/s; "
          "ratio %.2f\n",
          probe_seconds, config.clients, scaling_baseline, b->qps, targets, all->qps,
          b->qps > 0 ? all->qps / b->qps : 0);
    }
  }
  if (at_fraction > 0 && config.qps == 0) {
    if (max_qps == 0) {
      auto all = probe(config.target);
      if (!all.ok()) return fail(std::string(all.status().message()));
      max_qps = all->qps;
    }
    config.qps = std::max(1.0, at_fraction * max_qps);
    j["probe_max_qps"] = max_qps;
    if (!json) {
      std::cout << absl::StrFormat("probe (flat out, %.0f s): %.0f/s -> paced at %.0f/s\n",
                                   probe_seconds, max_qps, config.qps);
    }
  }
  auto rep = RunFleet(config);
  if (!rep.ok()) return fail(std::string(rep.status().message()));
  if (json) {
    j["run"] = FleetReportToJson(*rep);
    std::cout << j.dump(2) << std::endl;
  } else {
    std::cout << FormatFleetReport(*rep);
  }
  (void)baseline_qps;
  return rep->failed + rep->mismatched > 0 ? 3 : 0;
}

}  // namespace specplan::service
