#include "worker/trainer/zipf_sampler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace taups::trainer {
namespace {

constexpr double kMaxExponent = 20.0;
// Terms summed one by one before the Euler-Maclaurin tail takes over.
constexpr uint64_t kExactTerms = 10000;

// expm1(t) / t, continuous at 0.
double ExpRatio(double t) {
  return std::abs(t) > 1e-8 ? std::expm1(t) / t : 1.0 + t / 2.0;
}
// log1p(t) / t, continuous at 0.
double LogRatio(double t) {
  return std::abs(t) > 1e-8 ? std::log1p(t) / t : 1.0 - t / 2.0;
}

}  // namespace

absl::StatusOr<ZipfSampler> ZipfSampler::Create(uint64_t n, double s) {
  if (n == 0 || n > kMaxSupport) {
    return absl::InvalidArgumentError(
        absl::StrCat("Zipf support ", n, " outside 1..", kMaxSupport));
  }
  if (!std::isfinite(s) || s <= 0.0 || s > kMaxExponent) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Zipf exponent must be in (0, ", kMaxExponent, "], got ", s));
  }
  return ZipfSampler(n, s);
}

ZipfSampler::ZipfSampler(uint64_t n, double s) : n_(n), s_(s) {
  area_first_ = H(1.5) - 1.0;
  area_last_ = H(static_cast<double>(n) + 0.5);
  squeeze_ = 2.0 - HInverse(H(2.5) - h(2.0));

  // Sum of k^-s: the first terms exactly (smallest last, for accuracy), the
  // rest as integral + end corrections (Euler-Maclaurin, two terms).
  const uint64_t exact = std::min(n, kExactTerms);
  double sum = 0.0;
  for (uint64_t k = exact; k >= 1; --k) sum += h(static_cast<double>(k));
  if (n > exact) {
    const double a = static_cast<double>(exact + 1);
    const double b = static_cast<double>(n);
    const double derivative_a = -s * h(a) / a, derivative_b = -s * h(b) / b;
    sum += (H(b) - H(a)) + (h(a) + h(b)) / 2.0 +
           (derivative_b - derivative_a) / 12.0;
  }
  normalizer_ = sum;
}

double ZipfSampler::h(double x) const { return std::exp(-s_ * std::log(x)); }

double ZipfSampler::H(double x) const {
  // (x^(1-s) - 1) / (1 - s), written to stay accurate near s = 1.
  const double log_x = std::log(x);
  return ExpRatio((1.0 - s_) * log_x) * log_x;
}

double ZipfSampler::HInverse(double y) const {
  // x = (1 + (1 - s) y)^(1 / (1 - s)).
  const double t = std::max((1.0 - s_) * y, -1.0);
  return std::exp(LogRatio(t) * y);
}

uint64_t ZipfSampler::Sample(Rng& rng) const {
  while (true) {
    // u uniform over (area_first_, area_last_]; x its inverse image.
    const double u =
        area_last_ + rng.UniformDouble() * (area_first_ - area_last_);
    const double x = HInverse(u);
    double k = std::floor(x + 0.5);
    k = std::clamp(k, 1.0, static_cast<double>(n_));
    // Accept when u lies in k's slice [H(k + 1/2) - h(k), H(k + 1/2)];
    // the squeeze decides most draws without evaluating H.
    if (k - x <= squeeze_ || u >= H(k + 0.5) - h(k)) {
      return static_cast<uint64_t>(k) - 1;
    }
  }
}

double ZipfSampler::Probability(uint64_t rank) const {
  if (rank >= n_) return 0.0;
  return h(static_cast<double>(rank) + 1.0) / normalizer_;
}

}  // namespace taups::trainer
