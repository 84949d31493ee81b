#include "common/vector_math.h"

#include <cstdint>
#include <cstring>

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

float MaxAbs(absl::Span<const float> values) {
  // On the bit patterns with the sign cleared, integer order is the order of
  // magnitudes, and NaN and infinity are above every finite value. Signed
  // int32 (the cleared sign keeps every pattern non-negative) because SSE2
  // compares signed integers only; 16 independent maxima so the vectorised
  // loop is not bound by one accumulator's latency.
  constexpr size_t kLanes = 16;
  int32_t lanes[kLanes] = {};
  const float* data = values.data();
  const size_t n = values.size();
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      int32_t bits;
      std::memcpy(&bits, data + i + k, sizeof(bits));
      bits &= 0x7fffffff;
      lanes[k] = bits > lanes[k] ? bits : lanes[k];
    }
  }
  int32_t max_bits = 0;
  for (size_t i = whole; i < n; ++i) {
    int32_t bits;
    std::memcpy(&bits, data + i, sizeof(bits));
    bits &= 0x7fffffff;
    max_bits = bits > max_bits ? bits : max_bits;
  }
  for (int32_t lane : lanes) max_bits = lane > max_bits ? lane : max_bits;
  if (max_bits >= 0x7f800000) return __builtin_huge_valf();
  float max;
  std::memcpy(&max, &max_bits, sizeof(max));
  return max;
}

}  // namespace taups
