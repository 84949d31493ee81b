#include "common/wire_tensor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/aligned_view.h"
#include "common/codec.h"

namespace taups {

absl::StatusOr<absl::Span<const float>> GradientFromWire(
    absl::string_view bytes, bool encoded, uint64_t max_elements,
    std::vector<float>* scratch, absl::string_view what,
    uint64_t decode_limit) {
  if (!encoded) return ViewAs<float>(bytes, scratch, what);
  absl::StatusOr<BlockHeader> header = ParseHeader(bytes, max_elements);
  if (!header.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", header.status().message()));
  }
  if (header->element_count > decode_limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, ": the encoded block declares ", header->element_count,
        " values; this shard decodes at most ", decode_limit,
        " per block (--max_block_values)"));
  }
  scratch->resize(header->element_count);
  absl::Status decoded = DecodeBlock(bytes, *header, absl::MakeSpan(*scratch));
  if (!decoded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", decoded.message()));
  }
  return absl::Span<const float>(*scratch);
}

absl::Status CheckPullCodec(CodecKind codec, uint32_t bucket_size) {
  switch (codec) {
    case CodecKind::kNone:
    case CodecKind::kFp16:
    case CodecKind::kBf16:
      return absl::OkStatus();
    case CodecKind::kInt8:
      if (bucket_size == 0 || bucket_size > kMaxBucketSize) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pull_bucket_size ", bucket_size, " is outside [1, ",
            kMaxBucketSize, "]"));
      }
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "pull_codec ", CodecKindName(codec),
          " is not offered for pulls (none, fp16, bf16 or int8)"));
  }
}

absl::Status EncodeForPull(absl::Span<const float> values, CodecKind codec,
                           uint32_t bucket_size, std::string* out) {
  CodecOptions options;
  options.codec = codec;
  options.bucket_size = bucket_size;
  return EncodeBlock(values, options, 0, out);
}

absl::Status DecodePulled(absl::string_view block, absl::Span<float> out) {
  absl::StatusOr<BlockHeader> header = ParseHeader(block, out.size());
  if (!header.ok()) return header.status();
  if (header->element_count != out.size()) {
    return absl::InternalError(absl::StrCat(
        "pulled block holds ", header->element_count, " values, expected ",
        out.size()));
  }
  return DecodeBlock(block, *header, out);
}

}  // namespace taups
