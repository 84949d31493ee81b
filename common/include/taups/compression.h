// Gradient and parameter compression settings, part of the installed client
// API (see taups::Client::SetCompression).
//
// A worker encodes what it pushes with a codec; the encoded block says which
// codec made it (common/codec_format.h), so the server decodes any block
// without being told. Error feedback, accumulation and the top-k density
// warm-up are worker-side: the server never sees them.
//
// Plain value types; no thread-safety concerns.
#ifndef TAUPS_COMPRESSION_H_
#define TAUPS_COMPRESSION_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace taups {

// The numeric values are the codec ids written into encoded blocks: never
// renumber them.
enum class CodecKind : uint8_t {
  kNone = 0,  // float32, 4 bytes per value
  kFp16 = 1,  // IEEE half, round to nearest even
  kBf16 = 2,  // bfloat16, round to nearest even
  kInt8 = 3,  // levels -127..127 of a per-bucket step
  kInt4 = 4,  // levels -7..7 of a per-bucket step
  kInt2 = 5,  // levels -1, 0, 1 of a per-bucket step (ternary)
  kSign = 6,  // one bit per value; each bucket decodes to +-(L1 norm / size)
  kTopK = 7,  // the k largest magnitudes: u32 index + value (value codec)
};

enum class Rounding : uint8_t {
  kNearest = 0,     // round half to even: deterministic
  kStochastic = 1,  // round up with probability = the fractional part;
                    // unbiased; reproducible from (seed, element index)
};

// "none" | "fp32" | "fp16" | "bf16" | "int8" | "int4" | "int2" | "sign" |
// "topk"; INVALID_ARGUMENT otherwise.
absl::StatusOr<CodecKind> ParseCodecKind(absl::string_view text);
const char* CodecKindName(CodecKind kind);
// "nearest" | "stochastic".
absl::StatusOr<Rounding> ParseRounding(absl::string_view text);
const char* RoundingName(Rounding rounding);

// Number of values sharing one scale in int8/int4/int2/sign blocks.
inline constexpr uint32_t kDefaultBucketSize = 512;
// Largest bucket size a block may declare.
inline constexpr uint32_t kMaxBucketSize = uint32_t{1} << 20;

// How one block is encoded.
struct CodecOptions {
  CodecKind codec = CodecKind::kNone;
  uint32_t bucket_size = kDefaultBucketSize;  // quantizers and sign
  Rounding rounding = Rounding::kNearest;     // int8/int4/int2
  uint64_t seed = 0;  // stochastic rounding: with the element index, the
                      // only source of randomness
  // Top-k: keep topk_count values when non-zero, else ceil(topk_ratio * n)
  // (at least 1 for a non-empty input).
  double topk_ratio = 0.01;
  uint64_t topk_count = 0;
  // Top-k: how the kept values travel (none, fp16, bf16, int8, int4, int2).
  CodecKind topk_values = CodecKind::kNone;

  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

// A worker's compression settings for one table (Client::SetCompression).
struct CompressionConfig {
  // How pushed gradients (dense and sparse) are encoded. For sparse pushes
  // with a bucketed codec and bucket_size 0, each row is its own bucket.
  CodecOptions push;
  // Error feedback: keep what encoding lost (a residual per table, on this
  // worker) and add it to the next gradient before encoding. Dense tables.
  bool error_feedback = false;
  // Gradient accumulation: sum this many PushDense calls locally and send
  // the sum with the last one (the others return PushResult::deferred).
  uint32_t accumulate_steps = 1;
  // Top-k density warm-up (Deep Gradient Compression): the first
  // `topk_warmup_pushes` pushes keep a ratio falling exponentially from
  // topk_warmup_start_ratio to push.topk_ratio; 0 = no warm-up.
  uint32_t topk_warmup_pushes = 0;
  double topk_warmup_start_ratio = 0.25;
  // How pulled parameters travel: none, fp16, bf16 or int8 (nearest).
  CodecKind pull = CodecKind::kNone;
  uint32_t pull_bucket_size = kDefaultBucketSize;

  absl::Status Validate() const;
};

// A gradient the client cannot read directly (say, one in GPU memory), which
// encodes its own slices: Client::PushDenseWith asks it for one block per
// slice the push travels in. cuda/device_gradient.h has the CUDA one.
class SliceEncoder {
 public:
  virtual ~SliceEncoder() = default;
  // Elements in the whole gradient (the dense table's size).
  virtual uint64_t size() const = 0;
  // Encodes elements [offset, offset + count) with `options` (numbering
  // them from `offset` for stochastic rounding) into `block`, exactly as
  // taups::EncodeBlock would; with `error_feedback`, adds this range's
  // residual first and keeps what encoding lost, as ErrorFeedback does, as
  // the range's pending residual: the residual the next push adds changes
  // only in FinishPush.
  virtual absl::Status EncodeSlice(uint64_t offset, uint64_t count,
                                   const CodecOptions& options,
                                   bool error_feedback, std::string* block) = 0;
  // Called once for a push whose slices were all encoded and sent, after
  // the shards answered: parts[i] = (offset, count) of slice i, and
  // delivered[i] whether its shard applied it (accepted the push). An
  // error-feedback encoder commits the pending residual of the delivered
  // parts and drops the others' (they keep the residual they had before the
  // push), so a refused push changes nothing. Not called for a push that
  // failed to encode. The default keeps no state and does nothing.
  virtual void FinishPush(
      const std::vector<std::pair<uint64_t, uint64_t>>& parts,
      const std::vector<bool>& delivered) {
    (void)parts;
    (void)delivered;
  }
};

// The top-k ratio in force for push number `push_index` (0-based) under the
// warm-up schedule: start * (target / start)^((i + 1) / warmup) for
// i < warmup, the target afterwards.
double TopKRatioAt(const CompressionConfig& config, uint64_t push_index);

}  // namespace taups

#endif  // TAUPS_COMPRESSION_H_
