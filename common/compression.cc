#include "taups/compression.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/codec_format.h"

namespace taups {

absl::StatusOr<CodecKind> ParseCodecKind(absl::string_view text) {
  if (text == "none" || text == "fp32") return CodecKind::kNone;
  if (text == "fp16") return CodecKind::kFp16;
  if (text == "bf16") return CodecKind::kBf16;
  if (text == "int8") return CodecKind::kInt8;
  if (text == "int4") return CodecKind::kInt4;
  if (text == "int2") return CodecKind::kInt2;
  if (text == "sign") return CodecKind::kSign;
  if (text == "topk") return CodecKind::kTopK;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown codec '", text,
      "' (expected none, fp16, bf16, int8, int4, int2, sign or topk)"));
}

const char* CodecKindName(CodecKind kind) {
  switch (kind) {
    case CodecKind::kNone: return "none";
    case CodecKind::kFp16: return "fp16";
    case CodecKind::kBf16: return "bf16";
    case CodecKind::kInt8: return "int8";
    case CodecKind::kInt4: return "int4";
    case CodecKind::kInt2: return "int2";
    case CodecKind::kSign: return "sign";
    case CodecKind::kTopK: return "topk";
  }
  return "?";
}

absl::StatusOr<Rounding> ParseRounding(absl::string_view text) {
  if (text == "nearest") return Rounding::kNearest;
  if (text == "stochastic") return Rounding::kStochastic;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown rounding '", text, "' (expected nearest or stochastic)"));
}

const char* RoundingName(Rounding rounding) {
  return rounding == Rounding::kStochastic ? "stochastic" : "nearest";
}

absl::Status CodecOptions::Validate() const {
  if (static_cast<uint8_t>(codec) > static_cast<uint8_t>(CodecKind::kTopK)) {
    return absl::InvalidArgumentError("codec: unknown codec id");
  }
  const CodecKind scaled = codec == CodecKind::kTopK ? topk_values : codec;
  if (codec == CodecKind::kTopK) {
    if (!IsValueCodec(topk_values)) {
      return absl::InvalidArgumentError(
          "topk_values: must be none, fp16, bf16, int8, int4 or int2");
    }
    if (topk_count == 0 && !(topk_ratio > 0.0 && topk_ratio <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("topk_ratio: ", topk_ratio, " is outside (0, 1]"));
    }
  }
  if (HasScales(scaled) && (bucket_size == 0 || bucket_size > kMaxBucketSize)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bucket_size: ", bucket_size, " is outside [1, ", kMaxBucketSize, "]"));
  }
  return absl::OkStatus();
}

absl::Status CompressionConfig::Validate() const {
  CodecOptions checked = push;
  // Sparse pushes read bucket_size 0 as "one bucket per row".
  if (checked.bucket_size == 0) checked.bucket_size = 1;
  absl::Status status = checked.Validate();
  if (!status.ok()) return status;
  if (accumulate_steps == 0) {
    return absl::InvalidArgumentError("accumulate_steps: must be >= 1");
  }
  if (topk_warmup_pushes > 0 &&
      !(topk_warmup_start_ratio > 0.0 && topk_warmup_start_ratio <= 1.0)) {
    return absl::InvalidArgumentError(
        "topk_warmup_start_ratio: must be in (0, 1]");
  }
  if (pull != CodecKind::kNone && pull != CodecKind::kFp16 &&
      pull != CodecKind::kBf16 && pull != CodecKind::kInt8) {
    return absl::InvalidArgumentError(
        "pull: parameters travel as none, fp16, bf16 or int8");
  }
  if (pull == CodecKind::kInt8 &&
      (pull_bucket_size == 0 || pull_bucket_size > kMaxBucketSize)) {
    return absl::InvalidArgumentError("pull_bucket_size: outside [1, 2^20]");
  }
  return absl::OkStatus();
}

double TopKRatioAt(const CompressionConfig& config, uint64_t push_index) {
  const double target = config.push.topk_ratio;
  const uint32_t warmup = config.topk_warmup_pushes;
  if (warmup == 0 || push_index >= warmup ||
      config.topk_warmup_start_ratio <= target) {
    return target;
  }
  const double progress = static_cast<double>(push_index + 1) / warmup;
  return config.topk_warmup_start_ratio *
         std::pow(target / config.topk_warmup_start_ratio, progress);
}

}  // namespace taups
