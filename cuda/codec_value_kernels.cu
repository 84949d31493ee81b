// Value-payload kernels. Compiled with --fmad=false (cuda/CMakeLists.txt):
// no multiply-add may be fused, or the device would round differently from
// the CPU. One thread per element except where noted; packed codes are put
// together across a warp (shuffles, or a ballot for sign bits) and written as
// 32-bit words, with the block's last, partial word written byte by byte.
#include "cuda/codec_value_kernels.h"

#include "common/codec_math.h"

namespace taups::cuda {
namespace {

namespace cm = codec_math;

constexpr uint32_t kThreads = 256;
constexpr unsigned kFullMask = 0xffffffffu;

uint32_t CeilDiv(uint64_t a, uint64_t b) {
  return static_cast<uint32_t>((a + b - 1) / b);
}

uint32_t Blocks(uint64_t threads) { return CeilDiv(threads, kThreads); }

__device__ __forceinline__ uint32_t GlobalThread() {
  return blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ float SourceAt(const ValueSource& source,
                                          uint32_t i) {
  return source.b != nullptr ? cm::FeedbackSum(source.a[i], source.b[i])
                             : source.a[i];
}

// Word `w` of a packed code area of `bytes` bytes.
__device__ __forceinline__ void StoreWord(uint8_t* area, uint32_t w,
                                          uint32_t word, uint32_t bytes) {
  const uint32_t first = 4 * w;
  if (first + 4 <= bytes) {
    reinterpret_cast<uint32_t*>(area)[w] = word;
    return;
  }
  for (uint32_t j = first; j < bytes; ++j) {
    area[j] = static_cast<uint8_t>(word >> (8 * (j - first)));
  }
}

__device__ __forceinline__ uint32_t WarpMax(uint32_t value) {
  for (int offset = 16; offset > 0; offset /= 2) {
    value = max(value, __shfl_xor_sync(kFullMask, value, offset));
  }
  return value;
}

// --- encode ----------------------------------------------------------------

__global__ void FloatKernel(ValueSource source, uint32_t m, float* out,
                            float* residual) {
  const uint32_t i = GlobalThread();
  if (i >= m) return;
  const float x = SourceAt(source, i);
  out[i] = x;
  if (residual != nullptr) residual[i] = x - x;
}

template <bool kHalf>
__global__ void HalfKernel(ValueSource source, uint32_t m, uint16_t* out,
                           float* residual) {
  const uint32_t i = GlobalThread();
  if (i >= m) return;
  const float x = SourceAt(source, i);
  const uint16_t h = kHalf ? cm::FloatToHalf(x) : cm::FloatToBf16(x);
  out[i] = h;
  if (residual != nullptr) {
    residual[i] = x - (kHalf ? cm::HalfToFloat(h) : cm::Bf16ToFloat(h));
  }
}

// Largest magnitude per bucket, kept as float bits (which order like the
// values for non-negative floats), and the lowest non-finite index. A warp
// reads a tile of 256 consecutive values; a tile inside one bucket is
// reduced in the warp and merged with one atomicMax, other tiles merge each
// value. A maximum is exact in any order.
constexpr uint32_t kScanPerLane = 8;
constexpr uint32_t kScanTile = 32 * kScanPerLane;

__global__ void ScanBucketsKernel(ValueSource source, uint32_t m,
                                  uint32_t bucket, uint32_t* bucket_max,
                                  unsigned long long* first_bad) {
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t tile = (static_cast<uint64_t>(blockIdx.x) * blockDim.x +
                         threadIdx.x) / 32;
  const uint64_t begin = tile * kScanTile;
  if (begin >= m) return;  // the same for the whole warp
  const uint64_t last = min(begin + kScanTile, static_cast<uint64_t>(m)) - 1;
  const bool one_bucket = begin / bucket == last / bucket;
  uint32_t lane_max = 0;
  for (uint32_t k = 0; k < kScanPerLane; ++k) {
    const uint64_t i = begin + k * 32 + lane;
    if (i >= m) break;
    const uint32_t bits =
        cm::FloatBits(SourceAt(source, static_cast<uint32_t>(i))) & 0x7fffffffu;
    if (bits >= 0x7f800000u) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    } else if (one_bucket) {
      lane_max = max(lane_max, bits);
    } else if (bits != 0) {
      atomicMax(&bucket_max[static_cast<uint32_t>(i) / bucket], bits);
    }
  }
  if (one_bucket) {
    const uint32_t warp_max = WarpMax(lane_max);
    if (lane == 0 && warp_max != 0) {
      atomicMax(&bucket_max[static_cast<uint32_t>(begin) / bucket], warp_max);
    }
  }
}

// Steps, levels and packed codes; the first thread of a bucket writes its
// step. Codes of (32 / bits) consecutive elements form one word.
template <int kLevels>
__global__ void QuantizeKernel(ValueSource source, uint32_t m, uint32_t bucket,
                               bool stochastic, uint64_t seed,
                               uint64_t index_base,
                               const uint32_t* bucket_max, float* steps,
                               uint8_t* codes, uint32_t code_bytes,
                               float* residual,
                               const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;  // the same for every thread
  constexpr int kBits = kLevels == 127 ? 8 : (kLevels == 7 ? 4 : 2);
  constexpr uint32_t kPerWord = 32 / kBits;
  const uint32_t i = GlobalThread();
  uint32_t word = 0;
  if (i < m) {
    const uint32_t b = i / bucket;
    const float step = cm::StepFor(cm::BitsFloat(bucket_max[b]), kLevels);
    if (i % bucket == 0) steps[b] = step;
    const float x = SourceAt(source, i);
    const float u = stochastic ? cm::UniformAt(seed, index_base + i) : 0.0f;
    const int level = cm::QuantizeLevel(x, step, kLevels, stochastic, u);
    word = cm::CodeOfLevel(level, kLevels) << ((i % kPerWord) * kBits);
    if (residual != nullptr) {
      residual[i] = x - cm::DequantizeLevel(level, step);
    }
  }
  for (uint32_t offset = 1; offset < kPerWord; offset *= 2) {
    word |= __shfl_xor_sync(kFullMask, word, offset);
  }
  if (i % kPerWord == 0) StoreWord(codes, i / kPerWord, word, code_bytes);
}

// One thread per bucket sums |x| in double in element order, as the CPU
// does, so the magnitude is bit-identical.
__global__ void SignMagnitudeKernel(ValueSource source, uint32_t m,
                                    uint32_t bucket, uint32_t buckets,
                                    float* magnitudes,
                                    unsigned long long* first_bad) {
  const uint32_t b = GlobalThread();
  if (b >= buckets) return;
  const uint32_t begin = b * bucket;
  const uint32_t end = min(m, begin + bucket);
  double l1 = 0.0;
  for (uint32_t i = begin; i < end; ++i) {
    const float x = SourceAt(source, i);
    if (!cm::IsFinite(x)) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
      return;
    }
    l1 += fabs(static_cast<double>(x));
  }
  magnitudes[b] = static_cast<float>(l1 / static_cast<double>(end - begin));
}

__global__ void SignBitsKernel(ValueSource source, uint32_t m, uint32_t bucket,
                               const float* magnitudes, uint8_t* bits,
                               uint32_t bit_bytes, float* residual,
                               const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;  // the same for every thread
  const uint32_t i = GlobalThread();
  bool negative = false;
  if (i < m) {
    const float x = SourceAt(source, i);
    negative = cm::SignBitOf(x);
    if (residual != nullptr) {
      residual[i] = x - cm::SignValue(negative, magnitudes[i / bucket]);
    }
  }
  const uint32_t word = __ballot_sync(kFullMask, negative);
  if (i % 32 == 0) StoreWord(bits, i / 32, word, bit_bytes);
}

// --- decode ----------------------------------------------------------------

template <bool kHalf>
__global__ void HalfDecodeKernel(const uint16_t* in, uint32_t m, float* out) {
  const uint32_t i = GlobalThread();
  if (i >= m) return;
  out[i] = kHalf ? cm::HalfToFloat(in[i]) : cm::Bf16ToFloat(in[i]);
}

template <int kLevels>
__global__ void DequantizeKernel(const float* steps, const uint8_t* codes,
                                 uint32_t m, uint32_t bucket, float* out,
                                 uint32_t* error) {
  constexpr int kBits = kLevels == 127 ? 8 : (kLevels == 7 ? 4 : 2);
  constexpr uint32_t kPerByte = 8 / kBits;
  constexpr uint32_t kMask = (1u << kBits) - 1u;
  const uint32_t i = GlobalThread();
  if (i >= m) return;
  const float step = steps[i / bucket];
  if (i % bucket == 0 && !cm::IsValidStep(step)) *error = 1;
  const uint32_t code = (codes[i / kPerByte] >> ((i % kPerByte) * kBits)) & kMask;
  const int level = cm::LevelOfCode(code, kLevels);
  if (level < -kLevels || level > kLevels) *error = 1;
  out[i] = cm::DequantizeLevel(level, step);
  if (i == m - 1 && m % kPerByte != 0 &&
      (codes[m / kPerByte] >> ((m % kPerByte) * kBits)) != 0) {
    *error = 1;
  }
}

__global__ void SignDecodeKernel(const float* magnitudes, const uint8_t* bits,
                                 uint32_t m, uint32_t bucket, float* out,
                                 uint32_t* error) {
  const uint32_t i = GlobalThread();
  if (i >= m) return;
  const float magnitude = magnitudes[i / bucket];
  if (i % bucket == 0 && !cm::IsValidSignMagnitude(magnitude)) *error = 1;
  out[i] = cm::SignValue(((bits[i / 8] >> (i % 8)) & 1u) != 0, magnitude);
  if (i == m - 1 && m % 8 != 0 && (bits[m / 8] >> (m % 8)) != 0) *error = 1;
}

template <int kLevels>
cudaError_t LaunchQuantize(ValueSource source, uint32_t m, uint32_t bucket,
                           bool stochastic, uint64_t seed, uint64_t index_base,
                           uint8_t* payload, float* residual,
                           uint32_t* bucket_max, unsigned long long* first_bad,
                           cudaStream_t stream) {
  constexpr uint32_t kPerByte = kLevels == 127 ? 1 : (kLevels == 7 ? 2 : 4);
  const uint32_t buckets = CeilDiv(m, bucket);
  const cudaError_t cleared =
      cudaMemsetAsync(bucket_max, 0, sizeof(uint32_t) * buckets, stream);
  if (cleared != cudaSuccess) return cleared;
  ScanBucketsKernel<<<CeilDiv(m, kThreads / 32 * kScanTile), kThreads, 0,
                      stream>>>(source, m, bucket, bucket_max, first_bad);
  QuantizeKernel<kLevels><<<Blocks(m), kThreads, 0, stream>>>(
      source, m, bucket, stochastic, seed, index_base, bucket_max,
      reinterpret_cast<float*>(payload), payload + 4ull * buckets,
      CeilDiv(m, kPerByte), residual, first_bad);
  return cudaGetLastError();
}

template <int kLevels>
void LaunchDequantize(const uint8_t* payload, uint32_t m, uint32_t bucket,
                      float* out, uint32_t* error, cudaStream_t stream) {
  const uint32_t buckets = CeilDiv(m, bucket);
  DequantizeKernel<kLevels><<<Blocks(m), kThreads, 0, stream>>>(
      reinterpret_cast<const float*>(payload), payload + 4ull * buckets, m,
      bucket, out, error);
}

}  // namespace

