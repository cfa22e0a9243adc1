#include "runtime/kv_cache.h"

#include <torch/torch.h>

#include "util/check.h"

namespace specplan::runtime {

KvCache::KvCache(const ModelConfig& config, int64_t max_len, torch::ScalarType dtype,
                 torch::Device device)
    : max_len_(max_len), device_(device) {
  c10::InferenceMode guard;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    k_.push_back(torch::zeros({max_len, config.num_kv_heads, config.head_dim}, opts));
    v_.push_back(torch::zeros({max_len, config.num_kv_heads, config.head_dim}, opts));
  }
}

std::vector<KvCache> KvCache::Batch(const ModelConfig& config, int64_t count, int64_t max_len,
                                    torch::ScalarType dtype, torch::Device device) {
  SPECPLAN_CHECK(count >= 1 && max_len >= 1);
  c10::InferenceMode guard;
  auto arena = std::make_shared<KvArena>();
  arena->rows = count;
  arena->max_len = max_len;
  const auto opts = torch::TensorOptions().dtype(dtype).device(device);
  for (int64_t l = 0; l < config.num_layers; ++l) {
    arena->k.push_back(torch::zeros({count, max_len, config.num_kv_heads, config.head_dim}, opts));
    arena->v.push_back(torch::zeros({count, max_len, config.num_kv_heads, config.head_dim}, opts));
  }
  std::vector<KvCache> caches(count);
  for (int64_t i = 0; i < count; ++i) {
    KvCache& c = caches[i];
    c.max_len_ = max_len;
    c.device_ = device;
    c.arena_ = arena;
    c.arena_row_ = i;
    for (int64_t l = 0; l < config.num_layers; ++l) {
      c.k_.push_back(arena->k[l].select(0, i));
      c.v_.push_back(arena->v[l].select(0, i));
    }
  }
  return caches;
}

void KvCache::set_length(int64_t length) {
  SPECPLAN_CHECK(length >= 0 && length <= max_len_);
  length_ = length;
}

void KvCache::GatherSlots(absl::Span<const int64_t> src_slots, int64_t dst_start) {
  const int64_t m = static_cast<int64_t>(src_slots.size());
  SPECPLAN_CHECK(dst_start >= 0 && dst_start + m <= max_len_);
  bool identity = true;
  for (int64_t i = 0; i < m; ++i) {
    SPECPLAN_CHECK(src_slots[i] >= 0 && src_slots[i] < max_len_);
    identity = identity && src_slots[i] == dst_start + i;
  }
  if (identity || m == 0) return;
  c10::InferenceMode guard;
  torch::Tensor index =
      torch::from_blob(const_cast<int64_t*>(src_slots.data()), {m}, torch::kInt64).to(device_);
  for (size_t l = 0; l < k_.size(); ++l) {
    torch::Tensor kr = k_[l].index_select(0, index);
    torch::Tensor vr = v_[l].index_select(0, index);
    k_[l].narrow(0, dst_start, m).copy_(kr);
    v_[l].narrow(0, dst_start, m).copy_(vr);
  }
}

int64_t KvCache::bytes() const {
  int64_t b = 0;
  for (size_t l = 0; l < k_.size(); ++l) {
    b += k_[l].numel() * k_[l].element_size() + v_[l].numel() * v_[l].element_size();
  }
  return b;
}

std::vector<int64_t> ArenaRuns(absl::Span<const KvCache* const> caches) {
  std::vector<int64_t> runs;
  for (size_t i = 0; i < caches.size();) {
    const KvArena* arena = caches[i]->arena();
    size_t end = i + 1;
    while (arena != nullptr && end < caches.size() && caches[end]->arena() == arena &&
           caches[end]->arena_row() == caches[end - 1]->arena_row() + 1) {
      ++end;
    }
    runs.push_back(static_cast<int64_t>(end - i));
    i = end;
  }
  return runs;
}

}  // namespace specplan::runtime
