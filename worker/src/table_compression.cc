#include "worker/src/table_compression.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/shard_map.h"
#include "common/vector_math.h"

namespace taups {
namespace {

// A push's parts are encoded on several threads (the caller's included)
// when each thread gets at least kMinValuesPerEncodeThread values: below
// that, starting a thread costs more than it saves.
constexpr size_t kMaxEncodeThreads = 8;
constexpr uint64_t kMinValuesPerEncodeThread = uint64_t{1} << 18;

size_t EncodeThreadsFor(uint64_t values, size_t parts) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t by_size = static_cast<size_t>(values / kMinValuesPerEncodeThread);
  return std::max<size_t>(
      1, std::min({cores, by_size, parts, kMaxEncodeThreads}));
}

// Runs body(i) for every i < count on `threads` threads, the calling
// one included.
template <typename Body>
void ParallelFor(size_t count, size_t threads, const Body& body) {
  std::atomic<size_t> next{0};
  const auto drain = [&] {
    for (size_t i; (i = next.fetch_add(1)) < count;) body(i);
  };
  std::vector<std::thread> helpers;
  helpers.reserve(threads - 1);
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(drain);
  drain();
  for (std::thread& helper : helpers) helper.join();
}

}  // namespace

TableCompression::TableCompression(const CompressionConfig& config,
                                   uint32_t worker_id, uint64_t dense_size)
    : config_(config), worker_id_(worker_id) {
  if (config.error_feedback && dense_size > 0) {
    feedback_ = std::make_unique<ErrorFeedback>(dense_size);
  }
}

PendingDensePush::~PendingDensePush() { Finish({}); }

void PendingDensePush::Finish(const std::vector<bool>& delivered) {
  if (owner_ == nullptr) return;
  TableCompression* const owner = owner_;
  owner_ = nullptr;
  owner->FinishDense(*this, delivered);
}

std::unique_ptr<PendingDensePush> TableCompression::StartDense(
    absl::Span<const float> gradient,
    std::vector<std::pair<uint64_t, uint64_t>> parts) {
  if (config_.accumulate_steps <= 1 || gradient.empty()) {
    std::unique_ptr<PendingDensePush> push(
        new PendingDensePush(this, std::move(parts)));
    push->gradient_ = gradient;
    return push;
  }
  absl::MutexLock lock(&mu_);
  if (accumulated_.size() != gradient.size()) {
    accumulated_.assign(gradient.size(), 0.0f);
    accumulated_count_ = 0;
  }
  for (size_t i = 0; i < gradient.size(); ++i) accumulated_[i] += gradient[i];
  if (++accumulated_count_ < config_.accumulate_steps) return nullptr;
  std::unique_ptr<PendingDensePush> push(
      new PendingDensePush(this, std::move(parts)));
  push->sum_.assign(gradient.size(), 0.0f);
  push->sum_.swap(accumulated_);
  accumulated_count_ = 0;
  push->gradient_ = push->sum_;
  return push;
}

void TableCompression::FinishDense(PendingDensePush& push,
                                   const std::vector<bool>& delivered) {
  const auto delivered_part = [&](size_t i) {
    return i < delivered.size() && delivered[i];
  };
  absl::MutexLock lock(&mu_);
  if (push.encoder_ != nullptr) {
    // The encoder keeps the residual: it commits the delivered parts.
    std::vector<bool> flags(push.parts_.size());
    for (size_t i = 0; i < flags.size(); ++i) flags[i] = delivered_part(i);
    push.encoder_->FinishPush(push.parts_, flags);
    push.encoder_ = nullptr;
    if (push.holds_feedback_) {
      push.holds_feedback_ = false;
      feedback_free_ = true;
    }
  } else if (push.holds_feedback_) {
    uint64_t covered = 0;
    bool all_delivered = true;
    for (size_t i = 0; i < push.parts_.size(); ++i) {
      covered += push.parts_[i].second;
      all_delivered = all_delivered && delivered_part(i);
    }
    if (all_delivered && covered == feedback_->size()) {
      feedback_->SwapResidual(next_residual_);  // the parts cover it all
    } else {
      for (size_t i = 0; i < push.parts_.size(); ++i) {
        if (!delivered_part(i)) continue;
        const auto [offset, count] = push.parts_[i];
        feedback_->Store(offset,
                         absl::MakeConstSpan(next_residual_).subspan(offset, count));
      }
    }
    push.holds_feedback_ = false;
    feedback_free_ = true;
  }
  if (!push.sum_.empty()) {
    // The undelivered ranges of the sum go back for the next push, except
    // a range holding a non-finite value: no shard would ever take it, and
    // kept it would make every later push fail. The group count is left
    // alone: pushes still go out once per accumulate_steps calls.
    if (accumulated_.size() != push.sum_.size()) {
      accumulated_.assign(push.sum_.size(), 0.0f);
      accumulated_count_ = 0;
    }
    for (size_t i = 0; i < push.parts_.size(); ++i) {
      if (delivered_part(i)) continue;
      const auto [offset, count] = push.parts_[i];
      const absl::Span<const float> part =
          absl::MakeConstSpan(push.sum_).subspan(offset, count);
      if (!AllFinite(part)) continue;
      for (uint64_t j = offset; j < offset + count; ++j) {
        accumulated_[j] += push.sum_[j];
      }
    }
  }
}

