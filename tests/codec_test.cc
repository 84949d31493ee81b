// The CPU codecs: sizes exactly as common/codec_format.h says, round-trip
// error bounds, the rounding modes, top-k selection, error feedback's
// conservation, and a table of malformed blocks that must all be refused.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/codec.h"
#include "common/codec_format.h"
#include "common/codec_math.h"
#include "common/error_feedback.h"
#include "common/vector_math.h"

namespace taups {
namespace {

constexpr CodecKind kAllCodecs[] = {
    CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8,
    CodecKind::kInt4, CodecKind::kInt2, CodecKind::kSign, CodecKind::kTopK};
constexpr uint64_t kAwkwardSizes[] = {0, 1, 7, 255, 511, 512, 513, 1000, 4097};

std::vector<float> RandomValues(uint64_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

CodecOptions Options(CodecKind codec, uint32_t bucket = 128) {
  CodecOptions o;
  o.codec = codec;
  o.bucket_size = bucket;
  o.topk_ratio = 0.05;
  return o;
}

std::string Encode(absl::Span<const float> v, const CodecOptions& o,
                   uint64_t base = 0) {
  std::string block;
  REQUIRE(EncodeBlock(v, o, base, &block).ok());
  return block;
}

std::vector<float> Decode(const std::string& block, uint64_t n) {
  absl::StatusOr<std::vector<float>> out = DecodeToVector(block, n);
  REQUIRE(out.ok());
  REQUIRE(out->size() == n);
  return *out;
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Block sizes written out from the format description, independently of
// codec_format.cc.
uint64_t ExpectedBytes(CodecKind codec, uint64_t n, uint32_t bucket, uint64_t k) {
  const uint64_t scales = 4 * CeilDiv(n, bucket);
  switch (codec) {
    case CodecKind::kNone: return 32 + 4 * n;
    case CodecKind::kFp16: case CodecKind::kBf16: return 32 + 2 * n;
    case CodecKind::kInt8: return 32 + scales + n;
    case CodecKind::kInt4: return 32 + scales + CeilDiv(n, 2);
    case CodecKind::kInt2: return 32 + scales + CeilDiv(n, 4);
    case CodecKind::kSign: return 32 + scales + CeilDiv(n, 8);
    case CodecKind::kTopK: return 32 + 8 * k;  // u32 index + fp32 value
  }
  return 0;
}

TEST_CASE("encoded sizes are exactly what the format says") {
  for (CodecKind codec : kAllCodecs) {
    for (uint64_t n : kAwkwardSizes) {
      CAPTURE(CodecKindName(codec), n);
      const std::vector<float> v = RandomValues(n, n + 1);
      const CodecOptions o = Options(codec);
      const uint64_t k = n == 0 ? 0 : std::max<uint64_t>(1, std::ceil(0.05 * n));
      const std::string block = Encode(v, o);
      CHECK(block.size() == ExpectedBytes(codec, n, 128, k));
      CHECK(EncodedBytes(o, n) == block.size());
      const std::vector<float> back = Decode(block, n);
      CHECK(back.size() == n);
    }
  }
}

TEST_CASE("wire bytes per codec as a fraction of fp32 meet the targets") {
  const uint64_t d = uint64_t{1} << 20;
  auto fraction = [&](CodecOptions o) {
    return static_cast<double>(EncodedBytes(o, d)) / (4.0 * d);
  };
  CodecOptions o;
  o.bucket_size = kDefaultBucketSize;
  o.codec = CodecKind::kInt8; CHECK(fraction(o) <= 0.26);
  o.codec = CodecKind::kInt4; CHECK(fraction(o) <= 0.13);
  o.codec = CodecKind::kInt2; CHECK(fraction(o) <= 0.07);
  o.codec = CodecKind::kSign; CHECK(fraction(o) <= 0.04);
  o.codec = CodecKind::kTopK;
  for (double ratio : {0.001, 0.01, 0.1}) {
    o.topk_ratio = ratio;
    const double k = static_cast<double>(TopKCount(o, d));
    CHECK(fraction(o) <= 2.1 * k / d);
  }
}

TEST_CASE("float32 passes through exactly") {
  const std::vector<float> v = RandomValues(1001, 3);
  CHECK(Decode(Encode(v, Options(CodecKind::kNone)), v.size()) == v);
}

TEST_CASE("fp16 conversion rounds to nearest even like the compiler's _Float16") {
  std::mt19937 rng(5);
  std::vector<float> probes = {0.0f, -0.0f, 1.0f, 65504.0f, 65519.0f, 65520.0f,
                               -65520.0f, 6.1035156e-5f, 5.9604645e-8f,
                               2.9802322e-8f, 2.9802326e-8f, 1e-10f, 1e10f,
                               INFINITY, -INFINITY};
  for (int i = 0; i < 200000; ++i) {
    uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) probes.push_back(f);
    probes.push_back(std::ldexp(static_cast<float>(rng() % 4096) - 2048.0f,
                                static_cast<int>(rng() % 50) - 40));
  }
  for (float f : probes) {
    CAPTURE(f);
    const _Float16 reference = static_cast<_Float16>(f);
    uint16_t reference_bits;
    std::memcpy(&reference_bits, &reference, 2);
    REQUIRE(codec_math::FloatToHalf(f) == reference_bits);
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    _Float16 half;
    const uint16_t bits = static_cast<uint16_t>(h);
    std::memcpy(&half, &bits, 2);
    const float expected = static_cast<float>(half);
    const float got = codec_math::HalfToFloat(bits);
    if (std::isnan(expected)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(std::memcmp(&got, &expected, 4) == 0);
    }
  }
  CHECK(std::isnan(codec_math::HalfToFloat(codec_math::FloatToHalf(NAN))));
}

TEST_CASE("bf16 picks the nearer neighbour, ties to even") {
  std::mt19937 rng(6);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = rng() & 0xff7fffffu;  // finite
    float f;
    std::memcpy(&f, &bits, 4);
    const uint16_t got = codec_math::FloatToBf16(f);
    const uint32_t down = bits & 0xffff0000u, up = down + 0x10000u;
    const uint32_t low = bits & 0xffffu;
    uint32_t expected = low < 0x8000u ? down : (low > 0x8000u ? up : ((down >> 16) & 1 ? up : down));
    REQUIRE(got == static_cast<uint16_t>(expected >> 16));
  }
  CHECK(std::isnan(codec_math::Bf16ToFloat(codec_math::FloatToBf16(NAN))));
}

TEST_CASE("fp16 and bf16 round trips stay within half an ulp") {
  const std::vector<float> v = RandomValues(4097, 7);
  const std::vector<float> h = Decode(Encode(v, Options(CodecKind::kFp16)), v.size());
  const std::vector<float> b = Decode(Encode(v, Options(CodecKind::kBf16)), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::fabs(v[i]) >= 6.2e-5f) {
      CHECK(std::fabs(h[i] - v[i]) <= std::fabs(v[i]) * 0x1p-11f);
    }
    CHECK(std::fabs(b[i] - v[i]) <= std::fabs(v[i]) * 0x1p-8f);
  }
}

// The step of each bucket of v, recomputed here: max |x| / levels.
std::vector<float> Steps(const std::vector<float>& v, uint32_t bucket, int levels) {
  std::vector<float> steps;
  for (size_t b = 0; b * bucket < v.size(); ++b) {
    float m = 0;
    for (size_t i = b * bucket; i < std::min(v.size(), (b + 1) * bucket); ++i) {
      m = std::max(m, std::fabs(v[i]));
    }
    steps.push_back(m > 0 ? m / levels : 1.0f);
  }
  return steps;
}

TEST_CASE("integer codecs with nearest rounding err by at most half a step") {
  for (CodecKind codec : {CodecKind::kInt8, CodecKind::kInt4, CodecKind::kInt2}) {
    for (uint64_t n : kAwkwardSizes) {
      CAPTURE(CodecKindName(codec), n);
      std::vector<float> v = RandomValues(n, 11 + n, 0.3f);
      if (n > 300) std::fill(v.begin() + 128, v.begin() + 256, 0.0f);  // a zero bucket
      const uint32_t bucket = 128;
      const std::vector<float> back = Decode(Encode(v, Options(codec, bucket)), n);
      const std::vector<float> steps = Steps(v, bucket, LevelsOf(codec));
      for (size_t i = 0; i < n; ++i) {
        const float step = steps[i / bucket];
        REQUIRE(std::fabs(back[i] - v[i]) <= step * 0.5f * (1 + 1e-6f));
        // Every decoded value is an integer multiple of the step.
        const float level = back[i] / step;
        REQUIRE(std::fabs(level - std::rint(level)) < 1e-3f);
        REQUIRE(std::fabs(level) <= LevelsOf(codec) + 1e-3f);
      }
    }
  }
}

TEST_CASE("stochastic rounding is within a step, unbiased, and reproducible") {
  const uint64_t n = 1000;
  std::vector<float> v = RandomValues(n, 21, 0.3f);
  CodecOptions o = Options(CodecKind::kInt2, 100);
  o.rounding = Rounding::kStochastic;
  const std::vector<float> steps = Steps(v, 100, 1);
  std::vector<double> mean(n, 0.0);
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    o.seed = 1000 + t;
    const std::vector<float> back = Decode(Encode(v, o), n);
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(std::fabs(back[i] - v[i]) < steps[i / 100] * (1 + 1e-6f));
      mean[i] += back[i] / trials;
    }
  }
  // Unbiased: the mean of 2000 draws is within 5 standard errors (a draw's
  // spread is at most one step) of the value.
  for (size_t i = 0; i < n; ++i) {
    CHECK(std::fabs(mean[i] - v[i]) < 5.0 * steps[i / 100] * 0.5 / std::sqrt(trials));
  }
  o.seed = 77;
  CHECK(Encode(v, o) == Encode(v, o));
  CodecOptions other = o;
  other.seed = 78;
  CHECK(Encode(v, o) != Encode(v, other));
  // A slice encoded with its index base rounds exactly like the whole tensor.
  const std::string whole = Encode(v, o);
  const std::string tail = Encode(absl::MakeSpan(v).subspan(500), o, 500);
  const std::vector<float> whole_back = Decode(whole, n);
  const std::vector<float> tail_back = Decode(tail, n - 500);
  for (size_t i = 0; i < n - 500; ++i) REQUIRE(tail_back[i] == whole_back[500 + i]);
}

