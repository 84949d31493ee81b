// Samples ranks from a finite Zipf distribution: P(r) proportional to
// 1 / (r + 1)^s for r in [0, n). Rank 0 is the most frequent.
//
// Rejection-inversion (Hoermann & Derflinger, "Rejection-inversion to
// generate variates from monotone discrete distributions", 1996): a draw
// inverts the integral H of the continuous density x^-s at a uniform point
// and accepts the nearest integer k when the point falls in k's share of the
// area, h(k) = k^-s wide; otherwise it draws again (rarely: the expected
// number of tries is below 1.1 for every n and s here). Exact, O(1) memory
// and O(1) expected time per draw, so supports of millions cost nothing to
// set up. Probability() uses the normalising sum, computed once: exactly
// for small n, with the Euler-Maclaurin formula for the tail of large ones
// (relative error far below 1e-12).
//
// Immutable after Create(); Sample() is const and safe from many threads,
// each with its own Rng.
#ifndef TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_
#define TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {

class ZipfSampler {
 public:
  // Largest support accepted.
  static constexpr uint64_t kMaxSupport = uint64_t{1} << 32;

  // INVALID_ARGUMENT unless 1 <= n <= kMaxSupport and s is finite, > 0 and
  // at most 20.
  static absl::StatusOr<ZipfSampler> Create(uint64_t n, double s);

  uint64_t support() const { return n_; }
  double exponent() const { return s_; }
  uint64_t Sample(Rng& rng) const;
  // P(rank); 0 outside [0, n).
  double Probability(uint64_t rank) const;

 private:
  ZipfSampler(uint64_t n, double s);

  // H(x) = integral of t^-s over [1, x], and its inverse.
  double H(double x) const;
  double HInverse(double y) const;
  double h(double x) const;  // x^-s

  uint64_t n_;
  double s_;
  double area_first_;  // H(1.5) - h(1): where the draws' range starts
  double area_last_;   // H(n + 0.5): where it ends
  double squeeze_;     // k - x below this is accepted without testing
  double normalizer_;  // sum of k^-s over k = 1..n
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_ZIPF_SAMPLER_H_
