#include "common/codec_format.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

template <typename T>
T Load(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T>
void Store(T value, char* p) {
  std::memcpy(p, &value, sizeof(T));
}

bool KnownCodec(uint8_t id) {
  return id <= static_cast<uint8_t>(CodecKind::kTopK);
}

}  // namespace

int LevelsOf(CodecKind codec) {
  switch (codec) {
    case CodecKind::kInt8: return 127;
    case CodecKind::kInt4: return 7;
    case CodecKind::kInt2: return 1;
    default: return 0;
  }
}

bool HasScales(CodecKind codec) {
  return LevelsOf(codec) > 0 || codec == CodecKind::kSign;
}

bool IsValueCodec(CodecKind codec) {
  return codec != CodecKind::kSign && codec != CodecKind::kTopK;
}

uint64_t ValuePayloadBytes(CodecKind codec, uint64_t m, uint32_t bucket) {
  const uint64_t scales = HasScales(codec) && m > 0 ? CeilDiv(m, bucket) * 4 : 0;
  switch (codec) {
    case CodecKind::kNone: return 4 * m;
    case CodecKind::kFp16:
    case CodecKind::kBf16: return 2 * m;
    case CodecKind::kInt8: return scales + m;
    case CodecKind::kInt4: return scales + CeilDiv(m, 2);
    case CodecKind::kInt2: return scales + CeilDiv(m, 4);
    case CodecKind::kSign: return scales + CeilDiv(m, 8);
    case CodecKind::kTopK: return 0;
  }
  return 0;
}

uint64_t BlockBytes(const BlockHeader& header) {
  if (header.codec == CodecKind::kTopK) {
    return kBlockHeaderBytes + 4 * header.entry_count +
           ValuePayloadBytes(header.value_codec, header.entry_count,
                             header.bucket_size);
  }
  return kBlockHeaderBytes +
         ValuePayloadBytes(header.codec, header.element_count,
                           header.bucket_size);
}

void WriteHeader(const BlockHeader& header, char* out) {
  std::memset(out, 0, kBlockHeaderBytes);
  Store<uint32_t>(kBlockMagic, out);
  out[4] = static_cast<char>(kBlockFormatVersion);
  out[5] = static_cast<char>(header.codec);
  out[6] = static_cast<char>(header.value_codec);
  out[7] = static_cast<char>(header.flags);
  Store<uint64_t>(header.element_count, out + 8);
  Store<uint32_t>(header.bucket_size, out + 16);
  Store<uint64_t>(header.entry_count, out + 24);
}

absl::StatusOr<BlockHeader> ParseHeader(absl::string_view block,
                                        uint64_t max_elements) {
  auto bad = [](auto&&... parts) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded block: ", parts...));
  };
  if (block.size() < kBlockHeaderBytes) {
    return bad(block.size(), " bytes is shorter than the ", kBlockHeaderBytes,
               "-byte header");
  }
  const char* p = block.data();
  if (Load<uint32_t>(p) != kBlockMagic) return bad("bad magic (not a tauPS block)");
  const uint8_t version = static_cast<uint8_t>(p[4]);
  if (version != kBlockFormatVersion) {
    return bad("format version ", version, " is not supported (this build reads ",
               kBlockFormatVersion, ")");
  }
  const uint8_t codec_id = static_cast<uint8_t>(p[5]);
  const uint8_t value_id = static_cast<uint8_t>(p[6]);
  if (!KnownCodec(codec_id)) return bad("unknown codec id ", codec_id);
  BlockHeader header;
  header.codec = static_cast<CodecKind>(codec_id);
  header.flags = static_cast<uint8_t>(p[7]);
  header.element_count = Load<uint64_t>(p + 8);
  header.bucket_size = Load<uint32_t>(p + 16);
  header.entry_count = Load<uint64_t>(p + 24);
  if (Load<uint32_t>(p + 20) != 0) return bad("reserved header bytes are not 0");
  if ((header.flags & ~kBlockFlagStochastic) != 0) {
    return bad("unknown flags 0x", absl::Hex(header.flags));
  }
  if (header.element_count > max_elements) {
    return bad("declares ", header.element_count, " elements, more than the ",
               max_elements, " allowed here");
  }
  CodecKind scaled_codec = header.codec;
  if (header.codec == CodecKind::kTopK) {
    if (!KnownCodec(value_id) || !IsValueCodec(static_cast<CodecKind>(value_id))) {
      return bad("top-k value codec id ", value_id, " is not a value codec");
    }
    header.value_codec = static_cast<CodecKind>(value_id);
    scaled_codec = header.value_codec;
    if (header.entry_count > header.element_count) {
      return bad("top-k keeps ", header.entry_count, " of only ",
                 header.element_count, " elements");
    }
    if (header.entry_count > (uint64_t{1} << 32)) {
      return bad("top-k entry count exceeds 32-bit indices");
    }
  } else {
    if (value_id != 0) return bad("value codec set on a non-top-k block");
    if (header.entry_count != header.element_count) {
      return bad("entry count ", header.entry_count, " != element count ",
                 header.element_count);
    }
  }
  if (HasScales(scaled_codec)) {
    if (header.bucket_size == 0 || header.bucket_size > kMaxBucketSize) {
      return bad("bucket size ", header.bucket_size, " is outside [1, ",
                 kMaxBucketSize, "]");
    }
  } else if (header.bucket_size != 0) {
    return bad("bucket size set for a codec without scales");
  }
  const uint64_t expected = BlockBytes(header);
  if (block.size() != expected) {
    return bad(block.size(), " bytes, but its header describes ", expected);
  }
  return header;
}

}  // namespace taups