CodecOptions TableCompression::OptionsFor(uint64_t push_index) const {
  CodecOptions options = config_.push;
  if (options.codec == CodecKind::kTopK && options.topk_count == 0) {
    options.topk_ratio = TopKRatioAt(config_, push_index);
  }
  // Distinct, reproducible draws per (seed, worker, push).
  options.seed = MixKey(config_.push.seed ^ MixKey((uint64_t{worker_id_} << 40) ^ push_index));
  return options;
}

absl::Status TableCompression::EncodeDense(PendingDensePush& push,
                                           size_t max_threads) {
  const CodecOptions options = OptionsFor(NextPushIndex());
  const std::vector<std::pair<uint64_t, uint64_t>>& parts = push.parts_;
  const absl::Span<const float> gradient = push.gradient_;
  std::vector<std::string> blocks(parts.size());
  absl::MutexLock lock(&mu_);
  ErrorFeedback* const feedback = feedback_.get();
  absl::Span<float> next;
  if (feedback != nullptr) {
    // This push adds the residual the previous one leaves: wait for its
    // answers.
    mu_.Await(absl::Condition(&feedback_free_));
    next_residual_.resize(feedback->size());
    next = absl::MakeSpan(next_residual_);
  }
  const auto encode_part = [&](size_t i) {
    const auto [offset, count] = parts[i];
    const absl::Span<const float> part = gradient.subspan(offset, count);
    if (feedback == nullptr) return EncodeBlock(part, options, offset, &blocks[i]);
    if (offset > next.size() || count > next.size() - offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          "error feedback: part [", offset, ", ", offset + count,
          ") passes the table's ", next.size(), " elements"));
    }
    return feedback->EncodeRangeInto(part, offset, options, &blocks[i],
                                     next.subspan(offset, count));
  };
  // The parts cover disjoint ranges and their encoding depends only on
  // (options, offset) and the residual, which no part writes here; so any
  // order gives the same blocks and pending residuals, and the first
  // failing part's status is the same too.
  const size_t threads = max_threads > 0
                            ? std::min(max_threads, parts.size())
                            : EncodeThreadsFor(gradient.size(), parts.size());
  std::vector<absl::Status> statuses(parts.size());
  if (threads > 1) {
    ParallelFor(parts.size(), threads,
                [&](size_t i) { statuses[i] = encode_part(i); });
  } else {
    for (size_t i = 0; i < parts.size(); ++i) {
      statuses[i] = encode_part(i);
      if (!statuses[i].ok()) break;
    }
  }
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  push.blocks_ = std::move(blocks);
  if (feedback != nullptr) {
    push.holds_feedback_ = true;
    feedback_free_ = false;
  }
  return absl::OkStatus();
}

absl::Status TableCompression::EncodeDenseWith(PendingDensePush& push,
                                               SliceEncoder& encoder) {
  const CodecOptions options = OptionsFor(NextPushIndex());
  const std::vector<std::pair<uint64_t, uint64_t>>& parts = push.parts_;
  std::vector<std::string> blocks(parts.size());
  absl::MutexLock lock(&mu_);
  // With error feedback this push adds the residual the previous one leaves
  // once the shards answered it: wait for its Finish.
  if (config_.error_feedback) mu_.Await(absl::Condition(&feedback_free_));
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::Status status = encoder.EncodeSlice(parts[i].first, parts[i].second,
                                              options, config_.error_feedback,
                                              &blocks[i]);
    if (!status.ok()) return status;  // nothing committed; no FinishPush
  }
  push.blocks_ = std::move(blocks);
  push.encoder_ = &encoder;
  if (config_.error_feedback) {
    push.holds_feedback_ = true;
    feedback_free_ = false;
  }
  return absl::OkStatus();
}

absl::Status TableCompression::EncodeRows(absl::Span<const float> rows,
                                          uint32_t dim, uint64_t push_index,
                                          std::string* block) const {
  CodecOptions options = OptionsFor(push_index);
  if (options.bucket_size == 0) options.bucket_size = dim;
  return EncodeBlock(rows, options, 0, block);
}

void TableCompression::CountPush(uint64_t raw_bytes, uint64_t wire_bytes) {
  pushes_sent_.fetch_add(1);
  push_raw_.fetch_add(raw_bytes);
  push_wire_.fetch_add(wire_bytes);
}

void TableCompression::CountPull(uint64_t raw_bytes, uint64_t wire_bytes) {
  pulls_.fetch_add(1);
  pull_raw_.fetch_add(raw_bytes);
  pull_wire_.fetch_add(wire_bytes);
}

TransferCounters TableCompression::counters() const {
  TransferCounters c;
  c.pushes_sent = pushes_sent_.load();
  c.pushes_deferred = deferred_.load();
  c.push_raw_bytes = push_raw_.load();
  c.push_wire_bytes = push_wire_.load();
  c.pulls = pulls_.load();
  c.pull_raw_bytes = pull_raw_.load();
  c.pull_wire_bytes = pull_wire_.load();
  return c;
}

std::vector<float> TableCompression::accumulated() const {
  absl::MutexLock lock(&mu_);
  return accumulated_;
}

uint32_t TableCompression::accumulated_count() const {
  absl::MutexLock lock(&mu_);
  return accumulated_count_;
}

std::vector<float> TableCompression::residual() const {
  absl::MutexLock lock(&mu_);
  if (feedback_ == nullptr) return {};
  const absl::Span<const float> r = feedback_->residual();
  return std::vector<float>(r.begin(), r.end());
}

}  // namespace taups
