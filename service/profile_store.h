// The server's calibrated profiles: every profile JSON under a directory (calib/<gpu>/<model>-
// <dtype>[-tp<N>][@<engine>].json, format costmodel/profile/profile_json.h), keyed by id
// "<gpu>/<model>-<dtype>[-tp<N>][@<engine>]" (costmodel::ProfileId: "@<engine>" for an engine other
// than "specplan"), plus the online feedback engines report per profile (acceptance statistics and
// the EMA latency correction of BASTION (docs/references.md) App. H.4). One (gpu, model, dtype) may
// be held under several engines, each its own entry.
//
// Thread-safety: every method may be called concurrently. Lookups take a shared lock and hand out
// immutable snapshots (shared_ptr<const Entry>), so a Put never invalidates a plan in flight; Put
// serialises writers, saves atomically (WriteFileAtomically: temp file, fsync, rename, directory
// fsync) and only then swaps the in-memory entry, so a failed write leaves both the file and the
// served profile unchanged, and a crash at any point leaves either the old or the new complete file
// (plus at most a "<name>.json.tmp.<pid>" file, which LoadAll never reads: it loads *.json only).
//
// Shared store (several replicas on one directory): Reload() re-reads only the files whose
// (mtime, size, inode) changed since they were last looked at, so a replica picks up a changed or
// added profile without a restart. Each new version is parsed and its latency models built before
// it is swapped in (one pointer per id under the exclusive lock), so a request sees the old or the
// new profile, never a mix; a file that fails to load is refused with its path named and the
// version loaded before keeps serving; a removed file's profile stops being served. Replace a
// profile by writing a temp file and renaming it over the old one (what Put and
// costmodel::SaveProfile do); a file copied in place may be seen half-written, which is refused
// and re-read at the next Reload once it changes again.
#ifndef SPECPLAN_SERVICE_PROFILE_STORE_H_
#define SPECPLAN_SERVICE_PROFILE_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodel/latency/ema_latency.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/profile/calib_dir.h"
#include "costmodel/profile/profile.h"
#include "planner/acceptance/speculation_gate.h"
#include "util/env.h"

namespace specplan::service {

using costmodel::ProfileId;  // "<gpu>/<model>-<dtype>[@<engine>]" (costmodel/profile/calib_dir.h)

// Checks that a profile's gpu / model names can be used as path components (letters, digits,
// '.', '_', '-'; not "." or "..") and that its engine is a canonical engine name
// (costmodel::KnownEngines; "" = "specplan"). Errors name the field: "gpu = '../x': ...", "engine =
// 'x': ...".
absl::Status ValidateProfileNames(const costmodel::Profile& profile);

// Per-profile acceptance statistics (see AcceptanceStats in planner.proto).
struct AcceptanceSnapshot {
  int64_t steps = 0;
  int64_t accepted_tokens = 0;
  int64_t draft_nodes = 0;
  int64_t expected_steps = 0;             // steps that reported expected_accepted
  double sum_realised_over_expected = 0;  // sum of (accepted + 1) / expected_accepted
  // kappa of the Feedback's planner::AcceptanceEstimator: EMA of (accepted + 1) /
  // expected_accepted over the steps that reported it (1 before any).
  double realised_over_expected_recent = 1;
};

struct CorrectionSnapshot {
  std::string base_model;  // kind of the corrected model
  double alpha = 0;
  double bias = 1;
  int64_t observations = 0;
};

// One reported decoding step (AcceptanceStep in planner.proto), already validated.
struct AcceptanceReport {
  int32_t accepted_length = 0;   // accepted draft tokens (bonus excluded)
  int32_t draft_nodes = 0;       // draft nodes verified
  double expected_accepted = 0;  // Â of the plan, 0 = not reported
  int64_t context_tokens = 0;    // c
  double verify_s = 0;           // measured seconds, 0 = not measured
};

class ProfileStore {
 public:
  // Online state of one id; survives PutProfile (the EMA restarts from bias 1 over the new model).
  struct Feedback {
    mutable std::mutex mu;
    AcceptanceSnapshot acceptance;  // guarded by mu
    // The runtime's speculation-gate estimator, fed the reported (Â, accepted) pairs: its kappa
    // is AcceptanceSnapshot::realised_over_expected_recent. Reports carry no proposed depth, so
    // its per-level acceptance is not fed. Guarded by mu.
    planner::AcceptanceEstimator estimator;
    std::shared_ptr<costmodel::EmaCorrectedLatency> ema;  // guarded by mu (pointer swap only)
  };

