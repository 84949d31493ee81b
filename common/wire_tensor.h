// Float tensors as they travel in requests and responses: raw packed
// float32, or an encoded block (common/codec_format.h).
//
// The server reads every pushed gradient through GradientFromWire, so a bad
// block is refused (INVALID_ARGUMENT) before any table is touched, and
// encodes compressed pulls with EncodeForPull. The simulation harness uses the
// same functions, so it decodes exactly as the server does.
//
// Thread-safety: pure functions.
#ifndef TAUPS_COMMON_WIRE_TENSOR_H_
#define TAUPS_COMMON_WIRE_TENSOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "taups/compression.h"

namespace taups {

// Default bound on the values one encoded block may decode to: what a raw
// float32 tensor of a 256 MiB message could carry. A top-k block is tiny
// next to what it declares, so without a bound a few bytes could make the
// server allocate gigabytes. A shard's own bound is its
// ServerLimits::max_block_values (--max_block_values).
inline constexpr uint64_t kMaxDecodedElements = uint64_t{1} << 26;

// The float values `bytes` carries. Raw bytes are viewed in place when
// aligned (else copied into `scratch`); a block is validated and decoded into
// `scratch`. A block declaring more than `max_elements` values (what its
// destination holds) is INVALID_ARGUMENT, more than `decode_limit`
// RESOURCE_EXHAUSTED, both before anything is allocated; `what` names the
// field in errors.
absl::StatusOr<absl::Span<const float>> GradientFromWire(
    absl::string_view bytes, bool encoded, uint64_t max_elements,
    std::vector<float>* scratch, absl::string_view what,
    uint64_t decode_limit = kMaxDecodedElements);

// Codecs a pull may ask for: none, fp16, bf16, int8 (nearest rounding).
absl::Status CheckPullCodec(CodecKind codec, uint32_t bucket_size);

// Encodes pulled parameters with a codec CheckPullCodec accepted.
absl::Status EncodeForPull(absl::Span<const float> values, CodecKind codec,
                           uint32_t bucket_size, std::string* out);

// Decodes a pull answer into `out`: the block must hold exactly out.size()
// values.
absl::Status DecodePulled(absl::string_view block, absl::Span<float> out);

}  // namespace taups

#endif  // TAUPS_COMMON_WIRE_TENSOR_H_
