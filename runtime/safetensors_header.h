// Header of a HuggingFace safetensors file, parsed and validated without LibTorch (so the fuzzer
// and other Torch-free tools can use it). runtime/safetensors.h reads the tensors.
//
// Validation is strict: every entry has a known dtype, a shape of non-negative integers, offsets
// with begin <= end <= data size, end - begin == product(shape) * element size, and no two tensors
// overlap. Errors name the file, the tensor and the field, e.g.
// "w.safetensors: tensor \"lm_head.weight\": data_offsets = [0, 100]: span 100 bytes, expected
// 128 (shape [4, 8] x F32)".
#ifndef SPECPLAN_RUNTIME_SAFETENSORS_HEADER_H_
#define SPECPLAN_RUNTIME_SAFETENSORS_HEADER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace specplan::runtime {

struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
  std::vector<int64_t> shape;  // may be empty (scalar)
  int64_t begin = 0;           // bytes, relative to the data block
  int64_t end = 0;
};

// Bytes per element of a safetensors dtype name; 0 for an unknown name.
int64_t SafetensorsElementSize(const std::string& dtype);

// Parses and validates a header JSON text against a data block of `data_size` bytes. `where`
// prefixes error messages (the file name).
absl::StatusOr<std::vector<SafetensorsEntry>> ParseSafetensorsHeader(std::string_view header_json,
                                                                     int64_t data_size,
                                                                     const std::string& where);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_SAFETENSORS_HEADER_H_
