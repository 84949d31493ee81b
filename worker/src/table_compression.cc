#include "worker/src/table_compression.h"

#include <algorithm>

#include "common/codec.h"
#include "common/shard_map.h"

namespace taups {

TableCompression::TableCompression(const CompressionConfig& config,
                                   uint32_t worker_id, uint64_t dense_size)
    : config_(config), worker_id_(worker_id) {
  if (config.error_feedback && dense_size > 0) {
    feedback_ = std::make_unique<ErrorFeedback>(dense_size);
  }
}

std::optional<std::vector<float>> TableCompression::Accumulate(
    absl::Span<const float> gradient) {
  if (config_.accumulate_steps <= 1) {
    return std::vector<float>(gradient.begin(), gradient.end());
  }
  absl::MutexLock lock(&mu_);
  if (accumulated_.size() != gradient.size()) {
    accumulated_.assign(gradient.size(), 0.0f);
    accumulated_count_ = 0;
  }
  for (size_t i = 0; i < gradient.size(); ++i) accumulated_[i] += gradient[i];
  if (++accumulated_count_ < config_.accumulate_steps) return std::nullopt;
  std::vector<float> sum(gradient.size(), 0.0f);
  sum.swap(accumulated_);
  accumulated_count_ = 0;
  return sum;
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

absl::StatusOr<std::vector<std::string>> TableCompression::EncodeDense(
    absl::Span<const float> gradient,
    absl::Span<const std::pair<uint64_t, uint64_t>> parts) {
  const CodecOptions options = OptionsFor(NextPushIndex());
  std::vector<std::string> blocks(parts.size());
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < parts.size(); ++i) {
    const auto [offset, count] = parts[i];
    absl::Span<const float> part = gradient.subspan(offset, count);
    absl::Status status =
        feedback_ ? feedback_->EncodeRange(part, offset, options, &blocks[i])
                  : EncodeBlock(part, options, offset, &blocks[i]);
    if (!status.ok()) return status;
  }
  return blocks;
}

absl::StatusOr<std::vector<std::string>> TableCompression::EncodeDenseWith(
    SliceEncoder& encoder,
    absl::Span<const std::pair<uint64_t, uint64_t>> parts) {
  const CodecOptions options = OptionsFor(NextPushIndex());
  std::vector<std::string> blocks(parts.size());
  absl::MutexLock lock(&mu_);  // one push at a time through the residual
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::Status status = encoder.EncodeSlice(parts[i].first, parts[i].second,
                                              options, config_.error_feedback,
                                              &blocks[i]);
    if (!status.ok()) return status;
  }
  return blocks;
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

}  // namespace taups
