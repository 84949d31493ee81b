#include "worker/trainer/mlp_tower.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups::trainer {
namespace {

constexpr int kMaxWidth = 1 << 16;

}  // namespace

MlpTower::MlpTower(std::vector<int> widths, bool relu_on_output)
    : widths_(std::move(widths)), relu_on_output_(relu_on_output) {
  activations_.resize(widths_.size() > 1 ? widths_.size() - 1 : 0);
}

absl::Status MlpTower::Validate(const std::vector<int>& widths) {
  if (widths.size() < 2) {
    return absl::InvalidArgumentError(
        "an MLP needs an input and an output width");
  }
  for (int w : widths) {
    if (w < 1 || w > kMaxWidth) {
      return absl::InvalidArgumentError(
          absl::StrCat("MLP layer width ", w, " outside 1..", kMaxWidth));
    }
  }
  return absl::OkStatus();
}

size_t MlpTower::NumParams(const std::vector<int>& widths) {
  size_t total = 0;
  for (size_t l = 0; l + 1 < widths.size(); ++l) {
    total += static_cast<size_t>(widths[l] + 1) * widths[l + 1];
  }
  return total;
}

size_t MlpTower::ParamOffset(int layer) const {
  size_t offset = 0;
  for (int l = 0; l < layer; ++l) {
    offset += static_cast<size_t>(widths_[l] + 1) * widths_[l + 1];
  }
  return offset;
}

absl::Status MlpTower::Forward(MathBackend& backend, const float* params,
                               const float* input, int batch) {
  if (batch <= 0 || num_layers() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("MLP forward: batch ", batch, ", layers ", num_layers()));
  }
  const float* in = input;
  size_t offset = 0;
  for (int l = 0; l < num_layers(); ++l) {
    const int m = widths_[l], n = widths_[l + 1];
    const float* w = params + offset;
    const float* b = w + static_cast<size_t>(m) * n;
    offset += static_cast<size_t>(m + 1) * n;
    std::vector<float>& out = activations_[l];
    out.resize(static_cast<size_t>(batch) * n);
    RETURN_IF_ERROR(backend.Sgemm(Transpose::kNo, Transpose::kNo, batch, n, m,
                                  1.0f, in, m, w, n, 0.0f, out.data(), n));
    const bool relu = HasRelu(l);
    for (int i = 0; i < batch; ++i) {
      float* row = out.data() + static_cast<size_t>(i) * n;
      for (int j = 0; j < n; ++j) {
        const float z = row[j] + b[j];
        row[j] = relu ? std::max(z, 0.0f) : z;
      }
    }
    in = out.data();
  }
  forward_batch_ = batch;
  return absl::OkStatus();
}

absl::Status MlpTower::Backward(MathBackend& backend, const float* params,
                                const float* input, const float* d_output,
                                int batch, float* param_grad, float* d_input) {
  if (batch != forward_batch_ || batch <= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MLP backward over batch ", batch, " after a forward over ",
        forward_batch_));
  }
  const float* upstream = d_output;  // dLoss / (output of layer l)
  for (int l = num_layers() - 1; l >= 0; --l) {
    const int m = widths_[l], n = widths_[l + 1];
    const size_t offset = ParamOffset(l);
    const float* w = params + offset;
    float* g_w = param_grad + offset;
    float* g_b = g_w + static_cast<size_t>(m) * n;
    const float* layer_in = l == 0 ? input : activations_[l - 1].data();
    const std::vector<float>& out = activations_[l];

    // delta = dLoss / (pre-activation of layer l).
    delta_.resize(static_cast<size_t>(batch) * n);
    const bool relu = HasRelu(l);
    std::fill(g_b, g_b + n, 0.0f);
    for (size_t i = 0; i < delta_.size(); ++i) {
      delta_[i] = (!relu || out[i] > 0.0f) ? upstream[i] : 0.0f;
      g_b[i % n] += delta_[i];
    }
    // dW = in^T delta.
    RETURN_IF_ERROR(backend.Sgemm(Transpose::kYes, Transpose::kNo, m, n, batch,
                                  1.0f, layer_in, m, delta_.data(), n, 0.0f,
                                  g_w, n));
    if (l == 0 && d_input == nullptr) break;
    // dLoss / dinput = delta W^T.
    float* d_in = d_input;
    if (l > 0) {
      next_delta_.resize(static_cast<size_t>(batch) * m);
      d_in = next_delta_.data();
    }
    RETURN_IF_ERROR(backend.Sgemm(Transpose::kNo, Transpose::kYes, batch, m, n,
                                  1.0f, delta_.data(), n, w, n, 0.0f, d_in, m));
    // Layer l - 1 reads its upstream gradient from next_delta_, which is
    // only written again after that layer's delta_ has been formed.
    upstream = d_in;
  }
  return absl::OkStatus();
}

}  // namespace taups::trainer
