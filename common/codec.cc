#include "common/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/codec_math.h"

namespace taups {
namespace {

namespace cm = codec_math;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

absl::Status NonFinite(uint64_t index) {
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot encode: value ", index,
      " is NaN or infinite (scaled codecs need finite inputs)"));
}

// Largest |v| over values[begin, end) as float bits. For non-negative
// floats the unsigned order of the bits is the numeric order, so this is
// exactly the bits of max(fabs(v)) when every value is finite; bits at or
// above 0x7f800000 mean a NaN or an infinity is among them. Branch-free, so
// the compiler can vectorise it.
uint32_t MaxAbsBits(const float* values, uint64_t begin, uint64_t end) {
  uint32_t max_bits = 0;
  for (uint64_t i = begin; i < end; ++i) {
    max_bits = std::max(max_bits, cm::FloatBits(values[i]) & 0x7fffffffu);
  }
  return max_bits;
}

uint64_t FirstNonFinite(const float* values, uint64_t begin, uint64_t end) {
  while (begin < end && std::isfinite(values[begin])) ++begin;
  return begin;
}

// Codes of values[begin, end) under int8 (kLevels 127), int4 (7) or int2
// (1), ORed into `codes` (zeroed by the caller) at their element positions.
// The codec and rounding are template parameters so that the packing is
// shifts and masks, not divisions by run-time values.
template <int kLevels, bool kStochastic>
void QuantizeRange(const float* values, uint64_t begin, uint64_t end,
                   float step, uint64_t seed, uint64_t index_base,
                   uint8_t* codes) {
  constexpr int kBits = kLevels == 127 ? 8 : (kLevels == 7 ? 4 : 2);
  constexpr uint64_t kPerByte = 8 / kBits;
  for (uint64_t i = begin; i < end; ++i) {
    const float u = kStochastic ? cm::UniformAt(seed, index_base + i) : 0.0f;
    const int level = cm::QuantizeLevel(values[i], step, kLevels, kStochastic, u);
    const uint32_t code = cm::CodeOfLevel(level, kLevels);
    codes[i / kPerByte] = static_cast<uint8_t>(
        codes[i / kPerByte] | (code << ((i % kPerByte) * kBits)));
  }
}

using QuantizeFn = void (*)(const float*, uint64_t, uint64_t, float, uint64_t,
                            uint64_t, uint8_t*);

QuantizeFn QuantizerFor(int levels, bool stochastic) {
  switch (levels) {
    case 127:
      return stochastic ? QuantizeRange<127, true> : QuantizeRange<127, false>;
    case 7:
      return stochastic ? QuantizeRange<7, true> : QuantizeRange<7, false>;
    default:
      return stochastic ? QuantizeRange<1, true> : QuantizeRange<1, false>;
  }
}

// Decodes the codes of elements [begin, end) with `step` into out; the index
// of the first element whose level lies outside [-kLevels, kLevels], or
// `end` when there is none.
template <int kLevels>
uint64_t DequantizeRange(const uint8_t* codes, uint64_t begin, uint64_t end,
                         float step, float* out) {
  constexpr int kBits = kLevels == 127 ? 8 : (kLevels == 7 ? 4 : 2);
  constexpr uint64_t kPerByte = 8 / kBits;
  constexpr uint32_t kMask = (1u << kBits) - 1u;
  bool in_range = true;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t code = (codes[i / kPerByte] >> ((i % kPerByte) * kBits)) & kMask;
    const int level = cm::LevelOfCode(code, kLevels);
    in_range &= level >= -kLevels && level <= kLevels;
    out[i] = cm::DequantizeLevel(level, step);
  }
  if (in_range) return end;
  for (uint64_t i = begin; i < end; ++i) {
    const uint32_t code = (codes[i / kPerByte] >> ((i % kPerByte) * kBits)) & kMask;
    const int level = cm::LevelOfCode(code, kLevels);
    if (level < -kLevels || level > kLevels) return i;
  }
  return end;
}

using DequantizeFn = uint64_t (*)(const uint8_t*, uint64_t, uint64_t, float,
                                  float*);

DequantizeFn DequantizerFor(int levels) {
  switch (levels) {
    case 127:
      return DequantizeRange<127>;
    case 7:
      return DequantizeRange<7>;
    default:
      return DequantizeRange<1>;
  }
}

