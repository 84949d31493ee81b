#include "worker/tools/compression_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"

ABSL_FLAG(std::string, push_codec, "none",
          "How gradients travel: none (fp32) | fp16 | bf16 | int8 | int4 | "
          "int2 (per-bucket scale) | sign (1 bit + bucket L1 mean) | topk "
          "(--topk_ratio of the values, u32 index + --topk_values)");
ABSL_FLAG(uint32_t, bucket_size, taups::kDefaultBucketSize,
          "Values sharing one scale in int8/int4/int2/sign blocks (sparse "
          "rows: 0 = one bucket per row)");
ABSL_FLAG(std::string, rounding, "nearest",
          "int8/int4/int2 rounding: nearest | stochastic (unbiased)");
ABSL_FLAG(double, topk_ratio, 0.01, "topk: fraction of values kept");
ABSL_FLAG(std::string, topk_values, "none",
          "topk: codec of the kept values (none, fp16, bf16, int8, int4, int2)");
ABSL_FLAG(bool, error_feedback, false,
          "Keep what compression lost and add it to the next gradient (dense "
          "tables)");
ABSL_FLAG(uint32_t, accumulate_steps, 1,
          "Sum this many steps' gradients locally and push once (dense tables)");
ABSL_FLAG(uint32_t, topk_warmup_pushes, 0,
          "topk: density warm-up over this many pushes, from "
          "--topk_warmup_start_ratio down to --topk_ratio (0 = none)");
ABSL_FLAG(double, topk_warmup_start_ratio, 0.25,
          "topk: the ratio of the first warm-up push");
ABSL_FLAG(std::string, pull_codec, "none",
          "How pulled parameters travel: none | fp16 | bf16 | int8");
ABSL_FLAG(uint64_t, compression_seed, 1,
          "Seed of stochastic rounding (mixed with the worker id and push)");

namespace taups {

absl::Span<const FlagRange> CompressionFlagRanges() {
  static constexpr FlagRange kRanges[] = {
      {"bucket_size", 0, kMaxBucketSize},
      {"topk_ratio", 0, 1, /*min_open=*/true},
      {"accumulate_steps", 1, 65536},
      {"topk_warmup_pushes", 0, MaxOf<uint32_t>()},
      {"topk_warmup_start_ratio", 0, 1, /*min_open=*/true},
      {"compression_seed", 0, MaxOf<uint64_t>()},
  };
  return kRanges;
}

absl::StatusOr<CompressionConfig> CompressionFromFlags() {
  CompressionConfig config;
  auto flag_error = [](const char* flag, const absl::Status& status) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": ", status.message()));
  };
  absl::StatusOr<CodecKind> push = ParseCodecKind(absl::GetFlag(FLAGS_push_codec));
  if (!push.ok()) return flag_error("push_codec", push.status());
  absl::StatusOr<Rounding> rounding = ParseRounding(absl::GetFlag(FLAGS_rounding));
  if (!rounding.ok()) return flag_error("rounding", rounding.status());
  absl::StatusOr<CodecKind> values = ParseCodecKind(absl::GetFlag(FLAGS_topk_values));
  if (!values.ok()) return flag_error("topk_values", values.status());
  absl::StatusOr<CodecKind> pull = ParseCodecKind(absl::GetFlag(FLAGS_pull_codec));
  if (!pull.ok()) return flag_error("pull_codec", pull.status());
  config.push.codec = *push;
  config.push.bucket_size = absl::GetFlag(FLAGS_bucket_size);
  config.push.rounding = *rounding;
  config.push.seed = absl::GetFlag(FLAGS_compression_seed);
  config.push.topk_ratio = absl::GetFlag(FLAGS_topk_ratio);
  config.push.topk_values = *values;
  config.error_feedback = absl::GetFlag(FLAGS_error_feedback);
  config.accumulate_steps = absl::GetFlag(FLAGS_accumulate_steps);
  config.topk_warmup_pushes = absl::GetFlag(FLAGS_topk_warmup_pushes);
  config.topk_warmup_start_ratio = absl::GetFlag(FLAGS_topk_warmup_start_ratio);
  config.pull = *pull;
  absl::Status valid = config.Validate();
  if (!valid.ok()) return valid;
  return config;
}

}  // namespace taups
