#include "common/histogram.h"

#include <algorithm>
#include <cmath>

namespace taups {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> Histogram::IntegerBounds(int max) {
  std::vector<double> bounds;
  for (int i = 0; i <= max; ++i) bounds.push_back(i);
  return bounds;
}

std::vector<double> Histogram::ExponentialBounds(double start, double factor,
                                                 double limit) {
  std::vector<double> bounds;
  for (double b = start; b <= limit; b *= factor) bounds.push_back(b);
  return bounds;
}

void Histogram::Add(double value) {
  const size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  ++counts_[bucket];
  ++count_;
  sum_ += value;
  max_ = count_ == 1 ? value : std::max(max_, value);
}

void Histogram::Merge(const Histogram& other) {
  for (size_t i = 0; i < counts_.size() && i < other.counts_.size(); ++i) {
    counts_[i] += other.counts_[i];
  }
  if (other.count_ > 0) max_ = count_ == 0 ? other.max_ : std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

double Histogram::Percentile(double q) const {
  if (count_ == 0) return 0.0;
  // Rank of the quantile, 1-based: the smallest r with r >= q * count.
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) return i < bounds_.size() ? std::min(bounds_[i], max_) : max_;
  }
  return max_;
}

}  // namespace taups
