// The CUDA codecs (cuda/codec_kernels.h) against the CPU codecs, which are
// the oracle: the same block bytes for every codec, rounding, seed, bucket
// size and awkward length; the same residuals under error feedback; the same
// decoded floats; and the same refusals, word for word.
//
// Without a usable CUDA device every GPU test case (tagged [cuda]) prints
// "SKIPPED: no CUDA device" and returns, and CTest reports codec_gpu_test_cuda
// as skipped (tests/test_skip.h). The host-only check of the top-k sort key
// runs everywhere, in codec_gpu_test.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <memory>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "common/codec.h"
#include "common/codec_format.h"
#include "common/codec_math.h"
#include "common/error_feedback.h"
#include "cuda/codec_kernels.h"
#include "cuda/cuda_device.h"
#include "tests/test_skip.h"

namespace taups::cuda {
namespace {

using ::taups::testing::NoteSkipped;

bool SkipWithoutDevice() {
  if (UsableDeviceCount() > 0) return false;
  NoteSkipped();
  WARN("SKIPPED: no CUDA device");
  return true;
}

// One codec for the whole test binary: reusing it also exercises scratch
// buffers that grow and shrink in use from call to call.
DeviceCodec& Codec() {
  static std::unique_ptr<DeviceCodec> codec = [] {
    absl::StatusOr<std::unique_ptr<DeviceCodec>> made = DeviceCodec::Create(0);
    REQUIRE(made.ok());
    return std::move(*made);
  }();
  return *codec;
}

// cudaMalloc'ed bytes owned by a test.
class DeviceMemory {
 public:
  explicit DeviceMemory(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) REQUIRE(cudaMalloc(&data_, bytes) == cudaSuccess);
  }
  ~DeviceMemory() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void Upload(const void* host, size_t bytes) {
    REQUIRE(bytes == bytes_);
    if (bytes > 0) {
      REQUIRE(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice) ==
              cudaSuccess);
    }
  }
  void Download(void* host) const {
    if (bytes_ > 0) {
      REQUIRE(cudaMemcpy(host, data_, bytes_, cudaMemcpyDeviceToHost) ==
              cudaSuccess);
    }
  }
  float* floats() const { return static_cast<float*>(data_); }
  char* chars() const { return static_cast<char*>(data_); }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

std::unique_ptr<DeviceMemory> ToDevice(const std::vector<float>& v) {
  auto memory = std::make_unique<DeviceMemory>(sizeof(float) * v.size());
  memory->Upload(v.data(), sizeof(float) * v.size());
  return memory;
}

std::vector<float> FromDevice(const DeviceMemory& memory, size_t n) {
  std::vector<float> v(n);
  memory.Download(v.data());
  return v;
}

// --- inputs ------------------------------------------------------------------

enum class Shape {
  kNormal,   // N(0, 1e-3)
  kTies,     // few distinct magnitudes: top-k ties, exact sign sums
  kHalves,   // mostly k + 0.5 with +-127 common: int8 steps of exactly 1,
             // so nearest rounding meets exact halves
  kSpecial,  // +-0, subnormals, tiny and huge values, fp16 edges
};
constexpr Shape kShapes[] = {Shape::kNormal, Shape::kTies, Shape::kHalves,
                             Shape::kSpecial};

std::vector<float> Values(Shape shape, uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + static_cast<uint64_t>(shape));
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  const float ties[] = {0.0f, -0.0f, 0.25f, -0.25f, 0.5f, -0.5f, 1.0f, -1.0f};
  const float special[] = {0.0f,     -0.0f,    1e-40f,   -1e-40f, 1.4e-45f,
                           FLT_MIN,  1e-8f,    -3e-8f,   65504.0f, 65520.0f,
                           -65536.0f, 1e30f,   -1e30f,   3.0e38f, 1.0f};
  std::vector<float> v(n);
  for (float& x : v) {
    switch (shape) {
      case Shape::kNormal: x = normal(rng); break;
      case Shape::kTies: x = ties[rng() % 8]; break;
      case Shape::kHalves:
        x = rng() % 8 == 0 ? (rng() % 2 ? 127.0f : -127.0f)
                           : static_cast<float>(static_cast<int>(rng() % 252) -
                                                126) + 0.5f;
        break;
      case Shape::kSpecial:
        x = rng() % 3 == 0 ? special[rng() % 15] : normal(rng);
        break;
    }
  }
  return v;
}

