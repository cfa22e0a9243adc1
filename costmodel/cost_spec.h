// CostSpec: everything that chooses how a verification pass is priced — target model, GPU, engine,
// dtype, tensor parallelism, an explicit profile, a latency model kind — and ResolveCost, the one
// function that turns it into a latency model. The CLI's cost flags (cli/cost_flags.h) fill a
// CostSpec; every command that prices a pass resolves through ResolveCost.
//
// Which profile: an explicit profile_path, else ChooseProfile over a ProfileLookup — for
// ResolveCost the bundled files under calib_dir (CalibDirLookup: BundledProfilePath(calib_dir,
// gpu, model, dtype, tp, engine)); the server's service/cost_resolver.h runs the same
// ChooseProfile over its in-memory ProfileStore and never reads a file a request names. A named
// engine takes only that engine's profile ("specplan" = the file without "@"); no engine takes a
// preferred engine's first when the caller has one (the server's --engine), then the first of
// KnownEngines() (sglang, vllm, trtllm, specplan) that the lookup holds, else (ResolveCost) the
// bare roofline.
#ifndef SPECPLAN_COSTMODEL_COST_SPEC_H_
#define SPECPLAN_COSTMODEL_COST_SPEC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/hardware/gpu_spec.h"
#include "costmodel/hardware/model_spec.h"
#include "costmodel/latency/latency_model.h"
#include "costmodel/profile/engines.h"
#include "costmodel/profile/profile.h"

namespace specplan::costmodel {

struct CostSpec {
  std::string model;          // registry name or HF config.json path; may be "" with a
                              // profile_path (the profile's own model)
  std::string gpu;            // registry name or GPU spec JSON path; may be "" likewise
  std::string engine;         // "sglang", "vllm", "trtllm", "specplan" or an alias ParseEngine
                              // takes; "" = default (see the top of this file)
  std::string profile_path;   // explicit profile JSON; "" = the bundled lookup
  std::string latency_model;  // kind of the profile to use; "" = its default
  DType dtype = DType::kBFloat16;
  int64_t tp = 0;         // tensor parallelism; 0 = not given: the profile's, else 1
  std::string calib_dir;  // where bundled profiles live; "" = DefaultCalibDir()
};

// One profile a lookup may hold: names as the lookup keys its profiles (registry names for the
// bundled files, "h100-sxm"), and a canonical engine (KnownEngines()). A lookup is always asked
// with an engine; "" in the key given to ChooseProfile means "none named".
struct ProfileKey {
  std::string gpu;
  std::string model;
  DType dtype = DType::kBFloat16;
  int64_t tp = 1;
  std::string engine;
};
// A profile a lookup found, and where: the file's path, or the store's id.
struct FoundProfile {
  std::shared_ptr<const Profile> profile;
  std::string source;
  std::string engine;  // the engine it was looked up under (ChooseProfile sets it)
};
// Where profiles come from: the profile held for `key`, or NOT_FOUND when there is none. Any other
// error (an unreadable or invalid file) stops ChooseProfile and is returned as is.
using ProfileLookup = std::function<absl::StatusOr<FoundProfile>(const ProfileKey& key)>;
// The bundled profiles under calib_dir ("" = DefaultCalibDir()): BundledProfilePath's file,
// loaded (LoadProfile); NOT_FOUND when no such file exists.
ProfileLookup CalibDirLookup(const std::string& calib_dir);

// The engines ChooseProfile tries, in order: a named (canonical) `engine` alone; for engine "",
// `preferred` (a canonical engine, the server's --engine) first when given, then KnownEngines()
// (each engine once).
std::vector<std::string> EngineCandidates(const std::string& engine,
                                          const std::string& preferred = "");
// The profile of the first of EngineCandidates(key.engine, preferred) that `lookup` holds for
// (key.gpu, key.model, key.dtype, key.tp); each is looked up in turn and the first found is
// returned (a lookup is not called again after it finds one). NOT_FOUND when none is held (the
// caller words it: ResolveCost and the server name their own fields); another error of the lookup
// as is.
absl::StatusOr<FoundProfile> ChooseProfile(const ProfileLookup& lookup, const ProfileKey& key,
                                           const std::string& preferred = "");
// The engines of KnownEngines(), in that order, that `lookup` holds for key's (gpu, model, dtype,
// tp) (key.engine is ignored): what an error names as held.
std::vector<std::string> HeldEngines(const ProfileLookup& lookup, const ProfileKey& key);

// What a cost spec resolved to (ResolveCost).
struct ResolvedLatencyModel {
  std::unique_ptr<LatencyModel> model;
  ModelSpec model_spec;
  GpuSpec gpu_spec;
  std::string profile_path;    // empty when no profile was used (bare roofline)
  std::string profile_id;      // ProfileId of the profile used (with its engine); empty when none
  std::string provenance;      // the profile's provenance ("" when none recorded or no profile)
  std::string engine;          // the profile's engine ("sglang", ..., "specplan"); "" when none
  std::string engine_version;  // the profile's engine_version; "" when not recorded or none
  // The profile's composed drafter forwards (Profile::drafters; empty when none), which price
  // T_draft in the step model (costmodel/step/step_model.h).
  std::map<std::string, DrafterProfile> drafters;
};
// The latency model `spec` describes. Errors begin with the CostSpec field and its value,
// "<field> = '<value>': " ("tp = <N>: " for the number), so that a front end can name its own
// option instead (the CLI's cli/cost_flags.h, "--engine foo: ..."):
//   INVALID_ARGUMENT: an unknown engine ("engine = 'foo': unknown (known: sglang, vllm, trtllm,
//     specplan)"); a profile_path whose engine is not the given one ("engine = 'sglang': profile P
//     describes engine 'specplan'"), or whose model, gpu or tp is not the given one; a bad tp
//     ("tp = 3: must divide n_q = 64 (query heads)").
//   NOT_FOUND: a named engine without its bundled file ("engine = 'sglang': no profile for
//     h100-sxm x qwen3-8b (bf16) at PATH; shipped for this GPU and model: vllm, specplan (or set
//     profile_path)"); a latency_model other than "roofline" when no profile exists
//     ("latency_model = 'linear': no profile for ...").
//   Unknown model or GPU names, unreadable or invalid profiles: the registry's or loader's error.
absl::StatusOr<ResolvedLatencyModel> ResolveCost(const CostSpec& spec);

// A CostSpec field and what a front end calls it ({"engine", "--engine"}; the command lines'
// table: ops/cost_request.h CostRequestFlagNames).
struct CostFieldName {
  const char* field;
  const char* name;
};
// A ResolveCost error in a front end's words: its leading "<field> = '<value>': " becomes
// "<name> <value>: " ("engine = 'foo': unknown ..." -> "--engine foo: unknown ..."), and the advice
// "(or set profile_path)" becomes "(or pass <name of profile_path>)". Other messages, and fields
// `names` does not list, are returned as they are.
absl::Status CostErrorInNames(const absl::Status& status, const std::vector<CostFieldName>& names);

// Engines whose bundled profile for (gpu, model, dtype, tp) exists under calib_dir, in
// KnownEngines() order. gpu and model are registry names as the files use them ("h100-sxm").
std::vector<std::string> BundledEngines(const std::string& calib_dir, const std::string& gpu,
                                        const std::string& model, DType dtype, int64_t tp = 1);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_COST_SPEC_H_
