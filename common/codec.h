// CPU codecs: encode float32 values into a self-describing block
// (common/codec_format.h) and decode a block back, validating every byte.
//
//   std::string block;
//   TAUPS_RETURN_IF_ERROR(EncodeBlock(grad, options, /*index_base=*/0, &block));
//   ... block travels ...
//   TAUPS_ASSIGN_OR_RETURN(BlockHeader h, ParseHeader(block, limit));
//   std::vector<float> out(h.element_count);
//   TAUPS_RETURN_IF_ERROR(DecodeBlock(block, h, absl::MakeSpan(out)));
//
// The CUDA codecs (cuda/codec_kernels.h) produce the same bytes for the same
// input, options and index_base: both use common/codec_math.h.
//
// Thread-safety: pure functions.
#ifndef TAUPS_COMMON_CODEC_H_
#define TAUPS_COMMON_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/codec_format.h"
#include "taups/compression.h"

namespace taups {

// Values a top-k block of `n` inputs keeps under `options`.
uint64_t TopKCount(const CodecOptions& options, uint64_t n);
// The header EncodeBlock writes for `n` values.
BlockHeader HeaderFor(const CodecOptions& options, uint64_t n);
// Bytes of the block for `n` values, header included.
uint64_t EncodedBytes(const CodecOptions& options, uint64_t n);

// Encodes `values` into `out` (resized to EncodedBytes). `index_base` is the
// global index of values[0] in the tensor: stochastic rounding draws element
// i's uniform from (options.seed, index_base + i), so slices of a tensor round
// exactly like the whole. The scaled codecs (int*, sign, and top-k with a
// scaled value codec) refuse NaN/Inf inputs with INVALID_ARGUMENT; the others
// carry them and leave the refusal to the server.
absl::Status EncodeBlock(absl::Span<const float> values,
                         const CodecOptions& options, uint64_t index_base,
                         std::string* out);

// Decodes a block whose header ParseHeader returned into `out`, which must
// hold header.element_count floats. Checks every scale (finite, > 0; sign
// magnitudes may be 0), every code (no level outside the codec's range,
// unused bits 0) and every top-k index (strictly increasing, < n);
// INVALID_ARGUMENT naming the first problem. On error `out` holds garbage.
absl::Status DecodeBlock(absl::string_view block, const BlockHeader& header,
                         absl::Span<float> out);

// ParseHeader + DecodeBlock into a vector, for callers without a buffer.
absl::StatusOr<std::vector<float>> DecodeToVector(absl::string_view block,
                                                  uint64_t max_elements);

}  // namespace taups

#endif  // TAUPS_COMMON_CODEC_H_