CodecOptions Options(CodecKind codec, uint32_t bucket, Rounding rounding,
                     uint64_t seed) {
  CodecOptions o;
  o.codec = codec;
  o.bucket_size = bucket;
  o.rounding = rounding;
  o.seed = seed;
  return o;
}

// --- comparisons -------------------------------------------------------------

bool SameBits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// Bit-identical, except that any NaN matches any NaN (the device writes the
// canonical NaN where the CPU may keep another payload).
bool SameOrBothNaN(float a, float b) {
  return SameBits(a, b) || (std::isnan(a) && std::isnan(b));
}

void RequireSameStatus(const absl::Status& gpu, const absl::Status& cpu) {
  INFO("gpu: " << gpu.ToString() << "\ncpu: " << cpu.ToString());
  REQUIRE(gpu.code() == cpu.code());
  REQUIRE(std::string(gpu.message()) == std::string(cpu.message()));
}

// The Check* helpers report a difference and let the test go on, so that one
// run on a GPU machine (scarce here) shows every difference at once.
void CheckSameBytes(const std::string& gpu, const std::string& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  if (gpu == cpu) return;
  size_t first = 0;
  while (gpu[first] == cpu[first]) ++first;
  INFO("first differing byte " << first << " of " << cpu.size() << ": gpu "
       << int(static_cast<uint8_t>(gpu[first])) << ", cpu "
       << int(static_cast<uint8_t>(cpu[first])));
  FAIL_CHECK("block bytes differ");
}

void CheckSameFloats(const std::vector<float>& gpu,
                       const std::vector<float>& cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!SameBits(gpu[i], cpu[i])) {
      INFO("element " << i << ": gpu " << gpu[i] << ", cpu " << cpu[i]);
      FAIL_CHECK("decoded floats differ");
      return;
    }
  }
}

// ParseHeader(block, n) + DecodeBlock: what Decode(block, out, n) promises.
absl::StatusOr<std::vector<float>> CpuDecode(const std::string& block,
                                             uint64_t n) {
  absl::StatusOr<BlockHeader> header = ParseHeader(block, n);
  if (!header.ok()) return header.status();
  std::vector<float> out(n);
  absl::Status status = DecodeBlock(block, *header, absl::MakeSpan(out));
  if (!status.ok()) return status;
  return out;
}

// Decodes `block` on the device (from host memory and, when it parses,
// from device memory) and requires the CPU decoder's status and floats.
void RequireSameDecode(const std::string& block, uint64_t n) {
  const absl::StatusOr<std::vector<float>> cpu = CpuDecode(block, n);
  DeviceMemory out(sizeof(float) * n);
  RequireSameStatus(Codec().Decode(block, out.floats(), n), cpu.status());
  if (cpu.ok()) CheckSameFloats(FromDevice(out, n), *cpu);

  absl::StatusOr<BlockHeader> header = ParseHeader(block, n);
  if (!header.ok() || header->element_count != n) return;
  DeviceMemory device_block(block.size());
  device_block.Upload(block.data(), block.size());
  DeviceMemory out2(sizeof(float) * n);
  RequireSameStatus(
      Codec().DecodeDeviceBlock(device_block.chars(), *header, out2.floats()),
      cpu.status());
  if (cpu.ok()) CheckSameFloats(FromDevice(out2, n), *cpu);
}

