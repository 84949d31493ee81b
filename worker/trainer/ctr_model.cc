#include "worker/trainer/ctr_model.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "worker/trainer/binary_metrics.h"
#include "worker/trainer/deterministic_rng.h"

namespace taups::trainer {
namespace {

constexpr int kMaxInputs = 64;
constexpr int kMaxEmbeddingDim = 1024;
constexpr size_t kMaxHiddenLayers = 8;

absl::Status CheckRange(const char* name, int value, int max) {
  if (value < 1 || value > max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR model: ", name, " ", value, " outside 1..", max));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<int> CtrModelShape::BottomWidths() const {
  std::vector<int> widths = {num_dense};
  widths.insert(widths.end(), bottom_hidden.begin(), bottom_hidden.end());
  widths.push_back(embedding_dim);
  return widths;
}

std::vector<int> CtrModelShape::TopWidths() const {
  std::vector<int> widths = {interaction().output_width()};
  widths.insert(widths.end(), top_hidden.begin(), top_hidden.end());
  widths.push_back(1);
  return widths;
}

size_t CtrModelShape::top_offset() const {
  return MlpTower::NumParams(BottomWidths());
}

size_t CtrModelShape::num_dense_params() const {
  return top_offset() + MlpTower::NumParams(TopWidths());
}

absl::Status CtrModelShape::Validate() const {
  RETURN_IF_ERROR(CheckRange("num_dense", num_dense, kMaxInputs));
  RETURN_IF_ERROR(CheckRange("num_fields", num_fields, kMaxInputs));
  RETURN_IF_ERROR(CheckRange("embedding_dim", embedding_dim, kMaxEmbeddingDim));
  if (bottom_hidden.size() > kMaxHiddenLayers ||
      top_hidden.size() > kMaxHiddenLayers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR model: at most ", kMaxHiddenLayers, " hidden layers per MLP"));
  }
  RETURN_IF_ERROR(MlpTower::Validate(BottomWidths()));
  return MlpTower::Validate(TopWidths());
}

CtrModel::CtrModel(CtrModelShape shape, MathBackend* backend)
    : shape_(std::move(shape)),
      backend_(backend),
      bottom_(shape_.BottomWidths(), /*relu_on_output=*/true),
      top_(shape_.TopWidths(), /*relu_on_output=*/false) {}

absl::Status CtrModel::Forward(absl::Span<const float> params,
                               absl::Span<const float> features,
                               absl::Span<const float> embeddings, int batch) {
  if (params.size() != shape_.num_dense_params()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CTR model expects ", shape_.num_dense_params(),
                     " dense parameters, got ", params.size()));
  }
  const size_t rows = batch > 0 ? static_cast<size_t>(batch) : 0;
  if (batch <= 0 || features.size() != rows * shape_.num_dense ||
      embeddings.size() != rows * shape_.embedding_width()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CTR model: batch ", batch, " needs ", rows * shape_.num_dense,
        " dense features and ", rows * shape_.embedding_width(),
        " embedding floats, got ", features.size(), " and ",
        embeddings.size()));
  }
  const DotInteractionShape interaction = shape_.interaction();
  RETURN_IF_ERROR(bottom_.Forward(*backend_,
                                  params.data() + shape_.bottom_offset(),
                                  features.data(), batch));
  interaction_.resize(rows * interaction.output_width());
  DotInteractionForward(interaction, batch, bottom_.output(),
                        embeddings.data(), interaction_.data());
  return top_.Forward(*backend_, params.data() + shape_.top_offset(),
                      interaction_.data(), batch);
}

absl::Status CtrModel::Predict(absl::Span<const float> params,
                               absl::Span<const float> features,
                               absl::Span<const float> embeddings,
                               absl::Span<float> probs) {
  const int batch = static_cast<int>(probs.size());
  RETURN_IF_ERROR(Forward(params, features, embeddings, batch));
  const float* logits = top_.output();
  for (int i = 0; i < batch; ++i) {
    probs[i] = static_cast<float>(Sigmoid(logits[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> CtrModel::LossAndGradient(
    absl::Span<const float> params, absl::Span<const float> features,
    absl::Span<const float> embeddings, absl::Span<const float> labels,
    absl::Span<float> probs, absl::Span<float> param_grad,
    absl::Span<float> embedding_grad) {
  const int batch = static_cast<int>(labels.size());
  if (probs.size() != labels.size() || param_grad.size() != params.size() ||
      embedding_grad.size() != embeddings.size()) {
    return absl::InvalidArgumentError(
        "CTR model: probs/labels or gradient/parameter sizes differ");
  }
  RETURN_IF_ERROR(Forward(params, features, embeddings, batch));
  const float* logits = top_.output();
  // dLoss/dlogit_i = (p_i - y_i) / batch for the mean log-loss.
  d_logit_.resize(batch);
  double loss_sum = 0.0;
  const float inv_batch = 1.0f / static_cast<float>(batch);
  for (int i = 0; i < batch; ++i) {
    const float y = labels[i];
    if (y != 0.0f && y != 1.0f) {
      return absl::InvalidArgumentError(
          absl::StrCat("label ", y, " at ", i, " is not 0 or 1"));
    }
    loss_sum += LogLossFromLogit(logits[i], y);
    probs[i] = static_cast<float>(Sigmoid(logits[i]));
    d_logit_[i] = (probs[i] - y) * inv_batch;
  }
  const DotInteractionShape interaction = shape_.interaction();
  d_interaction_.resize(interaction_.size());
  RETURN_IF_ERROR(top_.Backward(*backend_, params.data() + shape_.top_offset(),
                                interaction_.data(), d_logit_.data(), batch,
                                param_grad.data() + shape_.top_offset(),
                                d_interaction_.data()));
  d_bottom_.resize(static_cast<size_t>(batch) * shape_.embedding_dim);
  DotInteractionBackward(interaction, batch, bottom_.output(),
                         embeddings.data(), d_interaction_.data(),
                         d_bottom_.data(), embedding_grad.data());
  RETURN_IF_ERROR(bottom_.Backward(
      *backend_, params.data() + shape_.bottom_offset(), features.data(),
      d_bottom_.data(), batch, param_grad.data() + shape_.bottom_offset(),
      /*d_input=*/nullptr));
  return loss_sum / batch;
}

std::vector<float> CtrModel::UniformInit(const CtrModelShape& shape,
                                         float scale, uint64_t seed) {
  Rng rng(MixSeed(seed, {0x646c726d}));  // "dlrm"
  std::vector<float> params(shape.num_dense_params());
  for (float& p : params) p = rng.UniformSymmetric(scale);
  return params;
}

}  // namespace taups::trainer
