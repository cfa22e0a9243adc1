// Preallocated key/value cache of one model, and the post-acceptance compaction that gathers the
// accepted path's rows into place (no re-forward of committed tokens).
//
// Slots vs positions: a slot is a row of the cache; a position is the RoPE position the row was
// computed at. Keys are stored after RoPE. A verification pass over c committed tokens writes tree
// node i into slot c + i at position c + depth(i); after acceptance the path root = n_0, n_1, ...,
// n_L (depth k for n_k) is gathered into slots c + k, where position c + k is exactly the position
// its keys were computed at. Slots [0, length) always hold the committed sequence in order.
#ifndef SPECPLAN_RUNTIME_KV_CACHE_H_
#define SPECPLAN_RUNTIME_KV_CACHE_H_

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "runtime/model_config.h"

namespace specplan::runtime {

// The K and V of `rows` caches of one model in one tensor per layer, [rows][max_len][n_kv][d]
// (KvCache::Batch). Caches that are consecutive rows of one arena let a batched forward attend
// for all of them in one call per layer (Transformer::ForwardBatch) instead of one per sequence.
struct KvArena {
  std::vector<torch::Tensor> k, v;  // per layer, [rows][max_len][n_kv][d]
  int64_t rows = 0, max_len = 0;
};

class KvCache {
 public:
  KvCache() = default;
  // Allocates [max_len][n_kv][head_dim] K and V per layer (zeros).
  KvCache(const ModelConfig& config, int64_t max_len, torch::ScalarType dtype,
          torch::Device device);
  // `count` caches of max_len slots each, rows 0 .. count - 1 of one new arena (zeros). Each
  // behaves as a cache made by the constructor; the arena lives while any of them does.
  static std::vector<KvCache> Batch(const ModelConfig& config, int64_t count, int64_t max_len,
                                    torch::ScalarType dtype, torch::Device device);

  // The arena this cache is a row of, or null for a cache of its own; and that row.
  const KvArena* arena() const { return arena_.get(); }
  int64_t arena_row() const { return arena_row_; }

  int64_t max_len() const { return max_len_; }
  int64_t num_layers() const { return static_cast<int64_t>(k_.size()); }
  // Committed tokens: slots [0, length) hold them in sequence order.
  int64_t length() const { return length_; }
  void set_length(int64_t length);  // 0 <= length <= max_len (SPECPLAN_CHECK)

  torch::Tensor& k(int64_t layer) { return k_[layer]; }  // [max_len][n_kv][d]
  torch::Tensor& v(int64_t layer) { return v_[layer]; }  // [max_len][n_kv][d]
  const torch::Tensor& k(int64_t layer) const { return k_[layer]; }
  const torch::Tensor& v(int64_t layer) const { return v_[layer]; }

  // Moves the rows at slots src_slots[i] to slots dst_start + i in every layer (gathered first,
  // so sources and destinations may overlap). Skips the copy when src_slots[i] == dst_start + i
  // for all i. Does not change length(). All slots must be < max_len (SPECPLAN_CHECK).
  void GatherSlots(absl::Span<const int64_t> src_slots, int64_t dst_start);

  // Bytes held by K and V.
  int64_t bytes() const;

 private:
  std::vector<torch::Tensor> k_;
  std::vector<torch::Tensor> v_;
  std::shared_ptr<const KvArena> arena_;
  int64_t arena_row_ = -1;
  int64_t max_len_ = 0;
  int64_t length_ = 0;
  torch::Device device_ = torch::kCPU;
};

// How a batched forward over these caches (in this order) groups its attention: maximal runs of
// consecutive rows r, r + 1, ... of one arena attend in one call per layer; any other cache is a
// run of one. Returns each run's length, in order (they sum to caches.size()).
std::vector<int64_t> ArenaRuns(absl::Span<const KvCache* const> caches);

}  // namespace specplan::runtime

#endif  // SPECPLAN_RUNTIME_KV_CACHE_H_
