// Histogram: counts of values in fixed buckets, with count, sum, max and
// percentile estimates. Integer-valued data such as tau gets exact
// percentiles from unit buckets (IntegerBounds).
//
// Thread-compatible: callers synchronize.
#ifndef TAUPS_COMMON_HISTOGRAM_H_
#define TAUPS_COMMON_HISTOGRAM_H_

#include <cstdint>
#include <vector>

namespace taups {

class Histogram {
 public:
  // bounds must be increasing; bucket i counts values in (bounds[i-1],
  // bounds[i]]; one more bucket counts values above the last bound.
  explicit Histogram(std::vector<double> bounds);

  // 0, 1, 2, ..., max: one bucket per integer.
  static std::vector<double> IntegerBounds(int max);
  // start, start*factor, ... while <= limit.
  static std::vector<double> ExponentialBounds(double start, double factor,
                                               double limit);

  void Add(double value);
  void Merge(const Histogram& other);  // requires identical bounds

  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  double max() const { return max_; }
  double mean() const { return count_ == 0 ? 0.0 : sum_ / count_; }
  // The q-quantile (0 <= q <= 1): the upper bound of the bucket holding it
  // (exact for integer data in unit buckets); the max for the overflow
  // bucket; 0 when empty.
  double Percentile(double q) const;

  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // bounds_.size() + 1
  uint64_t count_ = 0;
  double sum_ = 0.0;
  double max_ = 0.0;
};

}  // namespace taups

#endif  // TAUPS_COMMON_HISTOGRAM_H_