// Encodes `v` both ways and requires the same status and bytes; then the
// same decode of the block. With `to_device_block`, also encodes into device
// memory.
void RequireSameEncode(const std::vector<float>& v, const CodecOptions& o,
                       uint64_t index_base, bool to_device_block = false) {
  std::string cpu, gpu;
  const absl::Status cpu_status = EncodeBlock(v, o, index_base, &cpu);
  const std::unique_ptr<DeviceMemory> values = ToDevice(v);
  RequireSameStatus(
      Codec().Encode(values->floats(), v.size(), o, index_base, &gpu),
      cpu_status);
  if (!cpu_status.ok()) return;
  CheckSameBytes(gpu, cpu);
  RequireSameDecode(cpu, v.size());
  if (!to_device_block) return;
  DeviceMemory block(cpu.size());
  REQUIRE(Codec()
              .EncodeToDeviceBlock(values->floats(), v.size(), o, index_base,
                                   block.chars())
              .ok());
  std::string back(cpu.size(), '\0');
  block.Download(back.data());
  CheckSameBytes(back, cpu);
}

constexpr CodecKind kBlockCodecs[] = {
    CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8,
    CodecKind::kInt4, CodecKind::kInt2, CodecKind::kSign};
constexpr CodecKind kValueCodecs[] = {CodecKind::kNone, CodecKind::kFp16,
                                      CodecKind::kBf16, CodecKind::kInt8,
                                      CodecKind::kInt4, CodecKind::kInt2};
constexpr Rounding kRoundings[] = {Rounding::kNearest, Rounding::kStochastic};
constexpr uint64_t kLarge = (uint64_t{1} << 20) + 3;

// --- host only -----------------------------------------------------------------

TEST_CASE("the top-k sort key orders like RanksAbove", "[codec][gpu]") {
  std::mt19937 rng(11);
  std::vector<float> probes = {0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, 1.0f,
                               -1.0f, FLT_MAX, -FLT_MAX, INFINITY, -INFINITY,
                               NAN, -NAN};
  for (int i = 0; i < 2000; ++i) {
    const uint32_t bits = rng();
    float f;
    std::memcpy(&f, &bits, 4);
    probes.push_back(f);
  }
  for (size_t a = 0; a < probes.size(); a += 7) {
    for (size_t b = 0; b < probes.size(); b += 5) {
      for (uint32_t ia : {3u, 9u}) {
        const uint32_t ib = 6;
        const uint32_t ka = codec_math::TopKSortKey(probes[a]);
        const uint32_t kb = codec_math::TopKSortKey(probes[b]);
        const bool by_key = ka != kb ? ka < kb : ia < ib;
        CAPTURE(probes[a], probes[b], ia, ib);
        REQUIRE(by_key ==
                codec_math::RanksAbove(probes[a], ia, probes[b], ib));
      }
    }
  }
}

// --- encode --------------------------------------------------------------------

TEST_CASE("device blocks are the CPU's bytes for awkward lengths",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  INFO("device: " << Codec().device_description());
  for (uint32_t bucket : {1u, 3u, 64u, 512u}) {
    std::vector<uint64_t> sizes = {0, 1, 7, bucket + 1, 3001};
    if (bucket > 1) sizes.push_back(bucket);
    if (bucket > 2) sizes.push_back(bucket - 1);
    for (uint64_t n : sizes) {
      for (Shape shape : kShapes) {
        const std::vector<float> v = Values(shape, n, n + bucket);
        for (CodecKind codec : kBlockCodecs) {
          for (Rounding rounding : kRoundings) {
            for (uint64_t seed : {uint64_t{0}, uint64_t{0x9e3779b97f4a7c15}}) {
              for (uint64_t base : {uint64_t{0}, uint64_t{123457}}) {
                CAPTURE(bucket, n, static_cast<int>(shape),
                        CodecKindName(codec), RoundingName(rounding), seed,
                        base);
                RequireSameEncode(v, Options(codec, bucket, rounding, seed),
                                  base, /*to_device_block=*/seed == 0);
              }
            }
          }
        }
      }
    }
  }
}