TEST_CASE("stochastic int2 keeps the gradient's mean where nearest loses it") {
  // Small values in a bucket with one large value: nearest rounding sends
  // them all to 0; stochastic rounding keeps their sum in expectation.
  std::vector<float> v(512, 0.01f);
  v[0] = 1.0f;
  CodecOptions o = Options(CodecKind::kInt2, 512);
  const std::vector<float> nearest = Decode(Encode(v, o), v.size());
  double sum_v = 0, sum_n = 0, sum_s = 0;
  for (size_t i = 1; i < v.size(); ++i) {
    sum_v += v[i];
    sum_n += nearest[i];
  }
  // Averaged over 100 seeds the small values' sum (5.11) has a standard
  // error of about 0.23 (each value is 0 or 1 with p = 0.01).
  o.rounding = Rounding::kStochastic;
  const int seeds = 100;
  for (int seed = 0; seed < seeds; ++seed) {
    o.seed = seed;
    const std::vector<float> stochastic = Decode(Encode(v, o), v.size());
    for (size_t i = 1; i < v.size(); ++i) sum_s += stochastic[i] / seeds;
  }
  CHECK(sum_n == 0.0);
  CHECK(std::fabs(sum_s - sum_v) < 1.2);
}

TEST_CASE("sign sends each bucket's mean magnitude with the value's sign") {
  for (uint64_t n : kAwkwardSizes) {
    CAPTURE(n);
    const std::vector<float> v = RandomValues(n, 31 + n);
    const std::vector<float> back = Decode(Encode(v, Options(CodecKind::kSign, 100)), n);
    for (size_t b = 0; b * 100 < n; ++b) {
      const size_t begin = b * 100, end = std::min<size_t>(n, begin + 100);
      double l1 = 0;
      for (size_t i = begin; i < end; ++i) l1 += std::fabs(v[i]);
      const float magnitude = static_cast<float>(l1 / (end - begin));
      for (size_t i = begin; i < end; ++i) {
        REQUIRE(back[i] == (v[i] < 0 ? -magnitude : magnitude));
      }
    }
  }
}

