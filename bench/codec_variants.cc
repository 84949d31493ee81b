#include "bench/codec_variants.h"

#include "absl/strings/str_cat.h"
#include "common/codec.h"

namespace taups::bench {
namespace {

CodecOptions Plain(CodecKind codec, uint32_t bucket_size, uint64_t seed) {
  CodecOptions options;
  options.codec = codec;
  options.bucket_size = bucket_size;
  options.seed = seed;
  return options;
}

}  // namespace

std::vector<CodecVariant> BenchCodecVariants(uint32_t bucket_size,
                                             uint64_t seed) {
  std::vector<CodecVariant> variants;
  for (CodecKind codec : {CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16}) {
    variants.push_back({CodecKindName(codec), Plain(codec, bucket_size, seed),
                        std::nullopt});
  }
  const std::pair<CodecKind, double> quantizers[] = {
      {CodecKind::kInt8, 0.26}, {CodecKind::kInt4, 0.13}, {CodecKind::kInt2, 0.07}};
  for (const auto& [codec, target] : quantizers) {
    for (Rounding rounding : {Rounding::kNearest, Rounding::kStochastic}) {
      CodecOptions options = Plain(codec, bucket_size, seed);
      options.rounding = rounding;
      variants.push_back({CodecKindName(codec), options, target});
    }
  }
  variants.push_back(
      {"sign", Plain(CodecKind::kSign, bucket_size, seed), 0.04});
  for (double ratio : {0.01, 0.001}) {
    for (CodecKind values : {CodecKind::kNone, CodecKind::kInt8}) {
      CodecOptions options = Plain(CodecKind::kTopK, bucket_size, seed);
      options.topk_ratio = ratio;
      options.topk_values = values;
      variants.push_back(
          {absl::StrCat("topk ", 100 * ratio, "% ",
                        values == CodecKind::kNone ? "fp32" : "int8"),
           options, 2.1});
    }
  }
  return variants;
}

std::optional<double> MaxWireFraction(const CodecVariant& variant, uint64_t n) {
  if (!variant.max_wire_fraction || variant.options.codec != CodecKind::kTopK) {
    return variant.max_wire_fraction;
  }
  if (n == 0) return std::nullopt;
  return *variant.max_wire_fraction *
         static_cast<double>(TopKCount(variant.options, n)) /
         static_cast<double>(n);
}

}  // namespace taups::bench
