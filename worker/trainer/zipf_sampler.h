// Samples ranks from a finite Zipf distribution: P(r) proportional to
// 1 / (r + 1)^s for r in [0, n). Rank 0 is the most frequent.
//
// Inverse-CDF sampling over a precomputed table (n doubles; O(log n) per
// draw). Immutable after Create(); Sample() is const and safe from many
// threads, each with its own Rng.
#ifndef TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_
#define TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {

class ZipfSampler {
 public:
  // Largest support accepted (the CDF table costs 8 bytes per rank).
  static constexpr uint64_t kMaxSupport = uint64_t{1} << 24;

  // INVALID_ARGUMENT unless 1 <= n <= kMaxSupport and s is finite and > 0.
  static absl::StatusOr<ZipfSampler> Create(uint64_t n, double s);

  uint64_t support() const { return cdf_.size(); }
  uint64_t Sample(Rng& rng) const;
  double Probability(uint64_t rank) const;

 private:
  explicit ZipfSampler(std::vector<double> cdf) : cdf_(std::move(cdf)) {}
  std::vector<double> cdf_;  // cdf_[r] = P(rank <= r); cdf_.back() == 1
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_
