#include "service/profile_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "util/status_macros.h"

namespace specplan::service {

namespace fs = std::filesystem;

namespace {

absl::Status CheckPathComponent(const char* field, const std::string& value) {
  if (value.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must not be empty"));
  }
  if (value == "." || value == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat(field, " = '", value, "': not a valid file name component"));
  }
  for (char ch : value) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " = '", value,
                       "': only letters, digits, '.', '_' and '-' are allowed (it names a file)"));
    }
  }
  if (value.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", value.size(), " characters, at most 128 allowed"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateProfileNames(const costmodel::Profile& profile) {
  SPECPLAN_RETURN_IF_ERROR(CheckPathComponent("gpu", profile.gpu));
  SPECPLAN_RETURN_IF_ERROR(CheckPathComponent("model", profile.model));
  // The engine names the file too ("@<engine>"): only the canonical names are accepted ("" is
  // specplan's own runtime, as in costmodel::ProfileId).
  if (profile.engine.empty()) return absl::OkStatus();
  auto engine = costmodel::ParseEngine(profile.engine);
  if (!engine.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine = '", profile.engine,
                     "': unknown (known: ", absl::StrJoin(costmodel::KnownEngines(), ", "), ")"));
  }
  if (*engine != profile.engine) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine = '", profile.engine, "': write its canonical name '", *engine, "'"));
  }
  return absl::OkStatus();
}

ProfileStore::ProfileStore(std::string dir, double ema_alpha, Env* env)
    : dir_(std::move(dir)), ema_alpha_(ema_alpha), env_(env) {}

absl::StatusOr<std::shared_ptr<ProfileStore::Entry>> ProfileStore::MakeEntry(
    costmodel::Profile profile, std::string path) {
  if (profile.engine.empty()) profile.engine = costmodel::kRuntimeEngine;
  auto entry = std::make_shared<Entry>();
  entry->id =
      ProfileId(profile.gpu, profile.model, profile.dtype, profile.model_spec.tp, profile.engine);
  entry->path = std::move(path);
  for (const std::string& kind : costmodel::LatencyModelKinds()) {
    auto model = costmodel::MakeLatencyModel(profile, kind);
    if (model.ok()) {
      entry->models[kind] = std::shared_ptr<const costmodel::LatencyModel>(std::move(*model));
    } else if (model.status().code() != absl::StatusCode::kNotFound) {
      return model.status();
    }
  }
  SPECPLAN_ASSIGN_OR_RETURN(auto def, costmodel::MakeLatencyModel(profile));
  entry->default_model = std::shared_ptr<const costmodel::LatencyModel>(std::move(def));
  entry->json_text = costmodel::ProfileToJson(profile).dump(2);
  entry->profile = std::move(profile);
  return entry;
}

