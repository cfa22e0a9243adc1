#include "service/profile_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodel/latency/ema_latency.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile_json.h"
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

std::map<std::string, ProfileStore::FileSig> ProfileStore::ScanFiles(
    std::vector<std::string>* errors) const {
  std::map<std::string, FileSig> files;
  std::error_code ec;
  if (fs::is_directory(dir_, ec)) {
    // Directory symlinks are followed (a Kubernetes ConfigMap volume is a tree of symlinks into
    // a hidden "..data" directory that is swapped atomically on update); names starting with '.'
    // are skipped (that hidden copy, editors' temp files); depth is bounded (symlink loops).
    for (auto it =
             fs::recursive_directory_iterator(dir_,
                                              fs::directory_options::follow_directory_symlink |
                                                  fs::directory_options::skip_permission_denied,
                                              ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const fs::path& p = it->path();
      if (p.filename().string().rfind('.', 0) == 0 || it.depth() > 8) {
        it.disable_recursion_pending();
        continue;
      }
      std::error_code fec;
      if (!it->is_regular_file(fec) || p.extension() != ".json") continue;
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) continue;  // removed between listing and stat
      files[p.string()] =
          FileSig{int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                  static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
    }
    if (ec) errors->push_back(absl::StrCat(dir_, ": ", ec.message()));
  } else if (fs::exists(dir_, ec)) {
    errors->push_back(absl::StrCat(dir_, ": not a directory"));
  }
  return files;
}

absl::StatusOr<std::shared_ptr<ProfileStore::Entry>> ProfileStore::LoadEntry(
    const std::string& path) {
  struct stat st {};
  const bool has_stat = ::stat(path.c_str(), &st) == 0;
  SPECPLAN_ASSIGN_OR_RETURN(costmodel::Profile profile, costmodel::LoadProfile(path));
  SPECPLAN_RETURN_IF_ERROR(ValidateProfileNames(profile));
  SPECPLAN_ASSIGN_OR_RETURN(std::shared_ptr<Entry> entry, MakeEntry(std::move(profile), path));
  entry->file_mtime_unix_s = has_stat ? static_cast<int64_t>(st.st_mtim.tv_sec) : 0;
  entry->loaded_unix_s = static_cast<int64_t>(std::time(nullptr));
  return entry;
}

void ProfileStore::AttachFeedback(Entry* entry, const std::shared_ptr<Feedback>& previous) const {
  entry->feedback = previous != nullptr ? previous : std::make_shared<Feedback>();
  std::lock_guard feedback_lock(entry->feedback->mu);
  entry->feedback->ema =
      std::make_shared<costmodel::EmaCorrectedLatency>(entry->default_model, ema_alpha_);
}

std::vector<std::string> ProfileStore::LoadAll() {
  std::lock_guard write_lock(write_mu_);
  std::vector<std::string> errors;
  std::map<std::string, std::shared_ptr<const Entry>> loaded;
  const std::map<std::string, FileSig> files = ScanFiles(&errors);
  for (const auto& [path, sig] : files) {  // sorted by path
    const fs::path p(path);
    auto entry = LoadEntry(path);
    if (!entry.ok()) {
      errors.push_back(absl::StrCat(path, ": ", entry.status().message()));
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
                                      (*entry)->id, "' (", path,
                                      " is the canonical file); skipped"));
        AttachFeedback(entry->get(), nullptr);
        existing->second = *std::move(entry);
        continue;
      }
      errors.push_back(absl::StrCat(path, ": duplicate profile id '", (*entry)->id,
                                    "' (already loaded from ", existing->second->path,
                                    "); skipped"));
      continue;
    }
    AttachFeedback(entry->get(), nullptr);
    loaded[(*entry)->id] = *std::move(entry);
  }
  seen_ = files;
  {
    std::unique_lock lock(mu_);
    entries_ = std::move(loaded);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return errors;
}

ProfileStore::ReloadResult ProfileStore::Reload() {
  std::lock_guard write_lock(write_mu_);
  ReloadResult result;
  const std::map<std::string, FileSig> files = ScanFiles(&result.errors);
  std::map<std::string, std::shared_ptr<const Entry>> next;
  {
    std::shared_lock lock(mu_);
    next = entries_;
  }
  // Profiles whose file is gone stop being served.
  for (auto it = next.begin(); it != next.end();) {
    if (files.count(it->second->path) == 0) {
      result.removed.push_back(it->first);
      it = next.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [path, sig] : files) {
    auto seen = seen_.find(path);
    if (seen != seen_.end() && seen->second == sig) continue;  // unchanged since last read
    auto entry = LoadEntry(path);
    if (!entry.ok()) {
      const absl::string_view msg = entry.status().message();
      result.errors.push_back(absl::StrCat(absl::StartsWith(msg, path) ? "" : path + ": ", msg,
                                           " (refused; the version loaded before, if any, keeps "
                                           "serving)"));
      continue;
    }
    const std::string& id = (*entry)->id;
    auto existing = next.find(id);
    if (existing != next.end() && existing->second->path != path) {
      const costmodel::Profile& q = (*entry)->profile;
      const bool canonical =
          fs::path(costmodel::BundledProfilePath(dir_, q.gpu, q.model, q.dtype, q.model_spec.tp,
                                                 q.engine)) == fs::path(path);
      if (!canonical) {
        result.errors.push_back(absl::StrCat(path, ": duplicate profile id '", id,
                                             "' (served from ", existing->second->path,
                                             "); refused"));
        continue;
      }
    }
    // The file may have held another id before (its gpu / model / dtype / engine changed).
    for (auto it = next.begin(); it != next.end();) {
      if (it->second->path == path && it->first != id) {
        result.removed.push_back(it->first);
        it = next.erase(it);
      } else {
        ++it;
      }
    }
    AttachFeedback(entry->get(), existing != next.end() ? existing->second->feedback : nullptr);
    result.loaded.push_back(id);
    next[id] = *std::move(entry);
  }
  seen_ = files;  // a refused file is retried only once it changes again
  if (result.changed()) {
    {
      std::unique_lock lock(mu_);
      entries_ = std::move(next);
    }
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  reloads_.fetch_add(1, std::memory_order_relaxed);
  reload_errors_.fetch_add(static_cast<int64_t>(result.errors.size()), std::memory_order_relaxed);
  return result;
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
  AttachFeedback(entry.get(), old != nullptr ? old->feedback : nullptr);
  // Reload must not read back the file just written (it would restart the EMA again).
  if (struct stat st{}; ::stat(path.c_str(), &st) == 0) {
    seen_[path] = FileSig{int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                          static_cast<int64_t>(st.st_size), static_cast<uint64_t>(st.st_ino)};
    entry->file_mtime_unix_s = static_cast<int64_t>(st.st_mtim.tv_sec);
  }
  entry->loaded_unix_s = static_cast<int64_t>(std::time(nullptr));
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