cudaError_t EnqueueEncodeValues(ValueSource source, uint32_t m,
                                CodecKind codec, uint32_t bucket,
                                bool stochastic, uint64_t seed,
                                uint64_t index_base, uint8_t* payload,
                                float* residual, uint32_t* bucket_max,
                                unsigned long long* first_bad,
                                cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  switch (codec) {
    case CodecKind::kNone:
      if (source.b == nullptr && residual == nullptr) {
        return cudaMemcpyAsync(payload, source.a, sizeof(float) * m,
                               cudaMemcpyDeviceToDevice, stream);
      }
      FloatKernel<<<Blocks(m), kThreads, 0, stream>>>(
          source, m, reinterpret_cast<float*>(payload), residual);
      break;
    case CodecKind::kFp16:
      HalfKernel<true><<<Blocks(m), kThreads, 0, stream>>>(
          source, m, reinterpret_cast<uint16_t*>(payload), residual);
      break;
    case CodecKind::kBf16:
      HalfKernel<false><<<Blocks(m), kThreads, 0, stream>>>(
          source, m, reinterpret_cast<uint16_t*>(payload), residual);
      break;
    case CodecKind::kInt8:
      return LaunchQuantize<127>(source, m, bucket, stochastic, seed, index_base,
                          payload, residual, bucket_max, first_bad, stream);
    case CodecKind::kInt4:
      return LaunchQuantize<7>(source, m, bucket, stochastic, seed, index_base,
                        payload, residual, bucket_max, first_bad, stream);
    case CodecKind::kInt2:
      return LaunchQuantize<1>(source, m, bucket, stochastic, seed, index_base,
                        payload, residual, bucket_max, first_bad, stream);
    case CodecKind::kSign: {
      const uint32_t buckets = CeilDiv(m, bucket);
      float* magnitudes = reinterpret_cast<float*>(payload);
      SignMagnitudeKernel<<<Blocks(buckets), kThreads, 0, stream>>>(
          source, m, bucket, buckets, magnitudes, first_bad);
      SignBitsKernel<<<Blocks(m), kThreads, 0, stream>>>(
          source, m, bucket, magnitudes, payload + 4ull * buckets,
          CeilDiv(m, 8), residual, first_bad);
      break;
    }
    case CodecKind::kTopK:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t EnqueueDecodeValues(const uint8_t* payload, uint32_t m,
                                CodecKind codec, uint32_t bucket, float* out,
                                uint32_t* error, cudaStream_t stream) {
  if (m == 0) return cudaSuccess;
  switch (codec) {
    case CodecKind::kNone:
      return cudaMemcpyAsync(out, payload, sizeof(float) * m,
                             cudaMemcpyDeviceToDevice, stream);
    case CodecKind::kFp16:
      HalfDecodeKernel<true><<<Blocks(m), kThreads, 0, stream>>>(
          reinterpret_cast<const uint16_t*>(payload), m, out);
      break;
    case CodecKind::kBf16:
      HalfDecodeKernel<false><<<Blocks(m), kThreads, 0, stream>>>(
          reinterpret_cast<const uint16_t*>(payload), m, out);
      break;
    case CodecKind::kInt8:
      LaunchDequantize<127>(payload, m, bucket, out, error, stream);
      break;
    case CodecKind::kInt4:
      LaunchDequantize<7>(payload, m, bucket, out, error, stream);
      break;
    case CodecKind::kInt2:
      LaunchDequantize<1>(payload, m, bucket, out, error, stream);
      break;
    case CodecKind::kSign: {
      const uint32_t buckets = CeilDiv(m, bucket);
      SignDecodeKernel<<<Blocks(m), kThreads, 0, stream>>>(
          reinterpret_cast<const float*>(payload), payload + 4ull * buckets,
          m, bucket, out, error);
      break;
    }
    case CodecKind::kTopK:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace taups::cuda
