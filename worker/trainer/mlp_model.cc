#include "worker/trainer/mlp_model.h"

#include "worker/trainer/softmax_cross_entropy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {
namespace {

constexpr int kEvalChunk = 1024;

// out[j] = sum_i m[i * cols + j] for a rows x cols matrix.
void ColumnSums(const float* m, int rows, int cols, float* out) {
  std::fill(out, out + cols, 0.0f);
  for (int i = 0; i < rows; ++i) {
    const float* row = m + static_cast<size_t>(i) * cols;
    for (int j = 0; j < cols; ++j) out[j] += row[j];
  }
}

}  // namespace

Mlp::Mlp(MlpShape shape, MathBackend* backend)
    : shape_(shape), backend_(backend) {}

absl::Status Mlp::CheckArgs(absl::Span<const float> params,
                            const uint8_t* labels, int batch) const {
  if (params.size() != shape_.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLP expects ", shape_.num_params(), " parameters, got ",
                     params.size()));
  }
  if (batch <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("batch size ", batch));
  }
  for (int i = 0; i < batch; ++i) {
    if (labels[i] >= shape_.classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label ", labels[i], " of example ", i, " is not below ",
          shape_.classes));
    }
  }
  return absl::OkStatus();
}

absl::Status Mlp::Forward(absl::Span<const float> params, const float* x,
                          const uint8_t* labels, int batch,
                          ClassifierStats& stats) {
  const int in = shape_.input, hid = shape_.hidden, cls = shape_.classes;
  const float* w1 = params.data() + shape_.w1_offset();
  const float* b1 = params.data() + shape_.b1_offset();
  const float* w2 = params.data() + shape_.w2_offset();
  const float* b2 = params.data() + shape_.b2_offset();
  hidden_.resize(static_cast<size_t>(batch) * hid);
  probs_.resize(static_cast<size_t>(batch) * cls);

  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kNo, Transpose::kNo, batch, hid,
                                  in, 1.0f, x, in, w1, hid, 0.0f,
                                  hidden_.data(), hid));
  for (int i = 0; i < batch; ++i) {
    float* h = hidden_.data() + static_cast<size_t>(i) * hid;
    for (int j = 0; j < hid; ++j) h[j] = std::max(h[j] + b1[j], 0.0f);
  }
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kNo, Transpose::kNo, batch, cls,
                                  hid, 1.0f, hidden_.data(), hid, w2, cls,
                                  0.0f, probs_.data(), cls));
  const SoftmaxBatchResult head = SoftmaxCrossEntropyInPlace(
      probs_.data(), b2, labels, batch, cls);
  const double loss_sum = head.loss_sum;
  stats.correct += head.correct;
  const int total = stats.examples + batch;
  stats.mean_loss = (stats.mean_loss * stats.examples + loss_sum) / total;
  stats.examples = total;
  return absl::OkStatus();
}

absl::StatusOr<ClassifierStats> Mlp::LossAndGradient(
    absl::Span<const float> params, const float* x, const uint8_t* labels,
    int batch, absl::Span<float> grad) {
  RETURN_IF_ERROR(CheckArgs(params, labels, batch));
  if (grad.size() != shape_.num_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLP gradient needs ", shape_.num_params(),
                     " floats, got ", grad.size()));
  }
  ClassifierStats stats;
  RETURN_IF_ERROR(Forward(params, x, labels, batch, stats));

  const int in = shape_.input, hid = shape_.hidden, cls = shape_.classes;
  const float* w2 = params.data() + shape_.w2_offset();
  float* g_w1 = grad.data() + shape_.w1_offset();
  float* g_b1 = grad.data() + shape_.b1_offset();
  float* g_w2 = grad.data() + shape_.w2_offset();
  float* g_b2 = grad.data() + shape_.b2_offset();

  // dL/dlogits of the batch mean: (softmax - onehot) / batch, in place.
  float* dlogits = probs_.data();
  const float inv_batch = 1.0f / static_cast<float>(batch);
  for (int i = 0; i < batch; ++i) {
    float* d = dlogits + static_cast<size_t>(i) * cls;
    d[labels[i]] -= 1.0f;
    for (int j = 0; j < cls; ++j) d[j] *= inv_batch;
  }
  // W2 += H^T dlogits; b2 = column sums.
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kYes, Transpose::kNo, hid, cls,
                                  batch, 1.0f, hidden_.data(), hid, dlogits,
                                  cls, 0.0f, g_w2, cls));
  ColumnSums(dlogits, batch, cls, g_b2);
  // dH = dlogits W2^T, masked by the ReLU (hidden_ holds post-ReLU values).
  dhidden_.resize(static_cast<size_t>(batch) * hid);
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kNo, Transpose::kYes, batch, hid,
                                  cls, 1.0f, dlogits, cls, w2, cls, 0.0f,
                                  dhidden_.data(), hid));
  for (size_t i = 0; i < dhidden_.size(); ++i) {
    if (hidden_[i] <= 0.0f) dhidden_[i] = 0.0f;
  }
  // W1 = X^T dH; b1 = column sums.
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kYes, Transpose::kNo, in, hid,
                                  batch, 1.0f, x, in, dhidden_.data(), hid,
                                  0.0f, g_w1, hid));
  ColumnSums(dhidden_.data(), batch, hid, g_b1);
  return stats;
}

absl::StatusOr<ClassifierStats> Mlp::Evaluate(absl::Span<const float> params,
                                              const float* x,
                                              const uint8_t* labels, int n) {
  RETURN_IF_ERROR(CheckArgs(params, labels, n));
  ClassifierStats stats;
  for (int start = 0; start < n; start += kEvalChunk) {
    const int count = std::min(kEvalChunk, n - start);
    RETURN_IF_ERROR(Forward(params,
                            x + static_cast<size_t>(start) * shape_.input,
                            labels + start, count, stats));
  }
  return stats;
}

std::vector<float> Mlp::UniformInit(const MlpShape& shape, float scale,
                                    uint64_t seed) {
  Rng rng(MixSeed(seed, {0x6d6c70}));
  std::vector<float> params(shape.num_params());
  for (float& p : params) p = rng.UniformSymmetric(scale);
  return params;
}

}  // namespace taups::trainer
