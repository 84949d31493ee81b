// The learned click-through model trained by `ps_worker --model=ctr`.
//
// Each field's id selects an embedding row of `embedding_dim` floats from a
// sparse table (key = EmbeddingKey(field, id)). The rows of one example,
// concatenated in field order, form x (num_fields * embedding_dim floats);
//   hidden = ReLU(x W1 + b1),  logit = hidden . w2 + b2,  p = sigmoid(logit)
// trained with mean log-loss. The dense parameters are ONE flat vector (one
// dense table), row-major blocks in this order:
//   W1  input x hidden  at w1_offset() = 0
//   b1  hidden          at b1_offset() = input * hidden
//   w2  hidden          at w2_offset() = b1_offset() + hidden
//   b2  1               at b2_offset() = w2_offset() + hidden
//
// Thread-compatible: a CtrModel keeps scratch buffers; one per thread. The
// MathBackend is borrowed and must outlive the model.
#ifndef TAUPS_WORKER_TRAINER_CTR_MODEL_H_
#define TAUPS_WORKER_TRAINER_CTR_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/trainer/math_backend.h"

namespace taups::trainer {

struct CtrModelShape {
  int num_fields = 8;
  int embedding_dim = 8;
  int hidden = 32;

  int input() const { return num_fields * embedding_dim; }
  size_t w1_offset() const { return 0; }
  size_t b1_offset() const { return static_cast<size_t>(input()) * hidden; }
  size_t w2_offset() const { return b1_offset() + hidden; }
  size_t b2_offset() const { return w2_offset() + hidden; }
  size_t num_dense_params() const { return b2_offset() + 1; }
};

// Sparse-table key of (field, id): a 64-bit mix, so fields never share rows
// and keys spread evenly over shards.
uint64_t EmbeddingKey(int field, uint32_t id);

class CtrModel {
 public:
  CtrModel(CtrModelShape shape, MathBackend* backend);

  const CtrModelShape& shape() const { return shape_; }

  // For `batch` examples with concatenated embeddings `x` (batch x input)
  // and 0/1 `labels`: returns the mean log-loss, writes the predicted
  // probabilities to `probs` (batch), the gradient of the mean loss with
  // respect to the dense parameters to `dense_grad` (flat layout) and with
  // respect to x to `x_grad` (batch x input, i.e. one row per looked-up
  // embedding, in the same order as x). INVALID_ARGUMENT for wrong sizes.
  absl::StatusOr<double> LossAndGradient(absl::Span<const float> dense,
                                         absl::Span<const float> x,
                                         absl::Span<const float> labels,
                                         absl::Span<float> probs,
                                         absl::Span<float> dense_grad,
                                         absl::Span<float> x_grad);

  // Writes P(click) of each of the probs.size() examples in `x`.
  absl::Status Predict(absl::Span<const float> dense,
                       absl::Span<const float> x, absl::Span<float> probs);

  // Dense parameters i.i.d. U(-scale, scale), deterministic in `seed`.
  static std::vector<float> UniformInit(const CtrModelShape& shape,
                                        float scale, uint64_t seed);

 private:
  // Fills hidden_ and logits_ for `batch` examples.
  absl::Status Forward(absl::Span<const float> dense, absl::Span<const float> x,
                       int batch);

  CtrModelShape shape_;
  MathBackend* backend_;
  std::vector<float> hidden_;   // batch x hidden (post-ReLU)
  std::vector<float> logits_;   // batch
  std::vector<float> dhidden_;  // batch x hidden
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CTR_MODEL_H_
