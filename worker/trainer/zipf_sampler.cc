#include "worker/trainer/zipf_sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace taups::trainer {

absl::StatusOr<ZipfSampler> ZipfSampler::Create(uint64_t n, double s) {
  if (n == 0 || n > kMaxSupport) {
    return absl::InvalidArgumentError(
        absl::StrCat("Zipf support ", n, " outside 1..", kMaxSupport));
  }
  if (!std::isfinite(s) || s <= 0.0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Zipf exponent must be finite and > 0, got ", s));
  }
  std::vector<double> cdf(n);
  double total = 0.0;
  for (uint64_t r = 0; r < n; ++r) {
    total += std::pow(static_cast<double>(r + 1), -s);
    cdf[r] = total;
  }
  for (double& c : cdf) c /= total;
  cdf.back() = 1.0;
  return ZipfSampler(std::move(cdf));
}

uint64_t ZipfSampler::Sample(Rng& rng) const {
  const double u = rng.UniformDouble();  // [0, 1)
  // First rank whose cdf exceeds u.
  const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
  return std::min<uint64_t>(static_cast<uint64_t>(it - cdf_.begin()),
                            cdf_.size() - 1);
}

double ZipfSampler::Probability(uint64_t rank) const {
  if (rank >= cdf_.size()) return 0.0;
  return rank == 0 ? cdf_[0] : cdf_[rank] - cdf_[rank - 1];
}

}  // namespace taups::trainer
