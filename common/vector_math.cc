#include "common/vector_math.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace taups {
namespace {

// 1 when `x` is NaN or infinite (all exponent bits set), else 0.
inline uint32_t NonFiniteBit(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof(bits));
  return (bits & 0x7f800000u) == 0x7f800000u;
}

}  // namespace

double SquaredNorm(absl::Span<const float> values) {
  constexpr size_t kLanes = 8;
  double partial[kLanes] = {};
  // Raw pointer, not Span::operator[]: a hardened Abseil bounds-checks every
  // index, and the checks keep the loop scalar.
  const float* data = values.data();
  const size_t n = values.size();
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const double v = data[i + k];
      partial[k] += v * v;
    }
  }
  double sum = 0.0;
  for (size_t i = whole; i < n; ++i) sum += static_cast<double>(data[i]) * data[i];
  for (double p : partial) sum += p;
  return sum;
}

bool AllFinite(absl::Span<const float> values) {
  uint32_t non_finite = 0;
  for (float v : values) non_finite |= NonFiniteBit(v);
  return non_finite == 0;
}

bool AllSumsFinite(absl::Span<const float> a, absl::Span<const float> b) {
  const float* x = a.data();
  const float* y = b.data();
  uint32_t non_finite = 0;
  for (size_t i = 0; i < a.size(); ++i) non_finite |= NonFiniteBit(x[i] + y[i]);
  return non_finite == 0;
}

namespace {

// The max bits (sign cleared) as MaxAbs answers them.
float FromMaxBits(int32_t max_bits) {
  if (max_bits >= 0x7f800000) return __builtin_huge_valf();
  float max;
  std::memcpy(&max, &max_bits, sizeof(max));
  return max;
}

// The largest |x| over the `n` little-endian floats at `src` (any byte
// alignment), or +infinity when one is NaN or infinite; with kCopy, also
// writes them to `dst` in the same loop (the bytes read once).
//
// On the bit patterns with the sign cleared, integer order is the order of
// magnitudes, and NaN and infinity are above every finite value. Signed
// int32 (the cleared sign keeps every pattern non-negative) because SSE2
// compares signed integers only; 16 independent maxima so the vectorised
// loop is not bound by one accumulator's latency; no early exit, so the
// loop stays branch-free.
template <bool kCopy>
float PortableScanMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  constexpr size_t kLanes = 16;
  int32_t lanes[kLanes] = {};
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      int32_t bits;
      std::memcpy(&bits, src + 4 * (i + k), sizeof(bits));
      if constexpr (kCopy) std::memcpy(dst + 4 * (i + k), &bits, sizeof(bits));
      bits &= 0x7fffffff;
      lanes[k] = bits > lanes[k] ? bits : lanes[k];
    }
  }
  int32_t max_bits = 0;
  for (size_t i = whole; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, src + 4 * i, sizeof(bits));
    if constexpr (kCopy) std::memcpy(dst + 4 * i, &bits, sizeof(bits));
    bits &= 0x7fffffff;
    max_bits = bits > max_bits ? bits : max_bits;
  }
  for (int32_t lane : lanes) max_bits = lane > max_bits ? lane : max_bits;
  return FromMaxBits(max_bits);
}

#if defined(__SSE2__)
// The same scan in SSE2 (every x86-64 has it), written out because GCC
// keeps the portable loop's 16 maxima in memory: four registers of four
// maxima here, loads and stores unaligned, the max by compare and select
// (SSE2 has no signed 32-bit max). common/CMakeLists.txt stops GCC from
// splitting the copy out of the loop into a memcpy call.
// The group of four at byte `at`: copied when kCopy, then folded into `max`.
template <bool kCopy>
inline __m128i Fold4(const char* src, char* dst, size_t at, __m128i magnitude,
                     __m128i max) {
  __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + at));
  if constexpr (kCopy) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + at), v);
  }
  v = _mm_and_si128(v, magnitude);
  const __m128i above = _mm_cmpgt_epi32(v, max);
  return _mm_or_si128(_mm_and_si128(above, v), _mm_andnot_si128(above, max));
}

template <bool kCopy>
float ScanMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  const __m128i magnitude = _mm_set1_epi32(0x7fffffff);
  // Written out (not an array in a loop) so the maxima stay in registers.
  __m128i m[4] = {_mm_setzero_si128(), _mm_setzero_si128(),
                  _mm_setzero_si128(), _mm_setzero_si128()};
  const size_t whole = n - n % 16;
  for (size_t i = 0; i < whole; i += 16) {
    m[0] = Fold4<kCopy>(src, dst, 4 * i, magnitude, m[0]);
    m[1] = Fold4<kCopy>(src, dst, 4 * i + 16, magnitude, m[1]);
    m[2] = Fold4<kCopy>(src, dst, 4 * i + 32, magnitude, m[2]);
    m[3] = Fold4<kCopy>(src, dst, 4 * i + 48, magnitude, m[3]);
  }
  int32_t lanes[16];
  for (int k = 0; k < 4; ++k) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes + 4 * k), m[k]);
  }
  int32_t max_bits = 0;
  for (int32_t lane : lanes) max_bits = lane > max_bits ? lane : max_bits;
  const float head = FromMaxBits(max_bits);
  const float tail = PortableScanMaxAbs<kCopy>(
      src + 4 * whole, kCopy ? dst + 4 * whole : nullptr, n - whole);
  return head > tail ? head : tail;  // never NaN
}
#else
template <bool kCopy>
float ScanMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  return PortableScanMaxAbs<kCopy>(src, dst, n);
}
#endif

}  // namespace

float MaxAbs(absl::Span<const float> values) {
  return ScanMaxAbs<false>(reinterpret_cast<const char*>(values.data()),
                           nullptr, values.size());
}

float MaxAbsOfBytes(const char* src, size_t n) {
  return ScanMaxAbs<false>(src, nullptr, n);
}

float CopyMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  return ScanMaxAbs<true>(src, dst, n);
}

}  // namespace taups
