// Memory for the values of large pull answers that gRPC sends straight from
// the shard's memory (a raw pull, server/grpc_service.cc).
//
// Why not malloc: an answer is allocated on whichever gRPC thread runs the
// pull and freed when gRPC has sent it. glibc serves such large blocks from
// the allocating thread's arena once its mmap threshold has grown, and
// keeps a freed one there for that arena's next use; with one arena per
// thread (up to 8 per core) a shard ended up holding roughly one answer per
// thread that had ever pulled, resident and unused. Here the buffers are
// the shard's own mappings: up to `keep_bytes` of freed ones are kept for
// the next answers (warm pages: neither page faults nor zero-filling), and
// a buffer freed past that is unmapped at once. So the shard's resident
// memory follows the answers in flight, whatever the number of threads.
//
// A buffer is handed out uninitialized (what an earlier answer left, or
// zeros from the kernel); the pull overwrites all of it.
//
// Thread-safety: thread-safe. A Buffer may outlive the AnswerBuffers that
// gave it (it keeps the pool alive) and be released on any thread.
#ifndef TAUPS_SERVER_ANSWER_BUFFERS_H_
#define TAUPS_SERVER_ANSWER_BUFFERS_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace taups {

class AnswerBuffers : public std::enable_shared_from_this<AnswerBuffers> {
 public:
  // Answers smaller than this are left to the response message (malloc's
  // small blocks are cheap and not kept per thread in bulk).
  static constexpr size_t kMinBytes = size_t{64} << 10;
  // Freed buffers kept for reuse, at most (bytes of capacity).
  static constexpr size_t kDefaultKeepBytes = size_t{64} << 20;

  class Buffer {
   public:
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer();  // gives the mapping back to its pool
    // Exactly the bytes asked for.
    absl::Span<char> bytes() const { return {data_, size_}; }

   private:
    friend class AnswerBuffers;
    Buffer(std::shared_ptr<AnswerBuffers> pool, char* data, size_t capacity,
           size_t size)
        : pool_(std::move(pool)), data_(data), capacity_(capacity), size_(size) {}
    const std::shared_ptr<AnswerBuffers> pool_;
    char* const data_;
    const size_t capacity_;
    const size_t size_;
  };

  static std::shared_ptr<AnswerBuffers> Create(
      size_t keep_bytes = kDefaultKeepBytes);
  AnswerBuffers(const AnswerBuffers&) = delete;
  AnswerBuffers& operator=(const AnswerBuffers&) = delete;
  ~AnswerBuffers();  // unmaps the kept buffers

  // Room for `bytes` (> 0): a kept buffer of at least that capacity and at
  // most twice it, or a new mapping. Null when the system refuses the
  // memory (the caller answers from the response message instead).
  std::unique_ptr<Buffer> Take(size_t bytes);

  // Bytes of capacity kept now (freed, waiting for reuse), lent now (in
  // Buffers not yet released: answers being written or sent), and mappings
  // made since the start: for tests and metrics.
  size_t kept_bytes() const;
  size_t lent_bytes() const;
  size_t mappings_made() const;

 private:
  struct Block {
    char* data;
    size_t capacity;
  };
  explicit AnswerBuffers(size_t keep_bytes) : keep_bytes_(keep_bytes) {}
  void Give(Block block);

  const size_t keep_bytes_;
  mutable absl::Mutex mu_;
  std::vector<Block> kept_ ABSL_GUARDED_BY(mu_);  // oldest first
  size_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<size_t> lent_bytes_{0};
  std::atomic<size_t> mappings_made_{0};
};

}  // namespace taups

#endif  // TAUPS_SERVER_ANSWER_BUFFERS_H_
