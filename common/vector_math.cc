#include "common/vector_math.h"

namespace taups {

double SquaredNorm(absl::Span<const float> values) {
  constexpr size_t kLanes = 8;
  double partial[kLanes] = {};
  const size_t n = values.size();
  const size_t whole = n - n % kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t k = 0; k < kLanes; ++k) {
      const double v = values[i + k];
      partial[k] += v * v;
    }
  }
  double sum = 0.0;
  for (size_t i = whole; i < n; ++i) sum += static_cast<double>(values[i]) * values[i];
  for (double p : partial) sum += p;
  return sum;
}

}  // namespace taups