TEST_CASE("top-k keeps exactly the largest magnitudes, lower index on ties") {
  std::vector<float> v = RandomValues(1000, 41);
  v[10] = 5.0f; v[20] = -5.0f; v[30] = 5.0f;  // a tie across the cut
  CodecOptions o = Options(CodecKind::kTopK);
  o.topk_count = 2;
  const std::vector<float> back = Decode(Encode(v, o), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CHECK(back[i] == ((i == 10 || i == 20) ? v[i] : 0.0f));
  }
  o.topk_count = 0;
  o.topk_ratio = 0.1;
  const std::vector<float> kept = Decode(Encode(v, o), v.size());
  std::vector<float> magnitudes;
  for (float x : v) magnitudes.push_back(std::fabs(x));
  std::sort(magnitudes.rbegin(), magnitudes.rend());
  const float cut = magnitudes[99];
  size_t nonzero = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (kept[i] != 0.0f) {
      ++nonzero;
      CHECK(kept[i] == v[i]);
      CHECK(std::fabs(v[i]) >= cut);
    } else {
      CHECK(std::fabs(v[i]) <= cut);
    }
  }
  CHECK(nonzero == 100);
}

TEST_CASE("top-k selects the same set as a full sort by rank") {
  std::mt19937 rng(45);
  for (int trial = 0; trial < 200; ++trial) {
    const uint64_t n = 1 + rng() % 3000;
    std::vector<float> v(n);
    // Few distinct magnitudes, both signs, some NaN: many ties at the cut.
    for (float& x : v) {
      x = static_cast<float>(static_cast<int>(rng() % 9) - 4) * 0.25f;
      if (rng() % 97 == 0) x = NAN;
    }
    CodecOptions o = Options(CodecKind::kTopK);
    o.topk_count = 1 + rng() % n;
    std::string block;
    REQUIRE(EncodeBlock(v, o, 0, &block).ok());
    std::vector<uint32_t> got(o.topk_count);
    std::memcpy(got.data(), block.data() + 32, 4 * got.size());
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      return codec_math::RanksAbove(v[a], a, v[b], b);
    });
    order.resize(o.topk_count);
    std::sort(order.begin(), order.end());
    REQUIRE(got == order);
  }
}

