// One table's worker-side compression state (Client::SetCompression): the
// settings, the error-feedback residual, the accumulation buffer, the count
// of pushes sent (the top-k warm-up and the stochastic-rounding seeds follow
// it) and the bytes counters.
//
// Thread-safe. The residual and the accumulation buffer are guarded by mu_;
// a push encodes all its slices under it, so two concurrent pushes of one
// table never interleave their error-feedback updates. A large push encodes
// its slices on several short-lived threads (up to 8, at least 2^18 values
// each), with the same result as one after another.
#ifndef TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_
#define TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/error_feedback.h"
#include "taups/client.h"
#include "taups/compression.h"

namespace taups {

class TableCompression {
 public:
  // `config` must have passed Validate(). `dense_size` is the dense table's
  // size (0 for sparse tables).
  TableCompression(const CompressionConfig& config, uint32_t worker_id,
                   uint64_t dense_size);

  const CompressionConfig& config() const { return config_; }

  // Accumulation: adds `gradient` to the buffer. Returns the sum of the
  // last accumulate_steps gradients when this call completes a group (and
  // empties the buffer), nullopt while the group is still filling. With
  // accumulate_steps == 1 it returns a copy of `gradient`.
  std::optional<std::vector<float>> Accumulate(absl::Span<const float> gradient);

  // Encodes one dense push, one block per (offset, count) part, with error
  // feedback when configured. Counts the push. Encodes on `max_threads`
  // threads (at most one per part; 0 = as many as help, up to 8); the result
  // does not depend on it.
  absl::StatusOr<std::vector<std::string>> EncodeDense(
      absl::Span<const float> gradient,
      absl::Span<const std::pair<uint64_t, uint64_t>> parts,
      size_t max_threads = 0);

  // The same through a SliceEncoder (error feedback is the encoder's).
  absl::StatusOr<std::vector<std::string>> EncodeDenseWith(
      SliceEncoder& encoder,
      absl::Span<const std::pair<uint64_t, uint64_t>> parts);

  // Encodes one shard's merged sparse rows (rows of `dim` values); a bucket
  // size of 0 makes each row its own bucket.
  absl::Status EncodeRows(absl::Span<const float> rows, uint32_t dim,
                          uint64_t push_index, std::string* block) const;
  // Reserves a push number for a sparse push (the seed and warm-up follow it).
  uint64_t NextPushIndex() { return pushes_.fetch_add(1); }

  void CountPush(uint64_t raw_bytes, uint64_t wire_bytes);
  void CountPull(uint64_t raw_bytes, uint64_t wire_bytes);
  void CountDeferred() { deferred_.fetch_add(1); }
  TransferCounters counters() const;
  // A copy of the error-feedback residual (empty without error feedback).
  std::vector<float> residual() const;

 private:
  CodecOptions OptionsFor(uint64_t push_index) const;

  const CompressionConfig config_;
  const uint32_t worker_id_;
  std::atomic<uint64_t> pushes_{0};
  std::atomic<uint64_t> deferred_{0};
  std::atomic<uint64_t> push_raw_{0}, push_wire_{0};
  std::atomic<uint64_t> pull_raw_{0}, pull_wire_{0};
  std::atomic<uint64_t> pushes_sent_{0}, pulls_{0};
  mutable absl::Mutex mu_;
  std::unique_ptr<ErrorFeedback> feedback_ ABSL_GUARDED_BY(mu_);
  std::vector<float> accumulated_ ABSL_GUARDED_BY(mu_);
  uint32_t accumulated_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_
