// A gRPC MessageAllocator for callback-API unary methods that puts each call's request and
// response on a protobuf Arena whose first block is a buffer owned by a pooled holder, and recycles
// the holders: a PlanTree reply (~16 KB of tree, outputs and curve arrays) then costs no heap
// allocation in the steady state, and freeing it is one Arena::Reset instead of a destructor walk.
//
// Thread-safety: AllocateMessages and the holders' Release may run concurrently on any gRPC thread
// (one mutex around the free list). The allocator must outlive the server's calls.
#ifndef SPECPLAN_SERVICE_ARENA_ALLOCATOR_H_
#define SPECPLAN_SERVICE_ARENA_ALLOCATOR_H_

#include <google/protobuf/arena.h>
#include <grpcpp/support/message_allocator.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace specplan::service {

template <class Request, class Response>
class PooledArenaAllocator final : public grpc::MessageAllocator<Request, Response> {
 public:
  // `block_bytes`: the arena's first block (larger messages spill into heap blocks, freed on
  // release); `max_pooled`: holders kept for reuse (more concurrent calls allocate fresh ones).
  explicit PooledArenaAllocator(size_t block_bytes = 64 << 10, size_t max_pooled = 64)
      : block_bytes_(block_bytes), max_pooled_(max_pooled) {}
  ~PooledArenaAllocator() override = default;

  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    std::unique_ptr<Holder> h;
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        h = std::move(free_.back());
        free_.pop_back();
      }
    }
    if (h == nullptr) h = std::make_unique<Holder>(this, block_bytes_);
    h->Init();
    return h.release();
  }

  // Holders currently in the free list (tests).
  size_t pooled() const {
    std::lock_guard lock(mu_);
    return free_.size();
  }

 private:
  class Holder final : public grpc::MessageHolder<Request, Response> {
   public:
    Holder(PooledArenaAllocator* owner, size_t block_bytes)
        : owner_(owner), block_(new char[block_bytes]), block_bytes_(block_bytes) {}

    void Init() {
      google::protobuf::ArenaOptions options;
      options.initial_block = block_.get();
      options.initial_block_size = block_bytes_;
      arena_.emplace(options);
      this->set_request(google::protobuf::Arena::CreateMessage<Request>(&*arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Response>(&*arena_));
    }

    // gRPC calls this once the call is done with both messages.
    void Release() override {
      arena_.reset();  // frees the spilled blocks; the initial block stays ours
      owner_->Recycle(std::unique_ptr<Holder>(this));
    }

   private:
    PooledArenaAllocator* owner_;
    std::unique_ptr<char[]> block_;
    size_t block_bytes_;
    std::optional<google::protobuf::Arena> arena_;
  };

  void Recycle(std::unique_ptr<Holder> h) {
    std::lock_guard lock(mu_);
    if (free_.size() < max_pooled_) free_.push_back(std::move(h));
  }

  const size_t block_bytes_;
  const size_t max_pooled_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Holder>> free_;  // guarded by mu_
};

}  // namespace specplan::service

#endif  // SPECPLAN_SERVICE_ARENA_ALLOCATOR_H_
