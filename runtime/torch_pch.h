// Precompiled header of specplan_runtime (and, reused, of runtime_tests and specplan-bench).
#include <torch/torch.h>