// Writes the payload of `values` (m of them) under a value codec at `out`.
// `index_base` numbers values[0] for stochastic rounding.
absl::Status EncodeValues(const float* values, uint64_t m, CodecKind codec,
                          uint32_t bucket, Rounding rounding, uint64_t seed,
                          uint64_t index_base, char* out) {
  switch (codec) {
    case CodecKind::kNone:
      if (m > 0) std::memcpy(out, values, 4 * m);
      return absl::OkStatus();
    case CodecKind::kFp16:
    case CodecKind::kBf16: {
      const bool half = codec == CodecKind::kFp16;
      for (uint64_t i = 0; i < m; ++i) {
        const uint16_t h =
            half ? cm::FloatToHalf(values[i]) : cm::FloatToBf16(values[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return absl::OkStatus();
    }
    case CodecKind::kSign: {
      const uint64_t buckets = CeilDiv(m, bucket);
      char* bits = out + 4 * buckets;
      std::memset(bits, 0, CeilDiv(m, 8));
      for (uint64_t b = 0; b < buckets; ++b) {
        const uint64_t begin = b * bucket, end = std::min(m, begin + bucket);
        double l1 = 0.0;
        for (uint64_t i = begin; i < end; ++i) {
          if (!std::isfinite(values[i])) return NonFinite(i);
          l1 += std::fabs(static_cast<double>(values[i]));
          if (std::signbit(values[i]) && values[i] != 0.0f) {
            bits[i / 8] = static_cast<char>(bits[i / 8] | (1 << (i % 8)));
          }
        }
        const float magnitude =
            static_cast<float>(l1 / static_cast<double>(end - begin));
        std::memcpy(out + 4 * b, &magnitude, 4);
      }
      return absl::OkStatus();
    }
    case CodecKind::kInt8:
    case CodecKind::kInt4:
    case CodecKind::kInt2: {
      const int levels = LevelsOf(codec);
      const int bits_per_code = cm::BitsPerCode(levels);
      const int per_byte = 8 / bits_per_code;
      const uint64_t buckets = CeilDiv(m, bucket);
      uint8_t* codes = reinterpret_cast<uint8_t*>(out + 4 * buckets);
      std::memset(codes, 0, CeilDiv(m, per_byte));
      const QuantizeFn quantize =
          QuantizerFor(levels, rounding == Rounding::kStochastic);
      for (uint64_t b = 0; b < buckets; ++b) {
        const uint64_t begin = b * bucket, end = std::min(m, begin + bucket);
        const uint32_t max_bits = MaxAbsBits(values, begin, end);
        if (max_bits >= 0x7f800000u) {
          return NonFinite(FirstNonFinite(values, begin, end));
        }
        const float step = cm::StepFor(cm::BitsFloat(max_bits), levels);
        std::memcpy(out + 4 * b, &step, 4);
        quantize(values, begin, end, step, seed, index_base, codes);
      }
      return absl::OkStatus();
    }
    case CodecKind::kTopK:
      break;
  }
  return absl::InternalError("EncodeValues: not a value codec");
}

// Decodes m values under a value codec from `in` into out[0..m).
absl::Status DecodeValues(const char* in, uint64_t m, CodecKind codec,
                          uint32_t bucket, float* out) {
  auto bad = [](auto&&... parts) {
    return absl::InvalidArgumentError(absl::StrCat("encoded block: ", parts...));
  };
  switch (codec) {
    case CodecKind::kNone:
      if (m > 0) std::memcpy(out, in, 4 * m);
      return absl::OkStatus();
    case CodecKind::kFp16:
    case CodecKind::kBf16: {
      const bool half = codec == CodecKind::kFp16;
      for (uint64_t i = 0; i < m; ++i) {
        uint16_t h;
        std::memcpy(&h, in + 2 * i, 2);
        out[i] = half ? cm::HalfToFloat(h) : cm::Bf16ToFloat(h);
      }
      return absl::OkStatus();
    }
    case CodecKind::kSign: {
      const uint64_t buckets = CeilDiv(m, bucket);
      const uint8_t* bits = reinterpret_cast<const uint8_t*>(in + 4 * buckets);
      for (uint64_t b = 0; b < buckets; ++b) {
        float magnitude;
        std::memcpy(&magnitude, in + 4 * b, 4);
        if (!std::isfinite(magnitude) || magnitude < 0.0f) {
          return bad("sign magnitude of bucket ", b, " is ", magnitude,
                     " (must be finite and >= 0)");
        }
        const uint64_t begin = b * bucket, end = std::min(m, begin + bucket);
        for (uint64_t i = begin; i < end; ++i) {
          out[i] = (bits[i / 8] >> (i % 8)) & 1 ? -magnitude : magnitude;
        }
      }
      if (m % 8 != 0 && (bits[m / 8] >> (m % 8)) != 0) {
        return bad("unused sign bits are not 0");
      }
      return absl::OkStatus();
    }
    case CodecKind::kInt8:
    case CodecKind::kInt4:
    case CodecKind::kInt2: {
      const int levels = LevelsOf(codec);
      const int bits_per_code = cm::BitsPerCode(levels);
      const int per_byte = 8 / bits_per_code;
      const uint32_t mask = (1u << bits_per_code) - 1u;
      const uint64_t buckets = CeilDiv(m, bucket);
      const uint8_t* codes = reinterpret_cast<const uint8_t*>(in + 4 * buckets);
      const DequantizeFn dequantize = DequantizerFor(levels);
      for (uint64_t b = 0; b < buckets; ++b) {
        float step;
        std::memcpy(&step, in + 4 * b, 4);
        if (!std::isfinite(step) || !(step > 0.0f)) {
          return bad("step of bucket ", b, " is ", step,
                     " (must be finite and > 0)");
        }
        const uint64_t begin = b * bucket, end = std::min(m, begin + bucket);
        const uint64_t i = dequantize(codes, begin, end, step, out);
        if (i != end) {
          const int shift = static_cast<int>(i % per_byte) * bits_per_code;
          const int level =
              cm::LevelOfCode((codes[i / per_byte] >> shift) & mask, levels);
          return bad("value ", i, " has level ", level, " outside [-",
                     levels, ", ", levels, "]");
        }
      }
      if (m % per_byte != 0 &&
          (codes[m / per_byte] >> ((m % per_byte) * bits_per_code)) != 0) {
        return bad("unused code bits are not 0");
      }
      return absl::OkStatus();
    }
    case CodecKind::kTopK:
      break;
  }
  return bad("not a value codec");
}

// Indices of the k highest-ranked values (codec_math::RanksAbove: NaN first,
// then larger magnitude, then lower index), ascending. Finds the k-th largest
// magnitude with nth_element on a copy of the magnitudes, then keeps every
// value above it and the lowest-indexed ones equal to it: the same set as
// sorting by RanksAbove, without sorting indices.
std::vector<uint32_t> SelectTopK(absl::Span<const float> values, uint64_t k) {
  const size_t n = values.size();
  std::vector<uint32_t> kept;
  kept.reserve(k);
  if (k == 0) return kept;
  for (size_t i = 0; i < n && kept.size() < k; ++i) {
    if (std::isnan(values[i])) kept.push_back(static_cast<uint32_t>(i));
  }
  if (kept.size() == k || kept.size() == n) {
    return kept;  // ascending already
  }
  const uint64_t wanted = k - kept.size();
  std::vector<float> magnitudes;
  magnitudes.reserve(n);
  for (float v : values) {
    if (!std::isnan(v)) magnitudes.push_back(std::fabs(v));
  }
  std::nth_element(magnitudes.begin(), magnitudes.begin() + (wanted - 1),
                   magnitudes.end(), std::greater<float>());
  const float cut = magnitudes[wanted - 1];
  uint64_t above = 0;
  for (float m : magnitudes) above += m > cut;
  uint64_t ties_left = wanted - above;
  std::vector<uint32_t> chosen;
  chosen.reserve(k);
  size_t nan_pos = 0;
  for (size_t i = 0; i < n; ++i) {
    const float m = std::fabs(values[i]);
    bool keep;
    if (std::isnan(values[i])) {
      keep = nan_pos < kept.size() && kept[nan_pos] == i;
      nan_pos += keep;
    } else if (m > cut) {
      keep = true;
    } else if (m == cut && ties_left > 0) {
      keep = true;
      --ties_left;
    } else {
      keep = false;
    }
    if (keep) chosen.push_back(static_cast<uint32_t>(i));
  }
  return chosen;
}

}  // namespace

uint64_t TopKCount(const CodecOptions& options, uint64_t n) {
  if (n == 0) return 0;
  if (options.topk_count > 0) return std::min(options.topk_count, n);
  const double wanted = std::ceil(options.topk_ratio * static_cast<double>(n));
  return std::clamp<uint64_t>(static_cast<uint64_t>(wanted), 1, n);
}

BlockHeader HeaderFor(const CodecOptions& options, uint64_t n) {
  BlockHeader header;
  header.codec = options.codec;
  header.element_count = n;
  header.entry_count = n;
  CodecKind scaled = options.codec;
  if (options.codec == CodecKind::kTopK) {
    header.value_codec = options.topk_values;
    header.entry_count = TopKCount(options, n);
    scaled = options.topk_values;
  }
  header.bucket_size = HasScales(scaled) ? options.bucket_size : 0;
  if (LevelsOf(scaled) > 0 && options.rounding == Rounding::kStochastic) {
    header.flags = kBlockFlagStochastic;
  }
  return header;
}

uint64_t EncodedBytes(const CodecOptions& options, uint64_t n) {
  return BlockBytes(HeaderFor(options, n));
}

absl::Status EncodeBlock(absl::Span<const float> values,
                         const CodecOptions& options, uint64_t index_base,
                         std::string* out) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  const BlockHeader header = HeaderFor(options, values.size());
  out->resize(BlockBytes(header));
  char* p = out->data();
  WriteHeader(header, p);
  p += kBlockHeaderBytes;
  if (options.codec != CodecKind::kTopK) {
    return EncodeValues(values.data(), values.size(), options.codec,
                        header.bucket_size, options.rounding, options.seed,
                        index_base, p);
  }
  const std::vector<uint32_t> kept = SelectTopK(values, header.entry_count);
  std::vector<float> kept_values(kept.size());
  for (size_t j = 0; j < kept.size(); ++j) kept_values[j] = values[kept[j]];
  if (!kept.empty()) std::memcpy(p, kept.data(), 4 * kept.size());
  // The kept values are numbered by their position among the kept entries.
  return EncodeValues(kept_values.data(), kept_values.size(), header.value_codec,
                      header.bucket_size, options.rounding, options.seed, 0,
                      p + 4 * kept.size());
}

absl::Status DecodeBlock(absl::string_view block, const BlockHeader& header,
                         absl::Span<float> out) {
  if (out.size() != header.element_count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "encoded block: holds ", header.element_count, " values, expected ",
        out.size()));
  }
  const char* p = block.data() + kBlockHeaderBytes;
  if (header.codec != CodecKind::kTopK) {
    return DecodeValues(p, header.element_count, header.codec,
                        header.bucket_size, out.data());
  }
  const uint64_t k = header.entry_count;
  std::vector<float> kept(k);
  absl::Status values = DecodeValues(p + 4 * k, k, header.value_codec,
                                     header.bucket_size, kept.data());
  if (!values.ok()) return values;
  std::fill(out.begin(), out.end(), 0.0f);
  int64_t previous = -1;
  for (uint64_t j = 0; j < k; ++j) {
    uint32_t index;
    std::memcpy(&index, p + 4 * j, 4);
    if (index >= header.element_count || static_cast<int64_t>(index) <= previous) {
      return absl::InvalidArgumentError(absl::StrCat(
          "encoded block: top-k index ", index, " at entry ", j,
          " is out of order or not below ", header.element_count));
    }
    previous = index;
    out[index] = kept[j];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> DecodeToVector(absl::string_view block,
                                                  uint64_t max_elements) {
  absl::StatusOr<BlockHeader> header = ParseHeader(block, max_elements);
  if (!header.ok()) return header.status();
  std::vector<float> out(header->element_count);
  absl::Status status = DecodeBlock(block, *header, absl::MakeSpan(out));
  if (!status.ok()) return status;
  return out;
}

}  // namespace taups