TEST_CASE("device blocks are the CPU's bytes for a million values",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  for (Shape shape : {Shape::kNormal, Shape::kHalves}) {
    const std::vector<float> v = Values(shape, kLarge, 99);
    for (uint32_t bucket : {512u, 4096u}) {
      for (CodecKind codec : kBlockCodecs) {
        for (Rounding rounding : kRoundings) {
          CAPTURE(static_cast<int>(shape), bucket, CodecKindName(codec),
                  RoundingName(rounding));
          RequireSameEncode(v, Options(codec, bucket, rounding, 2024), 1 << 30,
                            /*to_device_block=*/bucket == 512);
        }
      }
    }
  }
}

TEST_CASE("device top-k keeps the CPU's entries, ties and NaN included",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  SECTION("short inputs, every value codec and count") {
    for (uint64_t n : {uint64_t{1}, uint64_t{7}, uint64_t{100}, uint64_t{3001}}) {
      for (Shape shape : kShapes) {
        const std::vector<float> v = Values(shape, n, 5 * n);
        for (CodecKind values : kValueCodecs) {
          for (Rounding rounding : kRoundings) {
            for (uint64_t count : {uint64_t{0}, uint64_t{1}, n - 1, n}) {
              CodecOptions o = Options(CodecKind::kTopK, 64, rounding, 31);
              o.topk_values = values;
              o.topk_count = count;  // 0: the ratio
              o.topk_ratio = 0.05;
              CAPTURE(n, static_cast<int>(shape), CodecKindName(values),
                      RoundingName(rounding), count);
              RequireSameEncode(v, o, 17, /*to_device_block=*/count == 0);
            }
          }
        }
      }
    }
  }
  SECTION("a million values, many ties") {
    for (Shape shape : {Shape::kNormal, Shape::kTies}) {
      const std::vector<float> v = Values(shape, kLarge, 3);
      for (CodecKind values : {CodecKind::kNone, CodecKind::kInt8,
                               CodecKind::kInt2}) {
        for (double ratio : {0.001, 0.01, 0.3}) {
          CodecOptions o = Options(CodecKind::kTopK, 512,
                                   Rounding::kStochastic, 8);
          o.topk_values = values;
          o.topk_ratio = ratio;
          CAPTURE(static_cast<int>(shape), CodecKindName(values), ratio);
          RequireSameEncode(v, o, 0, /*to_device_block=*/true);
        }
      }
    }
  }
  SECTION("NaN ranks first; a scaled value codec then refuses it") {
    std::vector<float> v = Values(Shape::kNormal, 1000, 4);
    v[10] = NAN;
    v[500] = -NAN;
    v[999] = INFINITY;
    for (CodecKind values : kValueCodecs) {
      CodecOptions o = Options(CodecKind::kTopK, 64, Rounding::kNearest, 0);
      o.topk_values = values;
      o.topk_count = 5;
      CAPTURE(CodecKindName(values));
      RequireSameEncode(v, o, 0);
    }
  }
}

TEST_CASE("device encoders refuse non-finite inputs like the CPU",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  const std::pair<float, float> kBad[] = {
      {NAN, INFINITY}, {-INFINITY, NAN}, {INFINITY, -INFINITY}};
  for (const std::pair<float, float>& bad : kBad) {
    for (uint64_t at : {uint64_t{0}, uint64_t{5}, uint64_t{999}}) {
      std::vector<float> v = Values(Shape::kNormal, 1000, at);
      v[at] = bad.first;
      if (at + 300 < v.size()) v[at + 300] = bad.second;
      for (CodecKind codec : kBlockCodecs) {
        for (uint32_t bucket : {1u, 64u, 4096u}) {
          CAPTURE(bad.first, at, CodecKindName(codec), bucket);
          // Scaled codecs refuse naming index `at`; the others carry the
          // value through with the same bytes.
          RequireSameEncode(v, Options(codec, bucket, Rounding::kNearest, 1),
                            0);
        }
      }
    }
  }
}

// --- error feedback ------------------------------------------------------------

