// Per-element codec arithmetic, written once for the CPU codecs (common/)
// and the CUDA kernels (cuda/): both include this header, so the two produce
// identical bytes for every deterministic mode and for stochastic rounding
// with the same seed.
//
// Rules that keep host and device bit-identical:
//   - only IEEE-exact operations: +, -, *, / on float, rintf, floorf, fabsf,
//     integer arithmetic; no expression the compiler could fuse into an FMA
//     (the CUDA codec sources are compiled with --fmad=false as well);
//   - scales are computed from exact quantities (a maximum is exact; the
//     sign codec's L1 norm is summed in double in element order by one
//     thread per bucket).
//
// Header-only; no state.
#ifndef TAUPS_COMMON_CODEC_MATH_H_
#define TAUPS_COMMON_CODEC_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define TAUPS_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TAUPS_HOST_DEVICE inline
#endif

namespace taups::codec_math {

TAUPS_HOST_DEVICE uint32_t FloatBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

TAUPS_HOST_DEVICE float BitsFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// What error feedback encodes: gradient + residual. A NaN sum becomes the
// one quiet NaN 0x7fc00000, because a CPU's add keeps an operand's NaN
// payload while a GPU's produces its own canonical NaN, and blocks that
// carry the NaN (fp32, fp16, bf16) must match byte for byte.
TAUPS_HOST_DEVICE float FeedbackSum(float gradient, float residual) {
  const float sum = gradient + residual;
  return sum != sum ? BitsFloat(0x7fc00000u) : sum;
}

// float32 -> bfloat16, round to nearest even; NaN stays a quiet NaN.
TAUPS_HOST_DEVICE uint16_t FloatToBf16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

TAUPS_HOST_DEVICE float Bf16ToFloat(uint16_t h) {
  return BitsFloat(static_cast<uint32_t>(h) << 16);
}

// float32 -> IEEE binary16, round to nearest even, overflow to infinity,
// subnormals kept; NaN stays a quiet NaN.
TAUPS_HOST_DEVICE uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {  // below the smallest normal half (2^-14)
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exponent;  // 14..24
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  // Normal: rebias the exponent (127 -> 15) and round 13 mantissa bits off.
  const uint32_t rebased = abs - 0x38000000u;
  const uint32_t rounding = 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rebased + rounding) >> 13));
}

TAUPS_HOST_DEVICE float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) {
    return BitsFloat(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  return BitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// A uniform draw in [0, 1) for element `index` under `seed`: a stateless
// hash (splitmix64's finalizer), so any thread can draw any element's value.
TAUPS_HOST_DEVICE float UniformAt(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);  // 24 bits
}

// The step of a bucket whose largest magnitude is `max_abs`, for an integer
// codec with `levels` levels each side. An all-zero bucket gets step 1 (every
// level is then 0), so a valid block never carries a zero step.
TAUPS_HOST_DEVICE float StepFor(float max_abs, int levels) {
  if (!(max_abs > 0.0f)) return 1.0f;
  const float step = max_abs / static_cast<float>(levels);
  return step > 0.0f ? step : 1.0f;  // max_abs below levels * FLT_TRUE_MIN
}

// The level of `x` in a bucket of step `step`, clamped to [-levels, levels].
// Nearest: round half to even. Stochastic: floor(x / step + u), u in [0, 1).
TAUPS_HOST_DEVICE int QuantizeLevel(float x, float step, int levels,
                                    bool stochastic, float u) {
  const float scaled = x / step;
  const float rounded = stochastic ? floorf(scaled + u) : rintf(scaled);
  const float limit = static_cast<float>(levels);
  if (!(rounded <= limit)) return rounded < -limit ? -levels : levels;
  if (rounded < -limit) return -levels;
  return static_cast<int>(rounded);
}

TAUPS_HOST_DEVICE float DequantizeLevel(int level, float step) {
  return static_cast<float>(level) * step;
}

// Packed code of a level: int8 stores the level as a signed byte; int4
// stores level + 8 in a nibble; int2 stores level + 1 in two bits.
TAUPS_HOST_DEVICE uint32_t CodeOfLevel(int level, int levels) {
  return levels == 127 ? static_cast<uint32_t>(static_cast<uint8_t>(
                             static_cast<int8_t>(level)))
                       : static_cast<uint32_t>(level + (levels == 7 ? 8 : 1));
}

TAUPS_HOST_DEVICE int LevelOfCode(uint32_t code, int levels) {
  if (levels == 127) return static_cast<int8_t>(static_cast<uint8_t>(code));
  return static_cast<int>(code) - (levels == 7 ? 8 : 1);
}

// Bits per packed code for an integer codec (8, 4, 2).
TAUPS_HOST_DEVICE int BitsPerCode(int levels) {
  return levels == 127 ? 8 : (levels == 7 ? 4 : 2);
}

// Top-k order: true when element (a, ia) ranks above (b, ib): larger
// magnitude first, the lower index first among equal magnitudes. NaN ranks
// above everything (so a poisoned gradient is not silently dropped).
TAUPS_HOST_DEVICE bool RanksAbove(float a, uint32_t ia, float b, uint32_t ib) {
  const float ma = fabsf(a), mb = fabsf(b);
  const bool na = ma != ma, nb = mb != mb;
  if (na != nb) return na;
  if (!na && ma != mb) return ma > mb;
  return ia < ib;
}

// The same order as an unsigned sort key, for radix sorts: (a, ia) ranks
// above (b, ib) exactly when (TopKSortKey(a), ia) < (TopKSortKey(b), ib).
// Every NaN maps to 0; other values to the complement of their magnitude's
// bits, which for non-negative floats order like the values themselves.
TAUPS_HOST_DEVICE uint32_t TopKSortKey(float x) {
  const uint32_t magnitude = FloatBits(x) & 0x7fffffffu;
  return magnitude > 0x7f800000u ? 0u : ~magnitude;
}

// Neither NaN nor infinite; by bits, so host and device agree.
TAUPS_HOST_DEVICE bool IsFinite(float x) {
  return (FloatBits(x) & 0x7fffffffu) < 0x7f800000u;
}

// What a decoder accepts as the step of an integer-codec bucket, and as the
// magnitude of a sign bucket (-0 included, as `magnitude < 0` is false).
TAUPS_HOST_DEVICE bool IsValidStep(float step) {
  return IsFinite(step) && step > 0.0f;
}
TAUPS_HOST_DEVICE bool IsValidSignMagnitude(float magnitude) {
  return IsFinite(magnitude) && !(magnitude < 0.0f);
}

// The sign codec's bit: set for negative non-zero values (-0 sends +).
TAUPS_HOST_DEVICE bool SignBitOf(float x) {
  return (FloatBits(x) >> 31) != 0u && x != 0.0f;
}

TAUPS_HOST_DEVICE float SignValue(bool negative, float magnitude) {
  return negative ? -magnitude : magnitude;
}

}  // namespace taups::codec_math

#endif  // TAUPS_COMMON_CODEC_MATH_H_
