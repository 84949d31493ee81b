#include "worker/src/table_compression.h"

#include <algorithm>
#include <atomic>
#include <thread>

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
    absl::Span<const std::pair<uint64_t, uint64_t>> parts, size_t max_threads) {
  const CodecOptions options = OptionsFor(NextPushIndex());
  std::vector<std::string> blocks(parts.size());
  absl::MutexLock lock(&mu_);
  ErrorFeedback* const feedback = feedback_.get();
  const auto encode_part = [&](size_t i) {
    const auto [offset, count] = parts[i];
    absl::Span<const float> part = gradient.subspan(offset, count);
    return feedback != nullptr
               ? feedback->EncodeRange(part, offset, options, &blocks[i])
               : EncodeBlock(part, options, offset, &blocks[i]);
  };
  // The parts cover disjoint ranges (of the gradient and of the residual)
  // and their encoding depends only on (options, offset), so any order gives
  // the same blocks and residual as the loop below. With a non-finite value
  // (of the gradient, or of gradient + residual) a part can fail, and the
  // loop stops there, leaving later parts' residuals untouched; so the parts
  // are checked first (in parallel too) and such pushes take the loop.
  const size_t threads = max_threads > 0
                            ? std::min(max_threads, parts.size())
                            : EncodeThreadsFor(gradient.size(), parts.size());
  if (threads > 1) {
    std::vector<char> finite(parts.size());
    ParallelFor(parts.size(), threads, [&](size_t i) {
      const auto [offset, count] = parts[i];
      const absl::Span<const float> part = gradient.subspan(offset, count);
      finite[i] = feedback != nullptr
                      ? AllSumsFinite(part, feedback->residual().subspan(
                                                offset, count))
                      : AllFinite(part);
    });
    if (std::all_of(finite.begin(), finite.end(), [](char f) { return f; })) {
      std::vector<absl::Status> statuses(parts.size());
      ParallelFor(parts.size(), threads,
                  [&](size_t i) { statuses[i] = encode_part(i); });
      for (const absl::Status& status : statuses) {
        if (!status.ok()) return status;
      }
      return blocks;
    }
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    absl::Status status = encode_part(i);
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

std::vector<float> TableCompression::residual() const {
  absl::MutexLock lock(&mu_);
  if (feedback_ == nullptr) return {};
  const absl::Span<const float> r = feedback_->residual();
  return std::vector<float>(r.begin(), r.end());
}

}  // namespace taups