void RequireSameFeedback(const CodecOptions& o, uint64_t n, uint64_t offset,
                         int rounds, uint64_t seed) {
  ErrorFeedback cpu(offset + n + 3);
  DeviceMemory residual(sizeof(float) * n);
  const std::vector<float> zeros(n, 0.0f);
  residual.Upload(zeros.data(), sizeof(float) * n);
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    std::vector<float> g = Values(Shape::kNormal, n, seed + round);
    if (round == rounds - 1 && n > 2) {
      // Scaled codecs refuse it (the residual must stay as it was); the
      // others carry it into the block and the residual.
      g[n / 2] = NAN;
    }
    const std::vector<float> before = FromDevice(residual, n);
    std::string cpu_block, gpu_block;
    const absl::Status cpu_status = cpu.EncodeRange(g, offset, o, &cpu_block);
    const std::unique_ptr<DeviceMemory> gradient = ToDevice(g);
    RequireSameStatus(
        Codec().EncodeWithFeedback(gradient->floats(), residual.floats(), n,
                                   offset, o, &gpu_block),
        cpu_status);
    const std::vector<float> after = FromDevice(residual, n);
    if (!cpu_status.ok()) {
      CheckSameFloats(after, before);
      continue;
    }
    CheckSameBytes(gpu_block, cpu_block);
    for (uint64_t i = 0; i < n; ++i) {
      const float want = cpu.residual()[offset + i];
      if (!SameOrBothNaN(after[i], want)) {
        INFO("residual " << i << ": gpu " << after[i] << ", cpu " << want);
        FAIL_CHECK("residuals differ");
        break;
      }
    }
  }
}

TEST_CASE("fused error feedback leaves the CPU's residual, bit for bit",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  SECTION("short ranges, every codec") {
    for (uint64_t n : {uint64_t{1}, uint64_t{7}, uint64_t{513}, uint64_t{3001}}) {
      for (uint64_t offset : {uint64_t{0}, uint64_t{77}}) {
        for (CodecKind codec : kBlockCodecs) {
          for (Rounding rounding : kRoundings) {
            CAPTURE(n, offset, CodecKindName(codec), RoundingName(rounding));
            RequireSameFeedback(Options(codec, 64, rounding, 5), n, offset, 3,
                                n + offset);
          }
        }
        for (CodecKind values : kValueCodecs) {
          CodecOptions o =
              Options(CodecKind::kTopK, 64, Rounding::kStochastic, 6);
          o.topk_values = values;
          o.topk_ratio = 0.1;
          CAPTURE(n, offset, "topk", CodecKindName(values));
          RequireSameFeedback(o, n, offset, 3, n * 3 + offset);
        }
      }
    }
  }
  SECTION("a million values") {
    for (CodecKind codec : {CodecKind::kInt8, CodecKind::kInt2,
                            CodecKind::kSign, CodecKind::kFp16}) {
      CAPTURE(CodecKindName(codec));
      RequireSameFeedback(Options(codec, 512, Rounding::kStochastic, 9),
                          kLarge, 1000, 2, 1);
    }
    CodecOptions o = Options(CodecKind::kTopK, 512, Rounding::kNearest, 0);
    o.topk_values = CodecKind::kInt4;
    RequireSameFeedback(o, kLarge, 0, 2, 2);
  }
}

// --- decode --------------------------------------------------------------------

template <typename T>
void Poke(std::string& block, size_t offset, T value) {
  std::memcpy(block.data() + offset, &value, sizeof(T));
}

std::string CpuBlock(const std::vector<float>& v, const CodecOptions& o) {
  std::string block;
  REQUIRE(EncodeBlock(v, o, 0, &block).ok());
  return block;
}

