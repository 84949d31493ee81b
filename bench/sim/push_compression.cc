#include "bench/sim/push_compression.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/shard_map.h"
#include "common/wire_tensor.h"

namespace taups::sim {

SimPushCompression::SimPushCompression(const CompressionConfig& config,
                                       uint64_t run_seed, uint32_t worker,
                                       uint64_t size)
    : config_(config), run_seed_(run_seed), worker_(worker) {
  if (config.error_feedback) feedback_.emplace(size);
}

CodecOptions SimPushCompression::OptionsFor(uint64_t push_index) const {
  CodecOptions options = config_.push;
  if (options.codec == CodecKind::kTopK && options.topk_count == 0) {
    options.topk_ratio = TopKRatioAt(config_, push_index);
  }
  // Independent draws per (run, worker, push); the element index inside the
  // tensor is mixed in by the codec itself.
  options.seed = MixKey(run_seed_ ^ MixKey(config_.push.seed) ^
                        MixKey((uint64_t{worker_} << 40) ^ push_index));
  return options;
}

absl::Span<const float> SimPushCompression::residual() const {
  if (!feedback_) return {};
  return feedback_->residual();
}

absl::Status SimPushCompression::Apply(absl::Span<float> values,
                                       absl::Span<const DenseSlice> plan,
                                       PushBytes* bytes) {
  const CodecOptions options = OptionsFor(pushes_++);
  for (const DenseSlice& slice : plan) {
    if (slice.offset + slice.count > values.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice [", slice.offset, ", ", slice.offset + slice.count,
          ") passes the tensor's ", values.size(), " values"));
    }
    absl::Span<float> part = values.subspan(slice.offset, slice.count);
    absl::Status encoded =
        feedback_ ? feedback_->EncodeRange(part, slice.offset, options, &block_)
                  : EncodeBlock(part, options, slice.offset, &block_);
    if (!encoded.ok()) return encoded;
    absl::StatusOr<absl::Span<const float>> received = GradientFromWire(
        block_, /*encoded=*/true, slice.count, &decoded_, "gradient");
    if (!received.ok()) return received.status();
    if (received->size() != part.size()) {
      return absl::InternalError(absl::StrCat(
          "a block of ", part.size(), " values decoded to ", received->size()));
    }
    std::copy(received->begin(), received->end(), part.begin());
    bytes->raw += 4 * slice.count;
    bytes->wire += block_.size();
  }
  return absl::OkStatus();
}

}  // namespace taups::sim
