#include "tests/codec_golden_cases.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/codec.h"
#include "common/error_feedback.h"

namespace taups::testing {
namespace {

constexpr uint64_t kSeed = 0x7a05eedULL;        // stochastic rounding
constexpr uint64_t kIndexBase = 1000003;        // a slice deep in a tensor
constexpr uint64_t kMixedSizes[] = {1, 7, 63, 64, 65, 511, 512, 513, 1000, 4097};
constexpr uint64_t kPatternSizes[] = {37, 600};

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Hex64(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[i] = kDigits[v & 15];
  return out;
}

std::string HexBytes(absl::string_view bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

float Bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

absl::string_view FloatBytes(absl::Span<const float> v) {
  return absl::string_view(reinterpret_cast<const char*>(v.data()),
                           v.size() * sizeof(float));
}

// splitmix64: the same stream on every platform and standard library.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

// A signed 24-bit integer times a power of two in [2^-33, 2^-20]: magnitudes
// from about 2^-10 to 8, every value exact (no rounding anywhere).
std::vector<float> Mixed(uint64_t n) {
  SplitMix rng(n * 7919 + 1);
  std::vector<float> v(n);
  for (float& x : v) {
    const uint64_t u = rng.Next();
    const int32_t mantissa = static_cast<int32_t>(u >> 40) - (1 << 23);
    const int exponent = -33 + static_cast<int>((u >> 8) % 14);
    x = std::ldexp(static_cast<float>(mantissa), exponent);
  }
  return v;
}

// Values where codecs round, saturate or overflow, repeated to length n.
std::vector<float> Special(uint64_t n) {
  const float kPattern[] = {
      0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 3.0f,
      Bits(0x00000001),   // smallest denormal
      Bits(0x80000001),   // its negative
      Bits(0x000116c2),   // a denormal (about 1e-40)
      FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
      65504.0f, -65504.0f,  // fp16 max
      65520.0f,             // halfway to the next fp16 step: rounds to inf
      std::ldexp(1.0f, -24),      // smallest fp16 denormal
      std::ldexp(1.0f, -25),      // half of it: a tie, rounds to 0
      std::ldexp(3.0f, -26),      // above the tie: rounds up
      Bits(0x3f808000),  // 1 + 2^-8: bf16 tie, even below
      Bits(0x3f818000),  // 1 + 3 * 2^-8: bf16 tie, even above
      Bits(0x3f800001),  // 1 + 2^-23
      0.1f, -0.3f, 1e-30f, -1e30f, 123456.789f};
  constexpr size_t kLen = sizeof(kPattern) / sizeof(kPattern[0]);
  std::vector<float> v(n);
  for (uint64_t i = 0; i < n; ++i) v[i] = kPattern[i % kLen];
  return v;
}

// Only denormals and zeros: per-bucket scales become denormal themselves.
std::vector<float> Tiny(uint64_t n) {
  std::vector<float> v(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>((i * 2654435761u) % 0x7fffff);
    v[i] = i % 5 == 0 ? 0.0f : (i % 2 ? Bits(bits) : -Bits(bits));
  }
  return v;
}

std::vector<float> Zeros(uint64_t n) { return std::vector<float>(n, 0.0f); }

// Mixed values with NaN (quiet, and one with a payload) and +-Inf.
std::vector<float> NonFinite(uint64_t n) {
  std::vector<float> v = Mixed(n);
  for (uint64_t i = 0; i < n; i += 11) {
    switch ((i / 11) % 4) {
      case 0: v[i] = Bits(0x7fc00000); break;
      case 1: v[i] = INFINITY; break;
      case 2: v[i] = -INFINITY; break;
      case 3: v[i] = Bits(0xffc12345); break;
    }
  }
  return v;
}

struct Input {
  std::string name;
  std::vector<float> (*make)(uint64_t);
  absl::Span<const uint64_t> sizes;
};

struct Config {
  std::string name;
  CodecOptions options;
};

CodecOptions Make(CodecKind codec, Rounding rounding = Rounding::kNearest,
                  uint32_t bucket = kDefaultBucketSize) {
  CodecOptions o;
  o.codec = codec;
  o.rounding = rounding;
  o.bucket_size = bucket;
  o.seed = kSeed;
  return o;
}

std::vector<Config> Configs() {
  std::vector<Config> configs = {{"none", Make(CodecKind::kNone)},
                                 {"fp16", Make(CodecKind::kFp16)},
                                 {"bf16", Make(CodecKind::kBf16)}};
  for (CodecKind codec : {CodecKind::kInt8, CodecKind::kInt4, CodecKind::kInt2}) {
    for (Rounding r : {Rounding::kNearest, Rounding::kStochastic}) {
      for (uint32_t bucket : {64u, kDefaultBucketSize}) {
        configs.push_back({absl::StrCat(CodecKindName(codec), ".",
                                        RoundingName(r), ".b", bucket),
                           Make(codec, r, bucket)});
      }
    }
  }
  for (uint32_t bucket : {64u, kDefaultBucketSize}) {
    configs.push_back({absl::StrCat("sign.b", bucket),
                       Make(CodecKind::kSign, Rounding::kNearest, bucket)});
  }
  struct ValueCodec {
    CodecKind codec;
    Rounding rounding;
  };
  for (ValueCodec v :
       {ValueCodec{CodecKind::kNone, Rounding::kNearest},
        {CodecKind::kFp16, Rounding::kNearest},
        {CodecKind::kBf16, Rounding::kNearest},
        {CodecKind::kInt8, Rounding::kNearest},
        {CodecKind::kInt8, Rounding::kStochastic},
        {CodecKind::kInt4, Rounding::kNearest},
        {CodecKind::kInt4, Rounding::kStochastic},
        {CodecKind::kInt2, Rounding::kNearest},
        {CodecKind::kInt2, Rounding::kStochastic}}) {
    CodecOptions o = Make(CodecKind::kTopK, v.rounding, 64);
    o.topk_values = v.codec;
    o.topk_ratio = 0.05;
    configs.push_back({absl::StrCat("topk0.05.", CodecKindName(v.codec), ".",
                                    RoundingName(v.rounding)),
                       o});
  }
  CodecOptions one = Make(CodecKind::kTopK);
  one.topk_count = 1;
  configs.push_back({"topk1.none", one});
  return configs;
}

std::string ErrorLine(const absl::Status& status) {
  return absl::StrCat("error=", absl::StatusCodeToString(status.code()), " ",
                      status.message());
}

std::string BlockLine(const std::string& block, uint64_t n) {
  std::string line = absl::StrCat("bytes=", block.size(),
                                  " fnv1a64=", Hex64(Fnv1a64(block)));
  absl::StatusOr<std::vector<float>> decoded = DecodeToVector(block, n);
  if (!decoded.ok()) {
    absl::StrAppend(&line, " decode_", ErrorLine(decoded.status()));
  } else {
    absl::StrAppend(&line, " decoded=", Hex64(Fnv1a64(FloatBytes(*decoded))));
  }
  if (block.size() <= kFullHexBytes) {
    absl::StrAppend(&line, " block=", HexBytes(block));
  }
  return line;
}

std::string EncodeLine(absl::Span<const float> values,
                       const CodecOptions& options, uint64_t index_base) {
  std::string block;
  const absl::Status status = EncodeBlock(values, options, index_base, &block);
  if (!status.ok()) return ErrorLine(status);
  return BlockLine(block, values.size());
}

// Two pushes through error feedback: each block, then the residual left.
void AddErrorFeedbackCases(std::map<std::string, std::string>& lines) {
  constexpr uint64_t kN = 1000;
  for (const Config& c : Configs()) {
    if (c.options.codec == CodecKind::kNone) continue;
    ErrorFeedback ef(kN);
    const std::vector<float> first = Mixed(kN);
    std::vector<float> second = Mixed(kN + 1);
    second.resize(kN);
    for (int push = 0; push < 2; ++push) {
      std::string block;
      const absl::Status status =
          ef.EncodeRange(push == 0 ? first : second, 0, c.options, &block);
      const std::string name = absl::StrCat("ef/", c.name, "/push", push);
      lines[name] = status.ok()
                        ? absl::StrCat(BlockLine(block, kN), " residual=",
                                       Hex64(Fnv1a64(FloatBytes(ef.residual()))))
                        : ErrorLine(status);
    }
  }
}

}  // namespace

std::map<std::string, std::string> ComputeGoldenLines() {
  const Input inputs[] = {{"mixed", Mixed, kMixedSizes},
                          {"special", Special, kPatternSizes},
                          {"tiny", Tiny, kPatternSizes},
                          {"zeros", Zeros, kPatternSizes},
                          {"nonfinite", NonFinite, kPatternSizes}};
  std::map<std::string, std::string> lines;
  for (const Config& c : Configs()) {
    for (const Input& input : inputs) {
      for (uint64_t n : input.sizes) {
        const std::vector<float> values = input.make(n);
        lines[absl::StrCat(c.name, "/", input.name, "/", n)] =
            EncodeLine(values, c.options, 0);
        // The same values as a slice starting deep in a tensor: stochastic
        // rounding draws from (seed, global index).
        if (c.options.rounding == Rounding::kStochastic && input.name == "mixed") {
          lines[absl::StrCat(c.name, "/", input.name, "/", n, "@", kIndexBase)] =
              EncodeLine(values, c.options, kIndexBase);
        }
      }
    }
  }
  AddErrorFeedbackCases(lines);
  return lines;
}

std::string FormatGoldenFile(const std::map<std::string, std::string>& lines) {
  std::string text =
      "# Pinned CPU codec blocks (tests/codec_golden_test.cc): for fixed inputs,\n"
      "# the block each codec and rounding writes, hashed with FNV-1a 64 (whole\n"
      "# in hex when small), and the hash of its decode. The CUDA codecs were\n"
      "# verified byte-identical to these CPU bytes on an H200; change this file\n"
      "# only for a deliberate format change, then rerun bench/run_gpu_checks.sh\n"
      "# on a GPU. Regenerate with:\n"
      "#   <build>/bin/codec_golden_test --write-golden tests/golden/codec_blocks.txt\n";
  for (const auto& [name, line] : lines) {
    absl::StrAppend(&text, name, " ", line, "\n");
  }
  return text;
}

std::map<std::string, std::string> ParseGoldenFile(const std::string& text,
                                                   std::string* error) {
  std::map<std::string, std::string> lines;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    if (line.empty() || line.front() == '#') continue;
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos || space == 0) {
      *error = absl::StrCat("line ", number, ": no '<name> <value>'");
      return lines;
    }
    const std::string name(line.substr(0, space));
    if (!lines.emplace(name, std::string(line.substr(space + 1))).second) {
      *error = absl::StrCat("line ", number, ": case '", name, "' twice");
      return lines;
    }
  }
  return lines;
}

}  // namespace taups::testing
