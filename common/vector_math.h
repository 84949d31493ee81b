// Small numeric helpers on float spans, written so the compiler can vectorize
// them (independent partial sums instead of one serial accumulator).
#ifndef TAUPS_COMMON_VECTOR_MATH_H_
#define TAUPS_COMMON_VECTOR_MATH_H_

#include <cstddef>

#include "absl/types/span.h"

namespace taups {

// Sum of squares, accumulated in double.
double SquaredNorm(absl::Span<const float> values);

// Whether no value is NaN or infinite; whether no a[i] + b[i] is (a and b of
// equal size). Branch-free scans, about as fast as reading the memory.
bool AllFinite(absl::Span<const float> values);
bool AllSumsFinite(absl::Span<const float> a, absl::Span<const float> b);

// The largest |value|, or +infinity when any value is NaN or infinite (so one
// branch-free scan answers both "finite?" and "how large?"); 0 when empty.
float MaxAbs(absl::Span<const float> values);

// MaxAbs of the `n` floats whose little-endian bytes start at `src`, which
// needs no alignment (a tensor inside a received message).
float MaxAbsOfBytes(const char* src, size_t n);

// Copies the `n` floats' bytes at `src` to `dst` (any alignment; the ranges
// must not overlap) and returns MaxAbs of them, computed in the same pass
// over the bytes: a received tensor gathered and measured in one read.
float CopyMaxAbs(const char* __restrict src, char* __restrict dst, size_t n);

}  // namespace taups

#endif  // TAUPS_COMMON_VECTOR_MATH_H_
