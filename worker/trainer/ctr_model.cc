#include "worker/trainer/ctr_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {

uint64_t EmbeddingKey(int field, uint32_t id) {
  return Mix64((static_cast<uint64_t>(field) << 32) ^ id ^
               0x43545220656d6200ULL);
}

CtrModel::CtrModel(CtrModelShape shape, MathBackend* backend)
    : shape_(shape), backend_(backend) {}

absl::Status CtrModel::Forward(absl::Span<const float> dense,
                               absl::Span<const float> x, int batch) {
  if (dense.size() != shape_.num_dense_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CTR model expects ", shape_.num_dense_params(),
                     " dense parameters, got ", dense.size()));
  }
  const int in = shape_.input(), hid = shape_.hidden;
  if (batch <= 0 || x.size() != static_cast<size_t>(batch) * in) {
    return absl::InvalidArgumentError(
        absl::StrCat("CTR model: batch ", batch, " needs ",
                     static_cast<size_t>(batch) * in, " inputs, got ", x.size()));
  }
  const float* w1 = dense.data() + shape_.w1_offset();
  const float* b1 = dense.data() + shape_.b1_offset();
  const float* w2 = dense.data() + shape_.w2_offset();
  const float b2 = dense[shape_.b2_offset()];
  hidden_.resize(static_cast<size_t>(batch) * hid);
  logits_.resize(batch);
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kNo, Transpose::kNo, batch, hid,
                                  in, 1.0f, x.data(), in, w1, hid, 0.0f,
                                  hidden_.data(), hid));
  for (int i = 0; i < batch; ++i) {
    float* h = hidden_.data() + static_cast<size_t>(i) * hid;
    float z = b2;
    for (int j = 0; j < hid; ++j) {
      h[j] = std::max(h[j] + b1[j], 0.0f);
      z += h[j] * w2[j];
    }
    logits_[i] = z;
  }
  return absl::OkStatus();
}

absl::Status CtrModel::Predict(absl::Span<const float> dense,
                               absl::Span<const float> x,
                               absl::Span<float> probs) {
  const int batch = static_cast<int>(probs.size());
  RETURN_IF_ERROR(Forward(dense, x, batch));
  for (int i = 0; i < batch; ++i) {
    probs[i] = static_cast<float>(Sigmoid(logits_[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CtrModel::LossAndGradient(
    absl::Span<const float> dense, absl::Span<const float> x,
    absl::Span<const float> labels, absl::Span<float> probs,
    absl::Span<float> dense_grad, absl::Span<float> x_grad) {
  const int batch = static_cast<int>(labels.size());
  if (probs.size() != labels.size() || dense_grad.size() != dense.size() ||
      x_grad.size() != x.size()) {
    return absl::InvalidArgumentError(
        "CTR model: probs/labels or gradient/parameter sizes differ");
  }
  RETURN_IF_ERROR(Forward(dense, x, batch));
  const int in = shape_.input(), hid = shape_.hidden;
  const float* w1 = dense.data() + shape_.w1_offset();
  const float* w2 = dense.data() + shape_.w2_offset();
  float* g_w1 = dense_grad.data() + shape_.w1_offset();
  float* g_b1 = dense_grad.data() + shape_.b1_offset();
  float* g_w2 = dense_grad.data() + shape_.w2_offset();
  float& g_b2 = dense_grad[shape_.b2_offset()];

  // dL/dlogit_i = (p_i - y_i) / batch; backprop through w2 and the ReLU.
  double loss_sum = 0.0;
  dhidden_.resize(static_cast<size_t>(batch) * hid);
  std::fill(g_w2, g_w2 + hid, 0.0f);
  std::fill(g_b1, g_b1 + hid, 0.0f);
  g_b2 = 0.0f;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  for (int i = 0; i < batch; ++i) {
    const float y = labels[i];
    if (y != 0.0f && y != 1.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", y, " at ", i, " is not 0 or 1"));
    }
    loss_sum += LogLossFromLogit(logits_[i], y);
    probs[i] = static_cast<float>(Sigmoid(logits_[i]));
    const float dz = (probs[i] - y) * inv_batch;
    g_b2 += dz;
    const float* h = hidden_.data() + static_cast<size_t>(i) * hid;
    float* dh = dhidden_.data() + static_cast<size_t>(i) * hid;
    for (int j = 0; j < hid; ++j) {
      g_w2[j] += dz * h[j];
      dh[j] = h[j] > 0.0f ? dz * w2[j] : 0.0f;
      g_b1[j] += dh[j];
    }
  }
  // W1 = X^T dH; dX = dH W1^T.
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kYes, Transpose::kNo, in, hid,
                                  batch, 1.0f, x.data(), in, dhidden_.data(),
                                  hid, 0.0f, g_w1, hid));
  RETURN_IF_ERROR(backend_->Sgemm(Transpose::kNo, Transpose::kYes, batch, in,
                                  hid, 1.0f, dhidden_.data(), hid, w1, hid,
                                  0.0f, x_grad.data(), in));
  return loss_sum / batch;
}

std::vector<float> CtrModel::UniformInit(const CtrModelShape& shape,
                                         float scale, uint64_t seed) {
  Rng rng(MixSeed(seed, {0x637472}));
  std::vector<float> params(shape.num_dense_params());
  for (float& p : params) p = rng.UniformSymmetric(scale);
  return params;
}

}  // namespace taups::trainer