  // An immutable snapshot of one loaded profile.
  struct Entry {
    std::string id;
    std::string path;  // the file it was loaded from / saved to
    costmodel::Profile profile;
    std::string json_text;  // ProfileToJson(profile), pretty-printed
    // Every latency model the profile describes, by kind ("roofline" always present).
    std::map<std::string, std::shared_ptr<const costmodel::LatencyModel>> models;
    std::shared_ptr<const costmodel::LatencyModel> default_model;
    std::shared_ptr<Feedback> feedback;  // shared with later versions of the same id
    int64_t file_mtime_unix_s = 0;       // the file's modification time when it was read
    int64_t loaded_unix_s = 0;           // when it was read
  };

  // What one Reload() changed.
  struct ReloadResult {
    std::vector<std::string> loaded;   // ids (re)loaded from a new or changed file
    std::vector<std::string> removed;  // ids whose file is gone
    std::vector<std::string> errors;   // "<path>: <message>" of files refused (old version kept)
    bool changed() const { return !loaded.empty() || !removed.empty(); }
  };

  // `dir` is the profiles directory (it need not exist yet); `ema_alpha` in (0, 1]; Put saves
  // through `env` (util/env.h), which must outlive the store.
  ProfileStore(std::string dir, double ema_alpha, Env* env = Env::Default());

  // Loads every *.json under dir (recursively, following directory symlinks, skipping names that
  // start with '.'), "@<engine>" files included. Files that fail to load
  // are skipped; their errors are returned ("<path>: <message>"). Two files with one id: the
  // canonical one (the file Put writes) wins. Replaces the current contents.
  std::vector<std::string> LoadAll();

  // Re-reads the files that are new or changed since LoadAll / the last Reload (see the top of
  // this file); unchanged files are not read. A refused file is reported once per change.
  // Serialised with Put and other Reloads.
  ReloadResult Reload();
  // Reload() calls so far, and files they refused.
  int64_t reloads() const { return reloads_.load(std::memory_order_relaxed); }
  int64_t reload_errors() const { return reload_errors_.load(std::memory_order_relaxed); }

  const std::string& dir() const { return dir_; }
  double ema_alpha() const { return ema_alpha_; }

  // Sorted by id.
  std::vector<std::shared_ptr<const Entry>> List() const;
  // nullptr when absent.
  std::shared_ptr<const Entry> Find(const std::string& id) const;
  // Increases whenever the served entries change (LoadAll, Put), after the change is visible.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Validates names, saves `profile` atomically to its canonical file
  // (costmodel::BundledProfilePath under dir: <gpu>/<model>-<dtype>[-tp<N>][@<engine>].json), then
  // makes it the served entry for its id. *replaced = an entry with that id existed. On error
  // nothing changes (file or memory).
  absl::StatusOr<std::shared_ptr<const Entry>> Put(costmodel::Profile profile, bool* replaced);

  // Folds validated reports into the id's feedback; NOT_FOUND when the id is absent.
  absl::Status Report(const std::string& id, const std::vector<AcceptanceReport>& reports,
                      AcceptanceSnapshot* acceptance, CorrectionSnapshot* correction);
  // Snapshot of an entry's feedback.
  static void ReadFeedback(const Entry& entry, AcceptanceSnapshot* acceptance,
                           CorrectionSnapshot* correction);
  // The entry's EMA-corrected default model (never null).
  static std::shared_ptr<const costmodel::LatencyModel> EmaModel(const Entry& entry);

 private:
  // A file's identity for Reload: it changed when any of these did.
  struct FileSig {
    int64_t mtime_ns = 0;
    int64_t size = 0;
    uint64_t inode = 0;
    bool operator==(const FileSig& o) const {
      return mtime_ns == o.mtime_ns && size == o.size && inode == o.inode;
    }
  };
  absl::StatusOr<std::shared_ptr<Entry>> MakeEntry(costmodel::Profile profile, std::string path);
  // Reads, validates and builds the entry of one file (feedback not set).
  absl::StatusOr<std::shared_ptr<Entry>> LoadEntry(const std::string& path);
  // Every *.json under dir_ with its signature; directory errors appended to *errors.
  std::map<std::string, FileSig> ScanFiles(std::vector<std::string>* errors) const;
  void AttachFeedback(Entry* entry, const std::shared_ptr<Feedback>& previous) const;

  const std::string dir_;
  const double ema_alpha_;
  Env* const env_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::shared_ptr<const Entry>> entries_;  // guarded by mu_
  std::atomic<uint64_t> generation_{0};
  std::mutex write_mu_;  // serialises Put and Reload (SaveProfile's temp file name is per process)
  std::map<std::string, FileSig> seen_;  // path -> signature last read; guarded by write_mu_
  std::atomic<int64_t> reloads_{0};
  std::atomic<int64_t> reload_errors_{0};
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_PROFILE_STORE_H_
