// Command-line flags that choose a worker's gradient compression
// (taups::CompressionConfig), for ps_worker and the benchmarks.
#ifndef TAUPS_WORKER_TOOLS_COMPRESSION_FLAGS_H_
#define TAUPS_WORKER_TOOLS_COMPRESSION_FLAGS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/flag_checks.h"
#include "taups/compression.h"

namespace taups {

// Reads --push_codec, --bucket_size, --rounding, --topk_ratio, --topk_values,
// --error_feedback, --accumulate_steps, --topk_warmup_pushes,
// --topk_warmup_start_ratio, --pull_codec and --compression_seed;
// INVALID_ARGUMENT naming the bad flag or field.
absl::StatusOr<CompressionConfig> CompressionFromFlags();

// The allowed range of each numeric flag above, for CheckNumericFlags().
absl::Span<const FlagRange> CompressionFlagRanges();

}  // namespace taups

#endif  // TAUPS_WORKER_TOOLS_COMPRESSION_FLAGS_H_
