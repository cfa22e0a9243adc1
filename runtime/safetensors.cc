#include "runtime/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "util/atomic_file.h"
#include "util/json_util.h"
#include "util/status_macros.h"

namespace specplan::runtime {
namespace {

struct DtypeInfo {
  const char* name;
  torch::ScalarType type;
  int64_t size;
};
constexpr DtypeInfo kDtypes[] = {
    {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2}, {"BF16", torch::kBFloat16, 2},
    {"F64", torch::kFloat64, 8}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},   {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* FindDtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}
const DtypeInfo* FindDtype(torch::ScalarType t) {
  for (const auto& d : kDtypes) {
    if (t == d.type) return &d;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return absl::InternalError(absl::StrCat(path, ": fstat: ", std::strerror(errno)));
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": file size ", size, " bytes: too small for the 8-byte header length"));
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(absl::StrCat(path, ": mmap: ", std::strerror(errno)));
  }
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = path;
  f->map_ = map;
  f->map_size_ = size;
  const uint8_t* bytes = static_cast<const uint8_t*>(map);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  if (n > size - 8) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": header length = ", n,
                                                   ": exceeds the file (", size - 8,
                                                   " bytes after the length)"));
  }
  f->data_ = bytes + 8 + n;
  const int64_t data_size = static_cast<int64_t>(size - 8 - n);
  SPECPLAN_ASSIGN_OR_RETURN(
      f->entries_,
      ParseSafetensorsHeader(std::string_view(reinterpret_cast<const char*>(bytes + 8), n),
                             data_size, path));
  for (size_t i = 0; i < f->entries_.size(); ++i) f->index_[f->entries_[i].name] = i;
  return f;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_ != nullptr) ::munmap(map_, map_size_);
}

absl::StatusOr<torch::Tensor> SafetensorsFile::Get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": tensor \"", name, "\": not present"));
  }
  const SafetensorsEntry& e = entries_[it->second];
  const DtypeInfo* info = FindDtype(e.dtype);
  c10::InferenceMode guard;
  torch::Tensor out = torch::empty(e.shape, torch::TensorOptions().dtype(info->type));
  if (e.end > e.begin) std::memcpy(out.data_ptr(), data_ + e.begin, e.end - e.begin);
  return out;
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  for (const auto& e : entries_) names.push_back(e.name);
  return names;
}

absl::StatusOr<std::unique_ptr<SafetensorsCheckpoint>> SafetensorsCheckpoint::Open(
    const std::string& path) {
  namespace fs = std::filesystem;
  std::unique_ptr<SafetensorsCheckpoint> ck(new SafetensorsCheckpoint());
  ck->path_ = path;
  std::vector<std::string> files;
  std::map<std::string, std::string> weight_map;
  if (!fs::is_directory(path)) {
    files.push_back(path);
  } else if (fs::exists(fs::path(path) / "model.safetensors.index.json")) {
    const std::string index = (fs::path(path) / "model.safetensors.index.json").string();
    absl::StatusOr<nlohmann::json> parsed = json_util::ReadJsonFile(index);
    if (!parsed.ok()) return parsed.status();
    nlohmann::json j = *std::move(parsed);
    if (!j.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(index, ": not a JSON object"));
    }
    if (!j.contains("weight_map") || !j["weight_map"].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index, ": weight_map: missing or not an object"));
    }
    std::set<std::string> shard_set;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(index, ": weight_map[\"", it.key(),
                                                       "\"] = ", json_util::Quote(it.value()),
                                                       ": expected a file name"));
      }
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard.find("..") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(index, ": weight_map[\"", it.key(),
                                                       "\"] = \"", shard,
                                                       "\": must be a file in the directory"));
      }
      weight_map[it.key()] = shard;
      shard_set.insert(shard);
    }
    for (const auto& s : shard_set) files.push_back((fs::path(path) / s).string());
  } else if (fs::exists(fs::path(path) / "model.safetensors")) {
    files.push_back((fs::path(path) / "model.safetensors").string());
  } else {
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.path().extension() == ".safetensors") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      return absl::NotFoundError(absl::StrCat(path, ": no *.safetensors files"));
    }
  }
  for (const std::string& file : files) {
    SPECPLAN_ASSIGN_OR_RETURN(auto f, SafetensorsFile::Open(file));
    const size_t idx = ck->files_.size();
    for (const auto& e : f->entries()) {
      auto [it, inserted] = ck->where_.emplace(e.name, idx);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat("tensor \"", e.name, "\": in both ",
                                                       ck->files_[it->second]->Describe(), " and ",
                                                       file));
      }
    }
    ck->files_.push_back(std::move(f));
  }
  for (const auto& [name, shard] : weight_map) {
    auto it = ck->where_.find(name);
    const std::string expected = (fs::path(path) / shard).string();
    if (it == ck->where_.end() || ck->files_[it->second]->Describe() != expected) {
      return absl::NotFoundError(absl::StrCat("model.safetensors.index.json: weight_map[\"", name,
                                              "\"] = \"", shard, "\": tensor not in that shard"));
    }
  }
  return ck;
}

