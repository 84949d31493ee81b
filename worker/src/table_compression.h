// One table's worker-side compression state (Client::SetCompression): the
// settings, the error-feedback residual, the accumulation buffer, the count
// of pushes sent (the top-k warm-up and the stochastic-rounding seeds follow
// it) and the bytes counters.
//
// Dense pushes are transactional: the residual and the accumulation buffer
// change only by what the shards accepted. A push starts (StartDense: it
// takes the accumulated sum, or the caller's gradient), encodes into a
// PendingDensePush (the blocks, and the residual each part would leave)
// without touching the residual, and is finished with one flag per part
// saying whether the part was delivered. A delivered part stores its
// residual; an undelivered one (the push failed to encode, an RPC failed, a
// shard refused it) leaves the residual of its range as it was before the
// push and gives its range of the accumulated sum back to the buffer, so the
// next push carries it (unless that range holds a NaN or an infinity, which
// no shard would ever accept: it is dropped). Parts are judged one by one because each shard
// applies its own parts whole or not at all (staged until the last slice),
// independently of the other shards: when shard 0 accepts and shard 1
// refuses, shard 0's ranges commit and shard 1's are kept for later.
//
// Thread-safe. mu_ guards the residual and the accumulation buffer. With
// error feedback, one push per table is between encoding and finishing at
// a time: a second push's encoding waits until the first is finished (its
// answers are in), since it must add the residual the first one leaves.
// So PushDenseAsync of an error-feedback table blocks while an earlier push
// of that table is in flight. Accumulation alone needs no such wait: sums
// given back are added to whatever the buffer holds then. A large push
// encodes its slices on several short-lived threads (up to 8, at least 2^18
// values each), with the same result as one after another.
//
// EncodeDenseWith (a SliceEncoder, e.g. the GPU's DeviceGradient): the
// encoder keeps its own residual, pending until Finish tells it which parts
// were delivered (SliceEncoder::FinishPush); with error feedback such pushes
// take the same one-at-a-time turn.
#ifndef TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_
#define TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "common/error_feedback.h"
#include "taups/client.h"
#include "taups/compression.h"

namespace taups {

class TableCompression;

// One dense push between TableCompression::StartDense and the shards'
// answers: what it sends (gradient(), blocks()) and what it will change in
// its table's state once the answers say which parts were delivered.
// Finish() applies that once; a push destroyed unfinished counts as
// undelivered everywhere. Thread-compatible; the TableCompression must
// outlive it.
class PendingDensePush {
 public:
  PendingDensePush(const PendingDensePush&) = delete;
  PendingDensePush& operator=(const PendingDensePush&) = delete;
  ~PendingDensePush();

  // The values this push sends: the accumulated sum, or the caller's
  // gradient.
  absl::Span<const float> gradient() const { return gradient_; }
  const std::vector<std::pair<uint64_t, uint64_t>>& parts() const {
    return parts_;
  }
  // One block per part once encoded (the caller may move them out).
  std::vector<std::string>& blocks() { return blocks_; }

  // `delivered[i]`: part i was applied (its shard accepted the push).
  // Later calls do nothing.
  void Finish(const std::vector<bool>& delivered);

 private:
  friend class TableCompression;
  PendingDensePush(TableCompression* owner,
                   std::vector<std::pair<uint64_t, uint64_t>> parts)
      : owner_(owner), parts_(std::move(parts)) {}

  TableCompression* owner_;  // null once finished
  std::vector<std::pair<uint64_t, uint64_t>> parts_;
  absl::Span<const float> gradient_;
  std::vector<float> sum_;  // accumulation: the sum this push carries
  std::vector<std::string> blocks_;
  // Error feedback: this push holds the table's turn (feedback_free_ is
  // false for it) and its parts' residuals wait in next_residual_.
  bool holds_feedback_ = false;
  // EncodeDenseWith: the encoder told at Finish which parts were delivered.
  SliceEncoder* encoder_ = nullptr;
};

class TableCompression {
 public:
  // `config` must have passed Validate(). `dense_size` is the dense table's
  // size (0 for sparse tables).
  TableCompression(const CompressionConfig& config, uint32_t worker_id,
                   uint64_t dense_size);

  const CompressionConfig& config() const { return config_; }

  // Takes `gradient` for a dense push travelling in `parts` ((offset,
  // count) ranges, disjoint). With accumulation (accumulate_steps > 1) adds
  // it to the buffer and returns null while the group is still filling;
  // when the call completes a group, the push carries the buffer's sum (the
  // buffer starts over; Finish gives back what was not delivered). Without,
  // the push refers to `gradient`, which must outlive it. An encoder push
  // (EncodeDenseWith) passes an empty gradient.
  std::unique_ptr<PendingDensePush> StartDense(
      absl::Span<const float> gradient,
      std::vector<std::pair<uint64_t, uint64_t>> parts);

  // Encodes `push`, one block per part, with error feedback when
  // configured (into the push's pending residual; the table's residual is
  // unchanged until Finish). Counts the push. Encodes on `max_threads`
  // threads (at most one per part; 0 = as many as help, up to 8); the
  // result does not depend on it. With error feedback, waits first until no
  // other push of this table is between encoding and finishing. On error
  // nothing changed; `push` may be dropped (or finished) as undelivered.
  absl::Status EncodeDense(PendingDensePush& push, size_t max_threads = 0);

  // The same through a SliceEncoder (error feedback is the encoder's; it
  // commits in Finish, through SliceEncoder::FinishPush). `encoder` must
  // outlive the push's Finish.
  absl::Status EncodeDenseWith(PendingDensePush& push, SliceEncoder& encoder);

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
  // A copy of the accumulation buffer (empty before the first gradient) and
  // the number of gradients in the group it is filling.
  std::vector<float> accumulated() const;
  uint32_t accumulated_count() const;

 private:
  friend class PendingDensePush;

  CodecOptions OptionsFor(uint64_t push_index) const;
  // PendingDensePush::Finish: stores the delivered parts' residuals, gives
  // back the undelivered parts' sums, and ends the push's turn.
  void FinishDense(PendingDensePush& push, const std::vector<bool>& delivered);

  const CompressionConfig config_;
  const uint32_t worker_id_;
  std::atomic<uint64_t> pushes_{0};
  std::atomic<uint64_t> deferred_{0};
  std::atomic<uint64_t> push_raw_{0}, push_wire_{0};
  std::atomic<uint64_t> pull_raw_{0}, pull_wire_{0};
  std::atomic<uint64_t> pushes_sent_{0}, pulls_{0};
  mutable absl::Mutex mu_;
  std::unique_ptr<ErrorFeedback> feedback_ ABSL_GUARDED_BY(mu_);
  // False while an error-feedback push is between EncodeDense and Finish;
  // that push's parts hold their residual-to-be in next_residual_ (the
  // tensor's size; the other elements mean nothing). All parts delivered,
  // it is swapped with the residual, so a push commits without a copy.
  bool feedback_free_ ABSL_GUARDED_BY(mu_) = true;
  std::vector<float> next_residual_ ABSL_GUARDED_BY(mu_);
  std::vector<float> accumulated_ ABSL_GUARDED_BY(mu_);
  uint32_t accumulated_count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_TABLE_COMPRESSION_H_