std::vector<std::string> ProfileStore::LoadAll() {
  std::vector<std::string> errors;
  std::map<std::string, std::shared_ptr<const Entry>> loaded;
  std::error_code ec;
  if (fs::is_directory(dir_, ec)) {
    std::vector<fs::path> files;
    for (auto it = fs::recursive_directory_iterator(dir_, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const fs::path& p = it->path();
      if (it->is_regular_file(ec) && p.extension() == ".json") files.push_back(p);
    }
    if (ec) errors.push_back(absl::StrCat(dir_, ": ", ec.message()));
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      auto profile = costmodel::LoadProfile(p.string());
      if (!profile.ok()) {
        errors.push_back(absl::StrCat(p.string(), ": ", profile.status().message()));
        continue;
      }
      if (absl::Status st = ValidateProfileNames(*profile); !st.ok()) {
        errors.push_back(absl::StrCat(p.string(), ": ", st.message()));
        continue;
      }
      auto entry = MakeEntry(*std::move(profile), p.string());
      if (!entry.ok()) {
        errors.push_back(absl::StrCat(p.string(), ": ", entry.status().message()));
        continue;
      }
      auto existing = loaded.find((*entry)->id);
      if (existing != loaded.end()) {
        // Two files hold the same id: the canonical file (the one Put writes) wins.
        const costmodel::Profile& q = (*entry)->profile;
        const bool canonical = fs::path(costmodel::BundledProfilePath(
                                   dir_, q.gpu, q.model, q.dtype, q.model_spec.tp, q.engine)) == p;
        if (canonical) {
          errors.push_back(absl::StrCat(existing->second->path, ": duplicate profile id '",
                                        (*entry)->id, "' (", p.string(),
                                        " is the canonical file); skipped"));
          (*entry)->feedback = std::make_shared<Feedback>();
          (*entry)->feedback->ema =
              std::make_shared<costmodel::EmaCorrectedLatency>((*entry)->default_model, ema_alpha_);
          existing->second = *std::move(entry);
          continue;
        }
        errors.push_back(absl::StrCat(p.string(), ": duplicate profile id '", (*entry)->id,
                                      "' (already loaded from ", loaded[(*entry)->id]->path,
                                      "); skipped"));
        continue;
      }
      (*entry)->feedback = std::make_shared<Feedback>();
      (*entry)->feedback->ema =
          std::make_shared<costmodel::EmaCorrectedLatency>((*entry)->default_model, ema_alpha_);
      loaded[(*entry)->id] = *std::move(entry);
    }
  } else if (fs::exists(dir_, ec)) {
    errors.push_back(absl::StrCat(dir_, ": not a directory"));
  }
  {
    std::unique_lock lock(mu_);
    entries_ = std::move(loaded);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return errors;
}

std::vector<std::shared_ptr<const ProfileStore::Entry>> ProfileStore::List() const {
  std::shared_lock lock(mu_);
  std::vector<std::shared_ptr<const Entry>> out;
  out.reserve(entries_.size());
  for (const auto& [id, entry] : entries_) out.push_back(entry);
  return out;
}

std::shared_ptr<const ProfileStore::Entry> ProfileStore::Find(const std::string& id) const {
  std::shared_lock lock(mu_);
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<const ProfileStore::Entry>> ProfileStore::Put(
    costmodel::Profile profile, bool* replaced) {
  SPECPLAN_RETURN_IF_ERROR(ValidateProfileNames(profile));
  const std::string path = costmodel::BundledProfilePath(
      dir_, profile.gpu, profile.model, profile.dtype, profile.model_spec.tp, profile.engine);
  // Build the entry (and its models) before touching the disk: a profile that cannot serve is
  // refused without writing.
  SPECPLAN_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, MakeEntry(profile, path));

  std::lock_guard write_lock(write_mu_);
  SPECPLAN_RETURN_IF_ERROR(costmodel::SaveProfile(profile, path, env_));
  std::shared_ptr<const Entry> old = Find(entry->id);
  entry->feedback = old != nullptr ? old->feedback : std::make_shared<Feedback>();
  {
    std::lock_guard feedback_lock(entry->feedback->mu);
    entry->feedback->ema =
        std::make_shared<costmodel::EmaCorrectedLatency>(entry->default_model, ema_alpha_);
  }
  {
    std::unique_lock lock(mu_);
    // A profile loaded under another file name keeps that file; the new one is authoritative.
    *replaced = entries_.count(entry->id) > 0;
    entries_[entry->id] = entry;
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return std::shared_ptr<const Entry>(entry);
}

void ProfileStore::ReadFeedback(const Entry& entry, AcceptanceSnapshot* acceptance,
                                CorrectionSnapshot* correction) {
  std::lock_guard lock(entry.feedback->mu);
  *acceptance = entry.feedback->acceptance;
  acceptance->realised_over_expected_recent = entry.feedback->estimator.kappa();
  const auto& ema = entry.feedback->ema;
  correction->base_model = entry.default_model->Kind();
  correction->alpha = ema->alpha();
  correction->bias = ema->bias();
  correction->observations = ema->observations();
}

std::shared_ptr<const costmodel::LatencyModel> ProfileStore::EmaModel(const Entry& entry) {
  std::lock_guard lock(entry.feedback->mu);
  return entry.feedback->ema;
}

absl::Status ProfileStore::Report(const std::string& id,
                                  const std::vector<AcceptanceReport>& reports,
                                  AcceptanceSnapshot* acceptance, CorrectionSnapshot* correction) {
  std::shared_ptr<const Entry> entry = Find(id);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("profile: no profile '", id, "' on this server"));
  }
  {
    std::lock_guard lock(entry->feedback->mu);
    AcceptanceSnapshot& a = entry->feedback->acceptance;
    for (const AcceptanceReport& r : reports) {
      ++a.steps;
      a.accepted_tokens += r.accepted_length;
      a.draft_nodes += r.draft_nodes;
      if (r.expected_accepted > 0) {
        ++a.expected_steps;
        a.sum_realised_over_expected += (r.accepted_length + 1.0) / r.expected_accepted;
        entry->feedback->estimator.ObserveSurrogate(r.expected_accepted, r.accepted_length);
      }
      if (r.verify_s > 0) {
        entry->feedback->ema->Observe(int64_t{r.draft_nodes} + 1, r.context_tokens, r.verify_s);
      }
    }
  }
  ReadFeedback(*entry, acceptance, correction);
  return absl::OkStatus();
}

}  // namespace specplan::service
