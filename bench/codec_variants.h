// The codec settings codec_bench measures, each with the wire-size target the
// compression issue sets for it (encoded block bytes over the fp32 bytes of
// the same values), where it sets one:
//
//   int8 <= 0.26, int4 <= 0.13, int2 <= 0.07, sign <= 0.04,
//   top-k (u32 index + fp32 value) <= 2.1 * k / d
//
// Top-k with int8 values is held to the fp32-value bound too: its values are
// smaller, so the same ceiling applies.
//
// Plain values; thread-compatible.
#ifndef TAUPS_BENCH_CODEC_VARIANTS_H_
#define TAUPS_BENCH_CODEC_VARIANTS_H_

#include <optional>
#include <string>
#include <vector>

#include "taups/compression.h"

namespace taups::bench {

struct CodecVariant {
  std::string name;      // e.g. "int4", "topk 0.1% int8"
  CodecOptions options;  // seed and bucket size filled in by the caller
  // Largest allowed wire bytes / fp32 bytes; none when the issue sets none.
  // For top-k it is a multiple of the kept fraction k / d (see
  // MaxWireFraction).
  std::optional<double> max_wire_fraction;
};

// The target of `variant` for `n` values: max_wire_fraction, times k / n for
// top-k (k = the values a block of n keeps).
std::optional<double> MaxWireFraction(const CodecVariant& variant, uint64_t n);

// none, fp16, bf16; int8, int4, int2 with nearest and stochastic rounding;
// sign; top-k at 1 % and 0.1 % with fp32 and int8 values. Every bucketed
// codec uses `bucket_size`; stochastic rounding uses `seed`.
std::vector<CodecVariant> BenchCodecVariants(uint32_t bucket_size,
                                             uint64_t seed);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_CODEC_VARIANTS_H_
