// Small numeric helpers on float spans, written so the compiler can vectorize
// them (independent partial sums instead of one serial accumulator).
#ifndef TAUPS_COMMON_VECTOR_MATH_H_
#define TAUPS_COMMON_VECTOR_MATH_H_

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

}  // namespace taups

#endif  // TAUPS_COMMON_VECTOR_MATH_H_
