#include "worker/trainer/binary_metrics.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"

namespace taups::trainer {
namespace {

absl::Status CheckLabels(absl::Span<const float> values,
                         absl::Span<const float> labels) {
  if (values.size() != labels.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        values.size(), " predictions but ", labels.size(), " labels"));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] != 0.0f && labels[i] != 1.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " at ", i, " is not 0 or 1"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<double> Auc(absl::Span<const float> scores,
                           absl::Span<const float> labels) {
  if (absl::Status s = CheckLabels(scores, labels); !s.ok()) return s;
  const size_t n = scores.size();
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(scores[i])) {
      return absl::InvalidArgumentError(absl::StrCat("score at ", i, " is NaN"));
    }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the (1-based, tie-averaged) ranks of the positives.
  double positive_rank_sum = 0.0;
  double positives = 0.0;
  for (size_t start = 0; start < n;) {
    size_t end = start + 1;
    while (end < n && scores[order[end]] == scores[order[start]]) ++end;
    const double mean_rank = 0.5 * static_cast<double>(start + 1 + end);
    for (size_t i = start; i < end; ++i) {
      if (labels[order[i]] == 1.0f) {
        positive_rank_sum += mean_rank;
        positives += 1.0;
      }
    }
    start = end;
  }
  const double negatives = static_cast<double>(n) - positives;
  if (positives == 0.0 || negatives == 0.0) {
    return absl::FailedPreconditionError(
        "AUC is undefined unless both classes are present");
  }
  const double u = positive_rank_sum - positives * (positives + 1.0) / 2.0;
  return u / (positives * negatives);
}

absl::StatusOr<double> LogLoss(absl::Span<const float> probs,
                               absl::Span<const float> labels) {
  if (absl::Status s = CheckLabels(probs, labels); !s.ok()) return s;
  if (probs.empty()) return absl::InvalidArgumentError("log-loss of nothing");
  double sum = 0.0;
  for (size_t i = 0; i < probs.size(); ++i) {
    const double p = probs[i];
    if (!(p >= 0.0 && p <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("probability ", p, " at ", i, " is outside [0, 1]"));
    }
    const double q = std::clamp(p, kProbEpsilon, 1.0 - kProbEpsilon);
    sum -= labels[i] == 1.0f ? std::log(q) : std::log(1.0 - q);
  }
  return sum / static_cast<double>(probs.size());
}

}  // namespace taups::trainer
