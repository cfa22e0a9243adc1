// HuggingFace safetensors checkpoints: single files and sharded directories
// (model.safetensors.index.json). Format: 8-byte little-endian header length N, N bytes of JSON
// header {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__":
// {...}}, then the data block; offsets are relative to the data block.
//
// Validation is strict: the header length fits the file, and the header itself is checked by
// ParseSafetensorsHeader (runtime/safetensors_header.h, Torch-free).
#ifndef SPECPLAN_RUNTIME_SAFETENSORS_H_
#define SPECPLAN_RUNTIME_SAFETENSORS_H_

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/safetensors_header.h"

namespace specplan::runtime {

// Named tensors a model is loaded from.
class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual bool Has(const std::string& name) const = 0;
  // A CPU tensor holding the stored values (dtype as stored). NotFound for an unknown name.
  virtual absl::StatusOr<torch::Tensor> Get(const std::string& name) const = 0;
  virtual std::vector<std::string> Names() const = 0;
  virtual std::string Describe() const = 0;  // for error messages (path)
};

// One memory-mapped .safetensors file. Get() returns tensors that copy out of the mapping.
class SafetensorsFile : public TensorSource {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);
  ~SafetensorsFile() override;

  bool Has(const std::string& name) const override { return index_.count(name) > 0; }
  absl::StatusOr<torch::Tensor> Get(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Describe() const override { return path_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const uint8_t* data_ = nullptr;  // start of the data block
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
};

// A checkpoint directory: model.safetensors, or model.safetensors.index.json ("weight_map":
// {tensor: shard file}) with its shards, or else every *.safetensors file in it. Every tensor
// listed in the index must exist in its shard, and no tensor may appear in two files.
class SafetensorsCheckpoint : public TensorSource {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsCheckpoint>> Open(const std::string& path);

  bool Has(const std::string& name) const override { return where_.count(name) > 0; }
  absl::StatusOr<torch::Tensor> Get(const std::string& name) const override;
  std::vector<std::string> Names() const override;
  std::string Describe() const override { return path_; }
  int num_files() const { return static_cast<int>(files_.size()); }

 private:
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> where_;  // tensor -> file index
};

// Writes `tensors` (any device/dtype among those above; stored contiguous, CPU) to `path` in
// name order, with an optional "__metadata__" map. The file is replaced atomically
// (WriteFileAtomically: parent directories created, a failed write leaves `path` as it was).
absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// Writes `tensors` to `dir` as `num_shards` files model-0000i-of-0000n.safetensors plus
// model.safetensors.index.json (tensors assigned round-robin in order).
absl::Status WriteShardedSafetensors(
    const std::string& dir, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    int num_shards);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_SAFETENSORS_H_
