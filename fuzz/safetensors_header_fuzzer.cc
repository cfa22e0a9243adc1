// Safetensors header bytes -> ParseSafetensorsHeader (runtime/safetensors_header.h, Torch-free).
// The first 8 bytes of the input choose the data-block size, the rest is the header JSON. Every
// accepted header must satisfy the documented promises: known dtypes, spans that match the shape,
// offsets inside the data block, no overlaps.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "runtime/safetensors_header.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace specplan;
  using namespace specplan::fuzz;
  if (size < 8) return 0;
  uint64_t raw = 0;
  std::memcpy(&raw, data, 8);
  const int64_t data_size = static_cast<int64_t>(raw % (uint64_t{1} << 40));
  auto entries = runtime::ParseSafetensorsHeader(AsText(data + 8, size - 8), data_size, "fuzz");
  if (!entries.ok()) {
    SPECPLAN_CHECK(entries.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const runtime::SafetensorsEntry& e : *entries) {
    const int64_t elem = runtime::SafetensorsElementSize(e.dtype);
    SPECPLAN_CHECK(elem > 0);
    SPECPLAN_CHECK(0 <= e.begin && e.begin <= e.end && e.end <= data_size);
    int64_t numel = 1;
    for (int64_t d : e.shape) {
      SPECPLAN_CHECK(d >= 0);
      numel *= d;  // bounded by the parser (<= 2^50)
    }
    SPECPLAN_CHECK(e.end - e.begin == numel * elem);
    if (e.end > e.begin) spans.emplace_back(e.begin, e.end);
  }
  std::sort(spans.begin(), spans.end());
  for (size_t i = 1; i < spans.size(); ++i) SPECPLAN_CHECK(spans[i].first >= spans[i - 1].second);
  return 0;
}
