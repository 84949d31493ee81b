#include "server/answer_buffers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace taups {
namespace {

size_t RoundToPages(size_t bytes) {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

AnswerBuffers::Buffer::~Buffer() { pool_->Give(Block{data_, capacity_}); }

std::shared_ptr<AnswerBuffers> AnswerBuffers::Create(size_t keep_bytes) {
  return std::shared_ptr<AnswerBuffers>(new AnswerBuffers(keep_bytes));
}

AnswerBuffers::~AnswerBuffers() {
  // No Buffer is out: each holds a reference to this pool.
  for (const Block& block : kept_) munmap(block.data, block.capacity);
}

std::unique_ptr<AnswerBuffers::Buffer> AnswerBuffers::Take(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t capacity = RoundToPages(bytes);
  {
    absl::MutexLock lock(&mu_);
    // The smallest kept block that fits and wastes at most half of itself.
    size_t best = kept_.size();
    for (size_t i = 0; i < kept_.size(); ++i) {
      const size_t c = kept_[i].capacity;
      if (c < capacity || c / 2 > bytes) continue;
      if (best == kept_.size() || c < kept_[best].capacity) best = i;
    }
    if (best != kept_.size()) {
      const Block block = kept_[best];
      kept_.erase(kept_.begin() + best);
      kept_bytes_ -= block.capacity;
      lent_bytes_.fetch_add(block.capacity, std::memory_order_relaxed);
      return std::unique_ptr<Buffer>(
          new Buffer(shared_from_this(), block.data, block.capacity, bytes));
    }
  }
  void* data = mmap(nullptr, capacity, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (data == MAP_FAILED) return nullptr;
  mappings_made_.fetch_add(1, std::memory_order_relaxed);
  lent_bytes_.fetch_add(capacity, std::memory_order_relaxed);
  return std::unique_ptr<Buffer>(new Buffer(
      shared_from_this(), static_cast<char*>(data), capacity, bytes));
}

void AnswerBuffers::Give(Block block) {
  // Past keep_bytes_ the oldest kept blocks make room (the sizes pulled
  // lately stay warm); a block larger than keep_bytes_ is not kept.
  lent_bytes_.fetch_sub(block.capacity, std::memory_order_relaxed);
  std::vector<Block> unmap;
  {
    absl::MutexLock lock(&mu_);
    if (block.capacity > keep_bytes_) {
      unmap.push_back(block);
    } else {
      size_t dropped = 0;
      while (kept_bytes_ + block.capacity > keep_bytes_) {
        unmap.push_back(kept_[dropped]);
        kept_bytes_ -= kept_[dropped].capacity;
        ++dropped;
      }
      kept_.erase(kept_.begin(), kept_.begin() + dropped);
      kept_.push_back(block);
      kept_bytes_ += block.capacity;
    }
  }
  for (const Block& b : unmap) munmap(b.data, b.capacity);
}

size_t AnswerBuffers::kept_bytes() const {
  absl::MutexLock lock(&mu_);
  return kept_bytes_;
}

size_t AnswerBuffers::lent_bytes() const {
  return lent_bytes_.load(std::memory_order_relaxed);
}

size_t AnswerBuffers::mappings_made() const {
  return mappings_made_.load(std::memory_order_relaxed);
}

}  // namespace taups
