// The encoded block: the unit a codec produces and the server decodes.
//
// Every block is self-describing. Layout, little-endian, format version 1:
//
//   offset size  field
//   0      4     magic "TPSC"
//   4      1     format version (1)
//   5      1     codec id (CodecKind)
//   6      1     top-k: the codec of the kept values; otherwise 0
//   7      1     flags: bit 0 = stochastic rounding was used (informational)
//   8      8     element count n (the decoded length)
//   16     4     bucket size B (values per scale; 0 for codecs without scales)
//   20     4     reserved, 0
//   24     8     entry count: top-k: k kept values; otherwise n
//   32     ...   payload
//
// Payload per codec, for m = entry count values (m = n except for top-k):
//   none        m float32
//   fp16, bf16  m uint16
//   int8        ceil(m/B) float32 steps, then m int8 levels in [-127, 127]
//   int4        ceil(m/B) float32 steps, then ceil(m/2) bytes: two 4-bit
//               codes (level + 8) per byte, the even element in the low nibble
//   int2        ceil(m/B) float32 steps, then ceil(m/4) bytes: four 2-bit
//               codes (level + 1, in {0, 1, 2}) per byte, lowest bits first
//   sign        ceil(m/B) float32 magnitudes, then ceil(m/8) bytes of sign
//               bits (1 = negative), lowest bit first
//   topk        k uint32 indices (strictly increasing, < n), then the k values
//               laid out as the value codec's payload for m = k
// A level q of bucket b decodes to q * step[b]; a sign bit to +-magnitude[b].
// Unused bits of the last byte are 0.
//
// Thread-safety: pure functions.
#ifndef TAUPS_COMMON_CODEC_FORMAT_H_
#define TAUPS_COMMON_CODEC_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "taups/compression.h"

namespace taups {

inline constexpr uint32_t kBlockMagic = 0x43535054;  // "TPSC" little-endian
inline constexpr uint8_t kBlockFormatVersion = 1;
inline constexpr size_t kBlockHeaderBytes = 32;
inline constexpr uint8_t kBlockFlagStochastic = 1;

struct BlockHeader {
  CodecKind codec = CodecKind::kNone;
  CodecKind value_codec = CodecKind::kNone;  // top-k only
  uint8_t flags = 0;
  uint64_t element_count = 0;
  uint32_t bucket_size = 0;
  uint64_t entry_count = 0;
};

// Levels each side of zero for the integer codecs (127, 7, 1); 0 otherwise.
int LevelsOf(CodecKind codec);
// True for codecs whose payload starts with per-bucket scales.
bool HasScales(CodecKind codec);
// True for codecs a top-k block may use for its values.
bool IsValueCodec(CodecKind codec);

// Bytes of a value payload of `m` values under `codec` (not top-k) with
// bucket size `bucket` (ignored when the codec has no scales).
uint64_t ValuePayloadBytes(CodecKind codec, uint64_t m, uint32_t bucket);
// Total block bytes, header included, for a valid header.
uint64_t BlockBytes(const BlockHeader& header);

void WriteHeader(const BlockHeader& header, char* out);

// Reads and checks the header of `block`: magic, version, known codec ids,
// bucket size in [1, kMaxBucketSize] where scales exist (0 otherwise), entry
// count (== n, or <= n for top-k), n <= max_elements, and the block's exact
// length. INVALID_ARGUMENT naming the problem otherwise.
absl::StatusOr<BlockHeader> ParseHeader(absl::string_view block,
                                        uint64_t max_elements);

}  // namespace taups

#endif  // TAUPS_COMMON_CODEC_FORMAT_H_
