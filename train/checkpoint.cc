#include "train/checkpoint.h"

#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "runtime/model_loader.h"
#include "runtime/safetensors.h"
#include "util/atomic_file.h"
#include "util/check.h"
#include "util/status_macros.h"

namespace specplan::train {

absl::StatusOr<std::vector<planner::TokenId>> ReadTokenStream(const std::string& path,
                                                              int64_t vocab_size) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const std::streamoff bytes = in.tellg();
  if (bytes % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", bytes, " bytes, not a whole number of int32 tokens"));
  }
  if (bytes == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  std::vector<unsigned char> raw(static_cast<size_t>(bytes));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(raw.data()), bytes)) {
    return absl::DataLossError(absl::StrCat(path, ": read failed"));
  }
  std::vector<planner::TokenId> tokens(raw.size() / 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const unsigned char* p = raw.data() + 4 * i;  // little-endian, whatever the host
    const uint32_t u = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                       static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    int32_t v;
    std::memcpy(&v, &u, sizeof(v));
    if (v < 0 || v >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": token ", i, " = ", v, ": outside the vocabulary [0, ", vocab_size, ")"));
    }
    tokens[i] = static_cast<planner::TokenId>(v);
  }
  return tokens;
}

absl::Status WriteHfCheckpoint(const runtime::Transformer& model, const std::string& config_json,
                               const std::string& dir, torch::ScalarType dtype,
                               const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  {
    torch::NoGradGuard no_grad;
    for (const auto& [name, t] : model.NamedParameters()) {
      tensors.emplace_back(name, t.detach().to(torch::kCPU, dtype).contiguous());
    }
  }
  SPECPLAN_RETURN_IF_ERROR(
      runtime::WriteSafetensors(dir + "/model.safetensors", tensors, metadata));
  return WriteFileAtomically(dir + "/config.json", config_json);
}

absl::StatusOr<std::unique_ptr<runtime::Transformer>> LoadFrozenForTraining(
    const std::string& dir) {
  const runtime::RuntimeOptions ro;  // fp32 on the CPU
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Transformer> loaded,
                            runtime::LoadModel(dir, 0, ro));
  SPECPLAN_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Transformer> model,
                            runtime::Transformer::CreateTrainable(loaded->config(), 0, ro));
  torch::NoGradGuard no_grad;
  const auto& from = loaded->NamedParameters();
  const auto& to = model->NamedParameters();
  SPECPLAN_CHECK(from.size() == to.size());
  for (size_t i = 0; i < to.size(); ++i) {
    SPECPLAN_CHECK(from[i].first == to[i].first);
    to[i].second.requires_grad_(false);
    to[i].second.copy_(from[i].second);
  }
  return model;
}

}  // namespace specplan::train
