// The models a simulated worker trains, behind one interface: parameters are
// one flat float vector (one dense table), the worker asks for the loss and
// gradient of a mini-batch, the harness evaluates the server's parameters.
//
//   kMlp      784-128-10 ReLU perceptron (worker/trainer's Mlp)
//   kSoftmax  softmax regression 784->10 (SoftmaxRegression below)
//
// Thread-compatible: a model keeps scratch buffers; one per simulation.
#ifndef TAUPS_BENCH_SIM_CLASSIFIER_MODEL_H_
#define TAUPS_BENCH_SIM_CLASSIFIER_MODEL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/trainer/math_backend.h"
#include "worker/trainer/mlp_model.h"

namespace taups::sim {

using trainer::ClassifierStats;

enum class ModelKind { kMlp, kSoftmax };
const char* ModelKindName(ModelKind kind);

class ClassifierModel {
 public:
  virtual ~ClassifierModel() = default;
  virtual size_t num_params() const = 0;
  // Mean cross-entropy of `batch` rows of x (row-major, input wide) and its
  // gradient, written to `grad` (num_params floats).
  virtual absl::StatusOr<ClassifierStats> LossAndGradient(
      absl::Span<const float> params, const float* x, const uint8_t* labels,
      int batch, absl::Span<float> grad) = 0;
  virtual absl::StatusOr<ClassifierStats> Evaluate(
      absl::Span<const float> params, const float* x, const uint8_t* labels,
      int n) = 0;
};

// Softmax regression: logits = x W + b. Flat layout: W (input x classes,
// row-major) at 0, b (classes) at input * classes.
class SoftmaxRegression final : public ClassifierModel {
 public:
  SoftmaxRegression(int input, int classes, trainer::MathBackend* backend);

  size_t num_params() const override;
  absl::StatusOr<ClassifierStats> LossAndGradient(
      absl::Span<const float> params, const float* x, const uint8_t* labels,
      int batch, absl::Span<float> grad) override;
  absl::StatusOr<ClassifierStats> Evaluate(absl::Span<const float> params,
                                           const float* x,
                                           const uint8_t* labels,
                                           int n) override;

 private:
  // probs_ <- softmax(x W + b) for `batch` rows; adds loss/correct to stats.
  absl::Status Forward(absl::Span<const float> params, const float* x,
                       const uint8_t* labels, int batch, ClassifierStats& stats);

  const int input_;
  const int classes_;
  trainer::MathBackend* const backend_;
  std::vector<float> probs_;  // batch x classes
};

// `backend` must outlive the model. Fashion-MNIST shapes: 784 inputs, 10
// classes (the MLP's hidden layer is 128 wide).
std::unique_ptr<ClassifierModel> MakeClassifierModel(
    ModelKind kind, trainer::MathBackend* backend);

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_CLASSIFIER_MODEL_H_
