// A stack of fully connected layers (one of DLRM's "bottom" or "top" MLPs):
// layer l maps a batch x widths[l] input to
//   y = act(x W_l + b_l),   W_l widths[l] x widths[l+1], b_l widths[l+1],
// where act is ReLU on every layer except, when relu_on_output is false, the
// last (which then stays linear, e.g. to produce a logit). The matrix
// products go through the MathBackend (cuBLAS on a GPU); bias and ReLU are
// plain loops on the host.
//
// Parameters are one flat array: for each layer in order, W_l row-major and
// then b_l (ParamOffset gives where layer l starts).
//
// Thread-compatible: a tower keeps the activations of its last Forward for
// Backward; use one per thread. The MathBackend is passed to each call.
#ifndef TAUPS_WORKER_TRAINER_MLP_TOWER_H_
#define TAUPS_WORKER_TRAINER_MLP_TOWER_H_

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "worker/trainer/math_backend.h"

namespace taups::trainer {

class MlpTower {
 public:
  // `widths` = {input, hidden..., output}: at least two entries, all > 0
  // (checked by Validate; the constructor takes anything).
  MlpTower(std::vector<int> widths, bool relu_on_output);

  // INVALID_ARGUMENT unless widths has >= 2 entries, each in 1..65536.
  static absl::Status Validate(const std::vector<int>& widths);
  static size_t NumParams(const std::vector<int>& widths);

  const std::vector<int>& widths() const { return widths_; }
  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }
  int input_width() const { return widths_.front(); }
  int output_width() const { return widths_.back(); }
  size_t num_params() const { return NumParams(widths_); }
  // Offset of W_l in the flat parameters; b_l follows it.
  size_t ParamOffset(int layer) const;

  // Runs `batch` rows of `input` (batch x input_width) through the tower
  // with `params` (num_params floats). The result stays in output().
  absl::Status Forward(MathBackend& backend, const float* params,
                       const float* input, int batch);
  // batch x output_width, valid after a successful Forward.
  const float* output() const { return activations_.back().data(); }

  // Back-propagates `d_output` (dLoss/doutput, batch x output_width) through
  // the last Forward, which must have used the same params, input and batch.
  // Overwrites `param_grad` (num_params floats) with dLoss/dparams and, when
  // `d_input` is not null, d_input (batch x input_width) with dLoss/dinput.
  absl::Status Backward(MathBackend& backend, const float* params,
                        const float* input, const float* d_output, int batch,
                        float* param_grad, float* d_input);

 private:
  bool HasRelu(int layer) const {
    return relu_on_output_ || layer + 1 < num_layers();
  }

  std::vector<int> widths_;
  bool relu_on_output_;
  std::vector<std::vector<float>> activations_;  // per layer, post-activation
  std::vector<float> delta_, next_delta_;        // backward scratch
  int forward_batch_ = 0;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_MLP_TOWER_H_
