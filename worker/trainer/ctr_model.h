// The click-through model trained by `ps_worker --model=ctr`: a DLRM
// (Naumov et al., 2019) in its standard Criteo configuration, scaled down.
//
//   z     = bottom MLP(dense features)           num_dense -> ... -> D, ReLU
//   e_f   = embedding row of field f's id        D floats, from a sparse table
//   q     = [z, <t_i, t_j> for i > j]            t = (z, e_0, ..., e_{F-1});
//                                                dot_interaction.h
//   logit = top MLP(q)                           D + (F+1)F/2 -> ... -> 1,
//                                                ReLU except the last layer
//   p = sigmoid(logit), trained with mean log-loss.
//
// The dense parameters (both MLPs) are ONE flat vector, i.e. one dense
// table: the bottom MLP's parameters at bottom_offset() = 0, then the top
// MLP's at top_offset(), each in MlpTower's layout (per layer W row-major,
// then b). The MLPs' matrix products run on the MathBackend (cuBLAS with
// --device=cuda); the interaction, biases, ReLUs and the loss on the host.
//
// Thread-compatible: a CtrModel keeps scratch buffers; one per thread. The
// MathBackend is borrowed and must outlive the model.
#ifndef TAUPS_WORKER_TRAINER_CTR_MODEL_H_
#define TAUPS_WORKER_TRAINER_CTR_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/trainer/dot_interaction.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/mlp_tower.h"

namespace taups::trainer {

struct CtrModelShape {
  int num_dense = 13;
  int num_fields = 26;
  int embedding_dim = 16;            // D
  std::vector<int> bottom_hidden = {32};  // hidden widths of the bottom MLP
  std::vector<int> top_hidden = {64};     // hidden widths of the top MLP

  // {num_dense, bottom_hidden..., D} and {interaction width, top_hidden..., 1}.
  std::vector<int> BottomWidths() const;
  std::vector<int> TopWidths() const;
  DotInteractionShape interaction() const { return {num_fields, embedding_dim}; }
  // Embedding floats per example: num_fields * D.
  int embedding_width() const { return num_fields * embedding_dim; }
  size_t bottom_offset() const { return 0; }
  size_t top_offset() const;
  size_t num_dense_params() const;
  // INVALID_ARGUMENT naming the first bad field: num_dense 1..64, num_fields
  // 1..64, embedding_dim 1..1024, hidden widths 1..65536 (at most 8 each).
  absl::Status Validate() const;
};

class CtrModel {
 public:
  // `shape` must be valid (see Validate).
  CtrModel(CtrModelShape shape, MathBackend* backend);

  const CtrModelShape& shape() const { return shape_; }

  // For batch = labels.size() examples with dense `features` (batch x
  // num_dense), looked-up `embeddings` (batch x num_fields x D, field order)
  // and 0/1 `labels`: returns the mean log-loss; writes P(click) to `probs`,
  // dLoss/dparams to `param_grad` (num_dense_params) and dLoss/dembeddings
  // to `embedding_grad` (same layout as `embeddings`: one row per lookup).
  // INVALID_ARGUMENT for wrong sizes or a label other than 0/1.
  absl::StatusOr<double> LossAndGradient(absl::Span<const float> params,
                                         absl::Span<const float> features,
                                         absl::Span<const float> embeddings,
                                         absl::Span<const float> labels,
                                         absl::Span<float> probs,
                                         absl::Span<float> param_grad,
                                         absl::Span<float> embedding_grad);

  // Writes P(click) of each of the probs.size() examples.
  absl::Status Predict(absl::Span<const float> params,
                       absl::Span<const float> features,
                       absl::Span<const float> embeddings,
                       absl::Span<float> probs);

  // Dense parameters i.i.d. U(-scale, scale), deterministic in `seed`.
  static std::vector<float> UniformInit(const CtrModelShape& shape,
                                        float scale, uint64_t seed);

 private:
  // Checks sizes, then fills the towers' activations and interaction_.
  absl::Status Forward(absl::Span<const float> params,
                       absl::Span<const float> features,
                       absl::Span<const float> embeddings, int batch);

  CtrModelShape shape_;
  MathBackend* backend_;
  MlpTower bottom_, top_;
  std::vector<float> interaction_;    // batch x interaction width
  std::vector<float> d_logit_;        // batch
  std::vector<float> d_interaction_;  // batch x interaction width
  std::vector<float> d_bottom_;       // batch x D
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_MODEL_H_