TEST_CASE("device decoding refuses the blocks the CPU refuses",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  const uint64_t n = 301;
  const std::vector<float> v = Values(Shape::kNormal, n, 1);
  auto options = [](CodecKind codec) {
    return Options(codec, 100, Rounding::kNearest, 0);
  };
  const std::string int8 = CpuBlock(v, options(CodecKind::kInt8));
  const std::string int4 = CpuBlock(v, options(CodecKind::kInt4));
  const std::string int2 = CpuBlock(v, options(CodecKind::kInt2));
  const std::string sign = CpuBlock(v, options(CodecKind::kSign));
  CodecOptions topk_options = options(CodecKind::kTopK);
  topk_options.topk_count = 10;
  topk_options.topk_values = CodecKind::kInt8;
  const std::string topk = CpuBlock(v, topk_options);
  const size_t scales = kBlockHeaderBytes;           // 4 buckets of 100
  const size_t codes = kBlockHeaderBytes + 4 * 4;    // after the scales
  const size_t topk_scales = kBlockHeaderBytes + 40;  // after 10 indices

  struct Case {
    const char* what;
    std::string block;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, std::string block, auto&& edit) {
    edit(block);
    cases.push_back({what, std::move(block)});
  };
  add("truncated header", int8.substr(0, 20), [](std::string&) {});
  add("wrong magic", int8, [](std::string& b) { b[1] = 'Q'; });
  add("element count lowered", int8,
      [](std::string& b) { Poke<uint64_t>(b, 8, 300); Poke<uint64_t>(b, 24, 300); });
  add("zero step", int8, [&](std::string& b) { Poke<float>(b, scales + 8, 0.0f); });
  add("negative step", int4, [&](std::string& b) { Poke<float>(b, scales, -2.0f); });
  add("-0 step", int2, [&](std::string& b) { Poke<float>(b, scales + 4, -0.0f); });
  add("NaN step", int8, [&](std::string& b) { Poke<float>(b, scales + 12, NAN); });
  add("infinite step", int4, [&](std::string& b) { Poke<float>(b, scales, INFINITY); });
  add("int8 code -128", int8,
      [&](std::string& b) { b[codes + 250] = static_cast<char>(0x80); });
  add("int4 code 0 (high nibble)", int4, [&](std::string& b) {
    b[codes + 3] = static_cast<char>(b[codes + 3] & 0x0f);
  });
  add("int2 code 3", int2,
      [&](std::string& b) { b[codes + 70] = static_cast<char>(b[codes + 70] | 0x30); });
  add("int4 unused nibble", int4,
      [](std::string& b) { b.back() = static_cast<char>(b.back() | 0x70); });
  add("int2 unused bits", int2,
      [](std::string& b) { b.back() = static_cast<char>(b.back() | 0x10); });
  add("sign unused bits", sign,
      [](std::string& b) { b.back() = static_cast<char>(b.back() | 0x40); });
  add("negative sign magnitude", sign,
      [&](std::string& b) { Poke<float>(b, scales + 12, -1e-3f); });
  add("infinite sign magnitude", sign,
      [&](std::string& b) { Poke<float>(b, scales, -INFINITY); });
  add("top-k index past n", topk, [](std::string& b) { Poke<uint32_t>(b, 32 + 36, 301); });
  add("top-k index repeated", topk, [](std::string& b) {
    uint32_t third;
    std::memcpy(&third, b.data() + 32 + 8, 4);
    Poke<uint32_t>(b, 32 + 12, third);
  });
  add("top-k indices swapped", topk, [](std::string& b) {
    uint32_t first, second;
    std::memcpy(&first, b.data() + 32, 4);
    std::memcpy(&second, b.data() + 36, 4);
    Poke<uint32_t>(b, 32, second);
    Poke<uint32_t>(b, 36, first);
  });
  add("top-k bad value step", topk,
      [&](std::string& b) { Poke<float>(b, topk_scales, 0.0f); });
  add("top-k bad value code", topk,
      [&](std::string& b) { b[topk_scales + 4 + 9] = static_cast<char>(0x80); });
  add("top-k index and value both bad", topk, [&](std::string& b) {
    Poke<uint32_t>(b, 32, 5000);
    b[topk_scales + 4] = static_cast<char>(0x80);
  });
  // A -0 sign magnitude is valid: decodes to -0 / +0.
  add("valid: -0 sign magnitude", sign,
      [&](std::string& b) { Poke<float>(b, scales + 4, -0.0f); });

  {
    BlockHeader empty;  // a top-k block that keeps nothing: all zeros
    empty.codec = CodecKind::kTopK;
    empty.element_count = n;
    empty.entry_count = 0;
    std::string block(kBlockHeaderBytes, '\0');
    WriteHeader(empty, block.data());
    cases.push_back({"valid: top-k keeping nothing", block});
  }

  for (const Case& c : cases) {
    CAPTURE(c.what);
    RequireSameDecode(c.block, n);
  }
  // A valid block of another length.
  RequireSameDecode(
      CpuBlock(Values(Shape::kNormal, n - 1, 1), options(CodecKind::kInt8)), n);
}

