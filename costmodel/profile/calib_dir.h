// Where bundled profiles live (calib/) and what each file and profile is called: one file per
// (gpu, model, dtype, tp, engine), calib/<gpu>/<model>-<dtype>[-tp<N>][@<engine>].json (no "@" for
// engine "specplan").
#ifndef SPECPLAN_COSTMODEL_CALIB_DIR_H_
#define SPECPLAN_COSTMODEL_CALIB_DIR_H_

#include <cstdint>
#include <string>

#include "costmodel/hardware/model_spec.h"
#include "costmodel/profile/engines.h"

namespace specplan::costmodel {

// Directory of bundled profiles: $SPECPLAN_CALIB_DIR if set, else the repository's calib/ when it
// exists, else the installed copy (<prefix>/share/specplan/calib).
std::string DefaultCalibDir();
// calib/<gpu>/<model>-<dtype>.json under `calib_dir`; calib/<gpu>/<model>-<dtype>-tp<N>.json
// for a profile fitted at tensor parallelism tp = N > 1. The path always stays inside calib_dir: a
// model or GPU named by a file stands there by its folder (an HF "/m/qwen3/config.json" or
// "/m/qwen3"
// -> qwen3) or its stem (a GPU spec "specs/l4.json" -> l4).
// An engine other than "specplan" is appended as "@<engine>":
// calib/h100-sxm/qwen3-8b-bf16@sglang.json.
std::string BundledProfilePath(const std::string& calib_dir, const std::string& gpu,
                               const std::string& model, DType dtype, int64_t tp = 1,
                               const std::string& engine = kRuntimeEngine);

// "<gpu>/<model>-<dtype>", e.g. "h100-sxm/qwen3-8b-bf16": how the server and reports name a
// profile (its path under a profiles directory, without ".json"); "-tp<N>" is appended when the
// profile was fitted at tp = N > 1 ("h100-sxm/llama-3.3-70b-bf16-tp4").
// "@<engine>" follows for an engine other than "specplan" ("h100-sxm/qwen3-8b-bf16@sglang").
std::string ProfileId(const std::string& gpu, const std::string& model, DType dtype, int64_t tp = 1,
                      const std::string& engine = kRuntimeEngine);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_CALIB_DIR_H_
