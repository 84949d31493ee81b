#include "bench/sim/classifier_model.h"

#include "worker/trainer/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups::sim {
namespace {

constexpr int kEvalChunk = 1024;

class MlpModel final : public ClassifierModel {
 public:
  explicit MlpModel(trainer::MathBackend* backend)
      : mlp_(trainer::MlpShape{}, backend) {}
  size_t num_params() const override { return mlp_.shape().num_params(); }
  absl::StatusOr<ClassifierStats> LossAndGradient(
      absl::Span<const float> params, const float* x, const uint8_t* labels,
      int batch, absl::Span<float> grad) override {
    return mlp_.LossAndGradient(params, x, labels, batch, grad);
  }
  absl::StatusOr<ClassifierStats> Evaluate(absl::Span<const float> params,
                                           const float* x,
                                           const uint8_t* labels,
                                           int n) override {
    return mlp_.Evaluate(params, x, labels, n);
  }

 private:
  trainer::Mlp mlp_;
};

}  // namespace

const char* ModelKindName(ModelKind kind) {
  return kind == ModelKind::kMlp ? "mlp" : "softmax";
}

SoftmaxRegression::SoftmaxRegression(int input, int classes,
                                     trainer::MathBackend* backend)
    : input_(input), classes_(classes), backend_(backend) {}

size_t SoftmaxRegression::num_params() const {
  return static_cast<size_t>(input_) * classes_ + classes_;
}

absl::Status SoftmaxRegression::Forward(absl::Span<const float> params,
                                        const float* x, const uint8_t* labels,
                                        int batch, ClassifierStats& stats) {
  if (params.size() != num_params() || batch <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax regression: ", params.size(), " parameters (need ",
        num_params(), "), batch ", batch));
  }
  const int cls = classes_;
  const float* b = params.data() + static_cast<size_t>(input_) * cls;
  probs_.resize(static_cast<size_t>(batch) * cls);
  RETURN_IF_ERROR(backend_->Sgemm(trainer::Transpose::kNo,
                                  trainer::Transpose::kNo, batch, cls, input_,
                                  1.0f, x, input_, params.data(), cls, 0.0f,
                                  probs_.data(), cls));
  for (int i = 0; i < batch; ++i) {
    if (labels[i] >= cls) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", labels[i], " is not below ", cls));
    }
  }
  const trainer::SoftmaxBatchResult head =
      trainer::SoftmaxCrossEntropyInPlace(probs_.data(), b, labels, batch, cls);
  const double loss_sum = head.loss_sum;
  stats.correct += head.correct;
  const int total = stats.examples + batch;
  stats.mean_loss = (stats.mean_loss * stats.examples + loss_sum) / total;
  stats.examples = total;
  return absl::OkStatus();
}

absl::StatusOr<ClassifierStats> SoftmaxRegression::LossAndGradient(
    absl::Span<const float> params, const float* x, const uint8_t* labels,
    int batch, absl::Span<float> grad) {
  if (grad.size() != num_params()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "softmax regression gradient needs ", num_params(), " floats, got ",
        grad.size()));
  }
  ClassifierStats stats;
  RETURN_IF_ERROR(Forward(params, x, labels, batch, stats));
  const int cls = classes_;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  float* g_b = grad.data() + static_cast<size_t>(input_) * cls;
  std::fill(g_b, g_b + cls, 0.0f);
  for (int i = 0; i < batch; ++i) {
    float* d = probs_.data() + static_cast<size_t>(i) * cls;
    d[labels[i]] -= 1.0f;
    for (int j = 0; j < cls; ++j) {
      d[j] *= inv_batch;
      g_b[j] += d[j];
    }
  }
  // dW = X^T dlogits.
  RETURN_IF_ERROR(backend_->Sgemm(trainer::Transpose::kYes,
                                  trainer::Transpose::kNo, input_, cls, batch,
                                  1.0f, x, input_, probs_.data(), cls, 0.0f,
                                  grad.data(), cls));
  return stats;
}

absl::StatusOr<ClassifierStats> SoftmaxRegression::Evaluate(
    absl::Span<const float> params, const float* x, const uint8_t* labels,
    int n) {
  ClassifierStats stats;
  for (int start = 0; start < n; start += kEvalChunk) {
    const int count = std::min(kEvalChunk, n - start);
    RETURN_IF_ERROR(Forward(params, x + static_cast<size_t>(start) * input_,
                            labels + start, count, stats));
  }
  return stats;
}

std::unique_ptr<ClassifierModel> MakeClassifierModel(
    ModelKind kind, trainer::MathBackend* backend) {
  if (kind == ModelKind::kMlp) return std::make_unique<MlpModel>(backend);
  return std::make_unique<SoftmaxRegression>(784, 10, backend);
}

}  // namespace taups::sim