TEST_CASE("device decoding matches the CPU on randomly corrupted payloads",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  std::mt19937_64 rng(77);
  const uint64_t n = 1000;
  const std::vector<float> v = Values(Shape::kNormal, n, 2);
  std::vector<CodecOptions> all;
  for (CodecKind codec : kBlockCodecs) {
    all.push_back(Options(codec, 64, Rounding::kNearest, 0));
  }
  for (CodecKind values : kValueCodecs) {
    CodecOptions o = Options(CodecKind::kTopK, 16, Rounding::kNearest, 0);
    o.topk_values = values;
    o.topk_count = 40;
    all.push_back(o);
  }
  int refused = 0;
  for (const CodecOptions& o : all) {
    const std::string clean = CpuBlock(v, o);
    const size_t payload = clean.size() - kBlockHeaderBytes;
    for (int trial = 0; trial < 60; ++trial) {
      std::string block = clean;
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        block[kBlockHeaderBytes + rng() % payload] = static_cast<char>(rng());
      }
      CAPTURE(CodecKindName(o.codec), CodecKindName(o.topk_values), trial);
      RequireSameDecode(block, n);
      refused += CpuDecode(block, n).ok() ? 0 : 1;
    }
  }
  CHECK(refused > 50);  // the corruptions did reach the validation paths
}

// --- one-off forms -------------------------------------------------------------

TEST_CASE("the one-off device functions agree with DeviceCodec",
          "[codec][gpu][cuda]") {
  if (SkipWithoutDevice()) return;
  REQUIRE(cudaSetDevice(0) == cudaSuccess);
  const std::vector<float> v = Values(Shape::kNormal, 777, 8);
  const CodecOptions o = Options(CodecKind::kInt4, 100, Rounding::kStochastic, 3);
  const std::unique_ptr<DeviceMemory> values = ToDevice(v);
  std::string block, cpu;
  REQUIRE(EncodeOnDevice(values->floats(), v.size(), o, 40, &block).ok());
  REQUIRE(EncodeBlock(v, o, 40, &cpu).ok());
  CheckSameBytes(block, cpu);

  DeviceMemory out(sizeof(float) * v.size());
  REQUIRE(DecodeToDevice(block, out.floats(), v.size()).ok());
  CheckSameFloats(FromDevice(out, v.size()), *CpuDecode(cpu, v.size()));

  ErrorFeedback feedback(v.size());
  DeviceMemory residual(sizeof(float) * v.size());
  const std::vector<float> zeros(v.size(), 0.0f);
  residual.Upload(zeros.data(), sizeof(float) * v.size());
  REQUIRE(EncodeWithFeedbackOnDevice(values->floats(), residual.floats(),
                                     v.size(), 0, o, &block)
              .ok());
  REQUIRE(feedback.EncodeRange(v, 0, o, &cpu).ok());
  CheckSameBytes(block, cpu);
  const std::vector<float> want(feedback.residual().begin(),
                                feedback.residual().end());
  CheckSameFloats(FromDevice(residual, v.size()), want);

  CHECK(absl::IsInvalidArgument(
      Codec().Encode(nullptr, 5, o, 0, &block)));
  CHECK(absl::IsInvalidArgument(
      Codec().Encode(values->floats(), kMaxDeviceElements + 1, o, 0, &block)));
}

}  // namespace
}  // namespace taups::cuda
