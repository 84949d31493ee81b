// Fuzz target: a pushed gradient's bytes as the shard reads them.
//
// The input is taken as an encoded block (common/codec_format.h) and read
// the three ways the code base reads one: ParseHeader + DecodeBlock, the
// server's GradientFromWire (which must agree with them), and DecodePulled
// (the client's reading of a compressed pull). Properties checked beyond
// "no crash, no sanitizer report":
//   - ParseHeader accepts only a block of exactly BlockBytes(header) bytes;
//   - GradientFromWire succeeds exactly when ParseHeader and DecodeBlock do,
//     and then yields the same values, bit for bit;
//   - fp16 and bf16 are exact on their own decoded values: encoding them
//     again and decoding gives the same bits (finite values only).
// The first input byte is not part of the block: it sets the largest
// element count the reader allows (so both limit paths are reached).
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/codec.h"
#include "common/codec_format.h"
#include "common/wire_tensor.h"
#include "tests/fuzz/fuzz_check.h"

namespace taups {
namespace {

bool SameBits(absl::Span<const float> a, absl::Span<const float> b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

bool AllFinite(absl::Span<const float> values) {
  for (float v : values) {
    if (!(v - v == 0.0f)) return false;
  }
  return true;
}

void CheckReencodes(const BlockHeader& header, absl::Span<const float> values) {
  if (header.codec != CodecKind::kFp16 && header.codec != CodecKind::kBf16) {
    return;
  }
  if (!AllFinite(values)) return;
  CodecOptions options;
  options.codec = header.codec;
  std::string again;
  absl::Status encoded = EncodeBlock(values, options, 0, &again);
  TAUPS_FUZZ_CHECK(encoded.ok(), "re-encoding decoded half values");
  absl::StatusOr<std::vector<float>> back =
      DecodeToVector(again, values.size());
  TAUPS_FUZZ_CHECK(back.ok(), "decoding a block EncodeBlock wrote");
  TAUPS_FUZZ_CHECK(SameBits(*back, values), "half codecs round trip");
}

void FuzzOne(absl::string_view block, uint64_t max_elements) {
  const uint64_t decode_limit = 1 << 16;
  absl::StatusOr<BlockHeader> header = ParseHeader(block, max_elements);
  std::vector<float> direct;
  bool direct_ok = false;
  if (header.ok()) {
    TAUPS_FUZZ_CHECK(BlockBytes(*header) == block.size(),
                     "ParseHeader accepted a block of the wrong length");
    TAUPS_FUZZ_CHECK(header->element_count <= max_elements,
                     "ParseHeader passed its element limit");
    if (header->element_count <= decode_limit) {
      direct.resize(header->element_count);
      direct_ok = DecodeBlock(block, *header, absl::MakeSpan(direct)).ok();
      if (direct_ok) CheckReencodes(*header, direct);
    }
  }

  std::vector<float> scratch;
  absl::StatusOr<absl::Span<const float>> server = GradientFromWire(
      block, /*encoded=*/true, max_elements, &scratch, "fuzz", decode_limit);
  if (!header.ok() || header->element_count <= decode_limit) {
    TAUPS_FUZZ_CHECK(server.ok() == direct_ok,
                     "GradientFromWire disagrees with ParseHeader+DecodeBlock");
    if (server.ok()) {
      TAUPS_FUZZ_CHECK(SameBits(*server, direct), "decoded values differ");
    }
  } else {
    TAUPS_FUZZ_CHECK(!server.ok(), "block past the decode limit accepted");
  }

  // A client reading a compressed pull of as many values as the header says.
  if (header.ok() && header->element_count <= decode_limit) {
    std::vector<float> pulled(header->element_count);
    (void)DecodePulled(block, absl::MakeSpan(pulled));
  }
  // The same bytes sent as raw float32.
  (void)GradientFromWire(block, /*encoded=*/false, max_elements, &scratch,
                         "fuzz raw", decode_limit);
}

}  // namespace
}  // namespace taups

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // 0..255 -> limits from 0 to well past the decode limit.
  const uint64_t max_elements = data[0] == 255 ? uint64_t{1} << 40
                                               : uint64_t{data[0]} * 512;
  taups::FuzzOne(
      absl::string_view(reinterpret_cast<const char*>(data) + 1, size - 1),
      max_elements);
  return 0;
}
