#include "common/vector_math.h"

#include <cstdint>
#include <cstring>

#include <atomic>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TAUPS_MAX_ABS_AVX2 1
#endif

#include "common/vector_math_testing.h"

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

// A vector scan's answer: the maxima its `lanes` hold for the first `whole`
// floats, with `tail_scan` over the rest (fewer than one loop step).
template <bool kCopy>
float WithTail(const int32_t* lanes, size_t lane_count,
               const char* __restrict src, char* __restrict dst, size_t whole,
               size_t n,
               float (*tail_scan)(const char* __restrict, char* __restrict,
                                  size_t)) {
  int32_t max_bits = 0;
  for (size_t k = 0; k < lane_count; ++k) {
    max_bits = lanes[k] > max_bits ? lanes[k] : max_bits;
  }
  const float head = FromMaxBits(max_bits);
  const float tail = tail_scan(src + 4 * whole,
                               kCopy ? dst + 4 * whole : nullptr, n - whole);
  return head > tail ? head : tail;  // never NaN
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
  return WithTail<kCopy>(lanes, 16, src, dst, whole, n,
                         &PortableScanMaxAbs<kCopy>);
}
#else
template <bool kCopy>
float ScanMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  return PortableScanMaxAbs<kCopy>(src, dst, n);
}
#endif

#if defined(TAUPS_MAX_ABS_AVX2)
// The same scan in AVX2, for CPUs that have it (chosen at run time, so the
// build still runs on any x86-64): eight lanes a register and a real signed
// max (vpmaxsd), about 3x the SSE2 loop's speed on data in cache and 2x on
// data from memory, where the SSE2 loop was bound by its compare-and-select.
// The integer max is exact, so the answer is the same bits.
// One group of eight at byte `at`: copied when kCopy, then folded into
// `max`.
template <bool kCopy>
__attribute__((target("avx2"), always_inline)) inline __m256i Fold8(
    const char* src, char* dst, size_t at, __m256i magnitude, __m256i max) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + at));
  if constexpr (kCopy) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + at), v);
  }
  return _mm256_max_epi32(max, _mm256_and_si256(v, magnitude));
}

template <bool kCopy>
__attribute__((target("avx2"))) float Avx2ScanMaxAbs(
    const char* __restrict src, char* __restrict dst, size_t n) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  // Four named maxima, so that they stay in registers.
  __m256i m0 = _mm256_setzero_si256(), m1 = m0, m2 = m0, m3 = m0;
  const size_t whole = n - n % 32;
  for (size_t i = 0; i < whole; i += 32) {
    m0 = Fold8<kCopy>(src, dst, 4 * i, magnitude, m0);
    m1 = Fold8<kCopy>(src, dst, 4 * i + 32, magnitude, m1);
    m2 = Fold8<kCopy>(src, dst, 4 * i + 64, magnitude, m2);
    m3 = Fold8<kCopy>(src, dst, 4 * i + 96, magnitude, m3);
  }
  const __m256i all =
      _mm256_max_epi32(_mm256_max_epi32(m0, m1), _mm256_max_epi32(m2, m3));
  const __m128i half = _mm_max_epi32(_mm256_castsi256_si128(all),
                                     _mm256_extracti128_si256(all, 1));
  int32_t lanes[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(lanes), half);
  // Back to SSE state before any SSE code runs: GCC did not insert this
  // here, and SSE code after the 256-bit registers' upper halves were left
  // dirty ran 3x slower (an SGD step right after the scan,
  // payload_receive_bench).
  _mm256_zeroupper();
  return WithTail<kCopy>(lanes, 4, src, dst, whole, n, &ScanMaxAbs<kCopy>);
}
#endif

std::atomic<bool> narrow_max_abs_for_testing{false};

// ScanMaxAbs in the widest form this CPU runs.
template <bool kCopy>
float WidestScanMaxAbs(const char* __restrict src, char* __restrict dst,
                       size_t n) {
#if defined(TAUPS_MAX_ABS_AVX2)
  static const bool has_avx2 = __builtin_cpu_supports("avx2");
  if (has_avx2 && !narrow_max_abs_for_testing.load(std::memory_order_relaxed)) {
    return Avx2ScanMaxAbs<kCopy>(src, dst, n);
  }
#endif
  return ScanMaxAbs<kCopy>(src, dst, n);
}

}  // namespace

void NarrowMaxAbsForTesting(bool narrow) {
  narrow_max_abs_for_testing.store(narrow, std::memory_order_relaxed);
}

bool MaxAbsUsesAvx2() {
#if defined(TAUPS_MAX_ABS_AVX2)
  return __builtin_cpu_supports("avx2") &&
         !narrow_max_abs_for_testing.load(std::memory_order_relaxed);
#else
  return false;
#endif
}

float MaxAbs(absl::Span<const float> values) {
  return WidestScanMaxAbs<false>(reinterpret_cast<const char*>(values.data()),
                                 nullptr, values.size());
}

float MaxAbsOfBytes(const char* src, size_t n) {
  return WidestScanMaxAbs<false>(src, nullptr, n);
}

float CopyMaxAbs(const char* __restrict src, char* __restrict dst, size_t n) {
  return WidestScanMaxAbs<true>(src, dst, n);
}

}  // namespace taups
