// Latency samples measured elsewhere (`calibrate --from-samples FILE`), so engines can calibrate
// with their own kernels.
//
// CSV: a header naming at least the columns s, c and one latency column (any order; other columns
// are ignored), then one pass per line. Blank lines and lines starting with '#' are skipped.
// The latency column is one of (units from the name):
//   seconds, latency_s   seconds
//   latency_ms           milliseconds
//   latency_us           microseconds
// Example:
//   s,c,latency_ms
//   1,0,7.1
//   64,1024,9.3
// JSON: an array of objects [{"s": 1, "c": 0, "seconds": 0.0071}, ...] with the same latency keys
// (other keys ignored).
// Batch passes: an optional column (CSV) or key (JSON) `b` gives the sequences in the pass, each
// verifying s tokens over c cached tokens (absent = 1, a single sequence; 1 <= b <= 65536).
//
// s is the number of tokens verified (>= 1), c the cached context (>= 0), the latency the measured
// time of the pass (finite, > 0); LatencySample::seconds holds it converted to seconds. Exactly one
// latency column per file: two (e.g. seconds and latency_ms) is an error naming both.
#ifndef SPECPLAN_COSTMODEL_SAMPLES_FILE_H_
#define SPECPLAN_COSTMODEL_SAMPLES_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "costmodel/fit/fit.h"

namespace specplan::costmodel {

// Errors name the source, line and column: "<source>:4: seconds = 'nan': must be finite and > 0"
// (the column as the header spells it, e.g. latency_ms).
absl::StatusOr<std::vector<LatencySample>> ParseSamplesCsv(const std::string& text,
                                                           const std::string& source);
// Errors name the element and key: "<source>: [2].s = 0: must be >= 1".
absl::StatusOr<std::vector<LatencySample>> ParseSamplesJson(const std::string& text,
                                                            const std::string& source);
// Reads `path`: JSON when it ends in .json or its first non-blank character is '[', else CSV.
// An empty sample list is an error.
absl::StatusOr<std::vector<LatencySample>> ReadSamplesFile(const std::string& path);

}  // namespace specplan::costmodel

#endif  // SPECPLAN_COSTMODEL_SAMPLES_FILE_H_
