// Latency samples measured elsewhere (`calibrate --from-samples FILE`), so engines can calibrate
// with their own kernels.
//
// CSV: a header naming at least the columns s, c, seconds (any order; other columns are ignored),
// then one pass per line. Blank lines and lines starting with '#' are skipped. Example:
//   s,c,seconds
//   1,0,0.0071
//   64,1024,0.0093
// JSON: an array of objects [{"s": 1, "c": 0, "seconds": 0.0071}, ...] (other keys ignored).
//
// s is the number of tokens verified (>= 1), c the cached context (>= 0), seconds the measured
// latency of the pass (finite, > 0).
#ifndef SPECPLAN_PROFILER_SAMPLES_FILE_H_
#define SPECPLAN_PROFILER_SAMPLES_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/fit.h"

namespace specplan::profiler {

// Errors name the source, line and column: "<source>:4: seconds = 'nan': must be finite and > 0".
absl::StatusOr<std::vector<costmodel::LatencySample>> ParseSamplesCsv(const std::string& text,
                                                                      const std::string& source);
// Errors name the element and key: "<source>: [2].s = 0: must be >= 1".
absl::StatusOr<std::vector<costmodel::LatencySample>> ParseSamplesJson(const std::string& text,
                                                                       const std::string& source);
// Reads `path`: JSON when it ends in .json or its first non-blank character is '[', else CSV.
// An empty sample list is an error.
absl::StatusOr<std::vector<costmodel::LatencySample>> ReadSamplesFile(const std::string& path);

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_SAMPLES_FILE_H_