TEST_CASE("top-k with quantized values sends fewer bytes and bounded values") {
  const std::vector<float> v = RandomValues(4000, 43);
  CodecOptions o = Options(CodecKind::kTopK, 64);
  o.topk_ratio = 0.1;
  o.topk_values = CodecKind::kInt8;
  const std::string block = Encode(v, o);
  CHECK(block.size() == 32 + 400 * 4 + 4 * CeilDiv(400, 64) + 400);
  const std::vector<float> back = Decode(block, v.size());
  CodecOptions exact = o;
  exact.topk_values = CodecKind::kNone;
  const std::vector<float> reference = Decode(Encode(v, exact), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CHECK((back[i] == 0.0f) == (reference[i] == 0.0f));
    CHECK(std::fabs(back[i] - reference[i]) <= 4.0f / 127 * 0.5f + 1e-6f);
  }
}

TEST_CASE("scaled codecs refuse non-finite inputs") {
  std::vector<float> v = RandomValues(300, 51);
  v[200] = NAN;
  std::string block;
  for (CodecKind codec : {CodecKind::kInt8, CodecKind::kInt4, CodecKind::kInt2,
                          CodecKind::kSign}) {
    CHECK(EncodeBlock(v, Options(codec), 0, &block).code() ==
          absl::StatusCode::kInvalidArgument);
  }
  v[200] = INFINITY;
  CHECK(EncodeBlock(v, Options(CodecKind::kInt8), 0, &block).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("error feedback conserves the gradient sum") {
  const size_t n = 2000;
  for (CodecKind codec : {CodecKind::kInt2, CodecKind::kSign, CodecKind::kTopK,
                          CodecKind::kInt4}) {
    CAPTURE(CodecKindName(codec));
    ErrorFeedback feedback(n);
    CodecOptions o = Options(codec, 100);
    o.topk_ratio = 0.01;
    std::vector<double> raw_sum(n, 0.0), sent_sum(n, 0.0);
    for (int step = 0; step < 50; ++step) {
      const std::vector<float> g = RandomValues(n, 100 + step, 0.1f);
      std::string block;
      // Two slices, as a sliced push would encode them.
      for (size_t offset : {size_t{0}, size_t{1300}}) {
        const size_t len = offset == 0 ? 1300 : n - 1300;
        REQUIRE(feedback.EncodeRange(absl::MakeSpan(g).subspan(offset, len),
                                     offset, o, &block).ok());
        const std::vector<float> sent = Decode(block, len);
        for (size_t i = 0; i < len; ++i) sent_sum[offset + i] += sent[i];
      }
      for (size_t i = 0; i < n; ++i) raw_sum[i] += g[i];
    }
    for (size_t i = 0; i < n; ++i) {
      REQUIRE(std::fabs(sent_sum[i] + feedback.residual()[i] - raw_sum[i]) < 1e-4);
    }
  }
  ErrorFeedback small(10);
  std::string block;
  std::vector<float> g(5, 1.0f);
  CHECK(small.EncodeRange(g, 6, Options(CodecKind::kInt8), &block).code() ==
        absl::StatusCode::kInvalidArgument);
}


TEST_CASE("AllFinite and AllSumsFinite see every NaN and infinity") {
  std::vector<float> a = RandomValues(1001, 8), b = RandomValues(1001, 9);
  CHECK(AllFinite(a));
  CHECK(AllFinite({}));
  CHECK(AllSumsFinite(a, b));
  for (float bad : {NAN, -NAN, INFINITY, -INFINITY}) {
    for (size_t at : {size_t{0}, size_t{500}, size_t{1000}}) {
      CAPTURE(bad, at);
      std::vector<float> with_bad = a;
      with_bad[at] = bad;
      CHECK_FALSE(AllFinite(with_bad));
      CHECK_FALSE(AllSumsFinite(with_bad, b));
      CHECK_FALSE(AllSumsFinite(b, with_bad));
    }
  }
  // Finite values whose sum overflows.
  const std::vector<float> big = {1.0f, 3e38f}, bigger = {1.0f, 3e38f};
  CHECK(AllFinite(big));
  CHECK_FALSE(AllSumsFinite(big, bigger));
  CHECK(AllFinite(std::vector<float>{FLT_MAX, -FLT_MAX, 0.0f, -0.0f, 1e-45f}));
}

TEST_CASE("error feedback writes every NaN sum as the one quiet NaN") {
  // The codecs that carry NaN (fp32, fp16, bf16) must send the same bytes
  // whatever NaN payload the gradient held, as the GPU encoder does.
  const uint32_t kPayloads[] = {0x7fc00000u, 0xffc00000u, 0x7fd12345u,
                                0xfff00001u};
  for (uint32_t payload : kPayloads) {
    CAPTURE(payload);
    const float nan = codec_math::BitsFloat(payload);
    REQUIRE(std::isnan(nan));
    CHECK(codec_math::FloatBits(codec_math::FeedbackSum(nan, 1.0f)) ==
          0x7fc00000u);
    CHECK(codec_math::FloatBits(codec_math::FeedbackSum(2.0f, nan)) ==
          0x7fc00000u);
    for (CodecKind codec :
         {CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16}) {
      CAPTURE(CodecKindName(codec));
      ErrorFeedback feedback(3);
      const std::vector<float> g = {0.5f, nan, -0.25f};
      std::string block, reference;
      REQUIRE(feedback.EncodeRange(g, 0, Options(codec), &block).ok());
      const std::vector<float> canonical = {0.5f,
                                            codec_math::BitsFloat(0x7fc00000u),
                                            -0.25f};
      REQUIRE(EncodeBlock(canonical, Options(codec), 0, &reference).ok());
      CHECK(block == reference);
    }
  }
  CHECK(codec_math::FeedbackSum(1.5f, -0.25f) == 1.25f);
}
TEST_CASE("the top-k warm-up falls exponentially to the target ratio") {
  CompressionConfig config;
  config.push.codec = CodecKind::kTopK;
  config.push.topk_ratio = 0.001;
  config.topk_warmup_pushes = 4;
  config.topk_warmup_start_ratio = 0.25;
  CHECK(TopKRatioAt(config, 0) == Approx(0.25 * std::pow(0.004, 0.25)));
  CHECK(TopKRatioAt(config, 1) == Approx(0.25 * std::pow(0.004, 0.5)));
  CHECK(TopKRatioAt(config, 3) == Approx(0.001));
  CHECK(TopKRatioAt(config, 100) == 0.001);
  config.topk_warmup_pushes = 0;
  CHECK(TopKRatioAt(config, 0) == 0.001);
}

// --- malformed blocks -------------------------------------------------------

template <typename T>
void Poke(std::string& block, size_t offset, T value) {
  std::memcpy(block.data() + offset, &value, sizeof(T));
}

struct Malformed {
  const char* what;
  std::string block;
};

std::vector<Malformed> MalformedBlocks() {
  const std::vector<float> v = RandomValues(301, 61);
  const std::string int8 = Encode(v, Options(CodecKind::kInt8, 100));
  const std::string int4 = Encode(v, Options(CodecKind::kInt4, 100));
  const std::string int2 = Encode(v, Options(CodecKind::kInt2, 100));
  const std::string sign = Encode(v, Options(CodecKind::kSign, 100));
  CodecOptions topk_options = Options(CodecKind::kTopK);
  topk_options.topk_count = 10;
  const std::string topk = Encode(v, topk_options);
  const size_t scales = 32, int8_codes = 32 + 4 * 4;
  std::vector<Malformed> cases;
  auto add = [&](const char* what, std::string block, auto&& edit) {
    edit(block);
    cases.push_back({what, std::move(block)});
  };
  auto none = [](std::string&) {};
  add("empty", "", none);
  add("shorter than the header", int8.substr(0, 31), none);
  add("bad magic", int8, [](std::string& b) { b[0] = 'X'; });
  add("format version 2", int8, [](std::string& b) { b[4] = 2; });
  add("unknown codec id", int8, [](std::string& b) { b[5] = 9; });
  add("unknown flag", int8, [](std::string& b) { b[7] = 4; });
  add("reserved bytes set", int8, [](std::string& b) { Poke<uint32_t>(b, 20, 1); });
  add("too many elements", Encode(RandomValues(5000, 1), Options(CodecKind::kNone)), none);
  add("entry count differs", int8, [](std::string& b) { Poke<uint64_t>(b, 24, 300); });
  add("bucket size 0", int8, [](std::string& b) { Poke<uint32_t>(b, 16, 0); });
  add("bucket size too large", int8,
      [](std::string& b) { Poke<uint32_t>(b, 16, kMaxBucketSize + 1); });
  add("bucket on a scale-free codec", Encode(v, Options(CodecKind::kFp16)),
      [](std::string& b) { Poke<uint32_t>(b, 16, 8); });
  add("one byte too long", int8, [](std::string& b) { b.push_back(0); });
  add("one byte too short", int8, [](std::string& b) { b.pop_back(); });
  add("element count lies", int8, [](std::string& b) { Poke<uint64_t>(b, 8, 302); Poke<uint64_t>(b, 24, 302); });
  add("NaN step", int8, [&](std::string& b) { Poke<float>(b, scales + 4, NAN); });
  add("infinite step", int8, [&](std::string& b) { Poke<float>(b, scales, INFINITY); });
  add("zero step", int8, [&](std::string& b) { Poke<float>(b, scales, 0.0f); });
  add("negative step", int8, [&](std::string& b) { Poke<float>(b, scales, -1.0f); });
  add("int8 level -128", int8, [&](std::string& b) { b[int8_codes + 7] = static_cast<char>(0x80); });
  add("int4 code 0 (level -8)", int4,
      [&](std::string& b) { b[int8_codes] = static_cast<char>((b[int8_codes] & 0xf0)); });
  add("int2 code 3", int2, [&](std::string& b) { b[int8_codes] = static_cast<char>(b[int8_codes] | 0x03); });
  add("int2 unused bits set", int2, [&](std::string& b) { b.back() = static_cast<char>(b.back() | 0x40); });
  add("int4 unused nibble set", int4, [&](std::string& b) { b.back() = static_cast<char>(b.back() | 0x10); });
  add("sign unused bits set", sign, [&](std::string& b) { b.back() = static_cast<char>(b.back() | 0x80); });
  add("negative sign magnitude", sign, [&](std::string& b) { Poke<float>(b, scales, -0.5f); });
  add("NaN sign magnitude", sign, [&](std::string& b) { Poke<float>(b, scales + 8, NAN); });
  add("top-k index out of range", topk, [&](std::string& b) { Poke<uint32_t>(b, 32 + 4 * 9, 301); });
  add("top-k indices repeat", topk, [&](std::string& b) {
    uint32_t first;
    std::memcpy(&first, b.data() + 32, 4);
    Poke<uint32_t>(b, 36, first);
  });
  add("top-k indices descend", topk, [&](std::string& b) {
    uint32_t a, c;
    std::memcpy(&a, b.data() + 32, 4);
    std::memcpy(&c, b.data() + 36, 4);
    Poke<uint32_t>(b, 32, c);
    Poke<uint32_t>(b, 36, a);
  });
  add("top-k keeps more than n", topk, [&](std::string& b) { Poke<uint64_t>(b, 8, 5); });
  add("top-k value codec sign", topk, [&](std::string& b) { b[6] = static_cast<char>(CodecKind::kSign); });
  add("value codec on a non-top-k block", int8, [&](std::string& b) { b[6] = 1; });
  return cases;
}

TEST_CASE("malformed blocks are refused with INVALID_ARGUMENT") {
  for (const Malformed& m : MalformedBlocks()) {
    CAPTURE(m.what);
    absl::StatusOr<std::vector<float>> out = DecodeToVector(m.block, 4096);
    REQUIRE_FALSE(out.ok());
    CHECK(out.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("codec options are validated") {
  CodecOptions o;
  o.codec = CodecKind::kInt8;
  o.bucket_size = 0;
  CHECK(o.Validate().code() == absl::StatusCode::kInvalidArgument);
  o.codec = CodecKind::kTopK;
  o.bucket_size = 512;
  o.topk_ratio = 0;
  CHECK(o.Validate().code() == absl::StatusCode::kInvalidArgument);
  o.topk_ratio = 0.01;
  o.topk_values = CodecKind::kSign;
  CHECK(o.Validate().code() == absl::StatusCode::kInvalidArgument);
  o.topk_values = CodecKind::kInt4;
  CHECK(o.Validate().ok());
  CHECK(ParseCodecKind("int4").value() == CodecKind::kInt4);
  CHECK(ParseCodecKind("int3").status().code() == absl::StatusCode::kInvalidArgument);
  CompressionConfig c;
  c.pull = CodecKind::kSign;
  CHECK(c.Validate().code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taups
