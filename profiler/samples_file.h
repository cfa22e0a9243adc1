// The samples reader moved to costmodel/fit/samples_file.h (it needs nothing of LibTorch, and the
// specplan CLI and the costmodel tests read samples too). This header keeps profiler's names.
#ifndef SPECPLAN_PROFILER_SAMPLES_FILE_H_
#define SPECPLAN_PROFILER_SAMPLES_FILE_H_

#include "costmodel/fit/samples_file.h"

namespace specplan::profiler {

using costmodel::ParseSamplesCsv;
using costmodel::ParseSamplesJson;
using costmodel::ReadSamplesFile;

}  // namespace specplan::profiler

#endif  // SPECPLAN_PROFILER_SAMPLES_FILE_H_