absl::StatusOr<torch::Tensor> SafetensorsCheckpoint::Get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    return absl::NotFoundError(absl::StrCat(path_, ": tensor \"", name, "\": not present"));
  }
  return files_[it->second]->Get(name);
}

std::vector<std::string> SafetensorsCheckpoint::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, idx] : where_) names.push_back(name);
  return names;
}

absl::Status WriteSafetensors(const std::string& path,
                              const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  c10::InferenceMode guard;
  std::vector<std::pair<std::string, torch::Tensor>> sorted = tensors;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  std::vector<torch::Tensor> data;
  for (const auto& [name, t] : sorted) {
    const DtypeInfo* info = FindDtype(t.scalar_type());
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("tensor \"", name, "\": dtype ",
                                                     c10::toString(t.scalar_type()),
                                                     " has no safetensors code"));
    }
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    const int64_t bytes = c.numel() * info->size;
    header[name] = {{"dtype", info->name},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(c);
  }
  std::string h = header.dump();
  while ((h.size() + 8) % 8 != 0) h.push_back(' ');
  std::string file(8, '\0');
  const uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) file[i] = static_cast<char>(static_cast<uint8_t>(n >> (8 * i)));
  file.reserve(8 + h.size() + static_cast<size_t>(offset));
  file += h;
  for (const auto& c : data) {
    file.append(static_cast<const char*>(c.data_ptr()),
                static_cast<size_t>(c.numel() * c.element_size()));
  }
  return WriteFileAtomically(path, file);
}

absl::Status WriteShardedSafetensors(
    const std::string& dir, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    int num_shards) {
  namespace fs = std::filesystem;
  if (num_shards < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_shards = ", num_shards, ": must be >= 1"));
  }
  fs::create_directories(dir);
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> shards(num_shards);
  nlohmann::json weight_map = nlohmann::json::object();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const int s = static_cast<int>(i % num_shards);
    shards[s].push_back(tensors[i]);
    weight_map[tensors[i].first] =
        absl::StrFormat("model-%05d-of-%05d.safetensors", s + 1, num_shards);
  }
  for (int s = 0; s < num_shards; ++s) {
    SPECPLAN_RETURN_IF_ERROR(WriteSafetensors(
        (fs::path(dir) / absl::StrFormat("model-%05d-of-%05d.safetensors", s + 1, num_shards))
            .string(),
        shards[s]));
  }
  nlohmann::json index = {{"metadata", nlohmann::json::object()}, {"weight_map", weight_map}};
  std::ofstream out(fs::path(dir) / "model.safetensors.index.json");
  out << index.dump(2);
  if (!out) return absl::InternalError(absl::StrCat(dir, ": cannot write the index"));
  return absl::OkStatus();
}

}  // namespace specplan::runtime
