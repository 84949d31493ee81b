// A one-hidden-layer perceptron classifier (input -> hidden ReLU -> classes,
// softmax cross-entropy) whose parameters are ONE flat float vector, so they
// live in a single dense parameter-server table.
//
// Flat layout (row-major blocks, in this order):
//   W1  input x hidden    at w1_offset() = 0
//   b1  hidden            at b1_offset() = input * hidden
//   W2  hidden x classes  at w2_offset() = b1_offset() + hidden
//   b2  classes           at b2_offset() = w2_offset() + hidden * classes
// hidden = ReLU(x W1 + b1); logits = hidden W2 + b2.
// For 784-128-10 that is 101,770 floats.
//
// Thread-compatible: an Mlp keeps per-batch scratch buffers; use one per
// thread. The MathBackend is borrowed and must outlive the Mlp.
#ifndef TAUPS_WORKER_TRAINER_MLP_MODEL_H_
#define TAUPS_WORKER_TRAINER_MLP_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/trainer/math_backend.h"

namespace taups::trainer {

struct MlpShape {
  int input = 784;
  int hidden = 128;
  int classes = 10;

  size_t w1_offset() const { return 0; }
  size_t b1_offset() const { return static_cast<size_t>(input) * hidden; }
  size_t w2_offset() const { return b1_offset() + hidden; }
  size_t b2_offset() const {
    return w2_offset() + static_cast<size_t>(hidden) * classes;
  }
  size_t num_params() const { return b2_offset() + classes; }
};

// Sums over a batch (or an evaluation set).
struct ClassifierStats {
  int examples = 0;
  double mean_loss = 0.0;  // mean cross-entropy
  int correct = 0;         // argmax(logits) == label
  double accuracy() const {
    return examples > 0 ? static_cast<double>(correct) / examples : 0.0;
  }
};

class Mlp {
 public:
  Mlp(MlpShape shape, MathBackend* backend);

  const MlpShape& shape() const { return shape_; }

  // Mean loss over `batch` examples (x: batch x input row-major; labels <
  // classes) and its gradient with respect to every parameter, written to
  // `grad` in the flat layout. INVALID_ARGUMENT for wrong span sizes or a
  // label out of range; the backend's error otherwise.
  absl::StatusOr<ClassifierStats> LossAndGradient(
      absl::Span<const float> params, const float* x, const uint8_t* labels,
      int batch, absl::Span<float> grad);

  // Loss and accuracy over `n` examples, computed in chunks.
  absl::StatusOr<ClassifierStats> Evaluate(absl::Span<const float> params,
                                           const float* x,
                                           const uint8_t* labels, int n);

  // Parameters drawn i.i.d. U(-scale, scale), deterministic in `seed`. (The
  // trainer uses the table's server-side initializer instead; this is for
  // local training and tests.)
  static std::vector<float> UniformInit(const MlpShape& shape, float scale,
                                        uint64_t seed);

 private:
  // Fills hidden_ (post-ReLU) and probs_ (softmax) for `batch` rows of x;
  // adds the batch's loss and correct count to `stats`.
  absl::Status Forward(absl::Span<const float> params, const float* x,
                       const uint8_t* labels, int batch,
                       ClassifierStats& stats);
  absl::Status CheckArgs(absl::Span<const float> params, const uint8_t* labels,
                         int batch) const;

  MlpShape shape_;
  MathBackend* backend_;
  std::vector<float> hidden_;   // batch x hidden
  std::vector<float> probs_;    // batch x classes; becomes dlogits
  std::vector<float> dhidden_;  // batch x hidden
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_MLP_MODEL_H_
