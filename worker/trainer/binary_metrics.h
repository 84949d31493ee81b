// Metrics for binary classifiers: exact ROC AUC and mean log-loss.
//
// Labels are floats equal to 0 or 1. Stateless functions; thread-safe.
#ifndef TAUPS_WORKER_TRAINER_BINARY_METRICS_H_
#define TAUPS_WORKER_TRAINER_BINARY_METRICS_H_

#include <cmath>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace taups::trainer {

// Probabilities are clamped to [kProbEpsilon, 1 - kProbEpsilon] for log-loss,
// so a confident mistake costs at most -log(kProbEpsilon) ~ 16.1.
inline constexpr double kProbEpsilon = 1e-7;

// Exact area under the ROC curve: the probability that a random positive
// scores above a random negative, ties counting one half (Mann-Whitney U with
// average ranks; O(n log n)). INVALID_ARGUMENT for different sizes or a label
// other than 0/1; FAILED_PRECONDITION when only one class is present.
absl::StatusOr<double> Auc(absl::Span<const float> scores,
                           absl::Span<const float> labels);

// Mean of -[y log p + (1 - y) log(1 - p)]. INVALID_ARGUMENT for different or
// zero sizes, a label other than 0/1, or a probability outside [0, 1] or NaN.
absl::StatusOr<double> LogLoss(absl::Span<const float> probs,
                               absl::Span<const float> labels);

// Log-loss of one example given the logit z = log(p / (1 - p)), computed
// without overflow: softplus(z) - y z.
inline double LogLossFromLogit(double z, double y) {
  const double softplus = z > 0 ? z + std::log1p(std::exp(-z))
                                : std::log1p(std::exp(z));
  return softplus - y * z;
}

inline double Sigmoid(double z) {
  return z >= 0 ? 1.0 / (1.0 + std::exp(-z))
                : std::exp(z) / (1.0 + std::exp(z));
}

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_BINARY_METRICS_H_
