#include "server/optimizer.h"

#include <algorithm>
#include <cmath>

namespace taups {
namespace {

// w <- w - lr * g
class SgdOptimizer final : public Optimizer {
 public:
  explicit SgdOptimizer(float lr) : lr_(lr) {}
  int state_width() const override { return 0; }
  void InitState(float*, size_t) const override {}
  void Apply(float* w, float*, const float* g, size_t n,
             float lr_factor) const override {
    const float step = lr_ * lr_factor;
    for (size_t i = 0; i < n; ++i) w[i] -= step * g[i];
  }

 private:
  const float lr_;
};

// acc <- acc + g^2;  w <- w - lr * g / (sqrt(acc) + eps)
class AdagradOptimizer final : public Optimizer {
 public:
  AdagradOptimizer(float lr, float initial_accumulator, float epsilon)
      : lr_(lr), initial_(initial_accumulator), epsilon_(epsilon) {}
  int state_width() const override { return 1; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + n, initial_);
  }
  void Apply(float* w, float* acc, const float* g, size_t n,
             float lr_factor) const override {
    const float step = lr_ * lr_factor;
    for (size_t i = 0; i < n; ++i) {
      acc[i] += g[i] * g[i];
      w[i] -= step * g[i] / (std::sqrt(acc[i]) + epsilon_);
    }
  }

 private:
  const float lr_;
  const float initial_;
  const float epsilon_;
};

}  // namespace

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SgdOptimizer>(config.learning_rate);
    case OptimizerKind::kAdagrad:
      return std::make_unique<AdagradOptimizer>(
          config.learning_rate, config.adagrad_initial_accumulator,
          config.adagrad_epsilon);
  }
  return nullptr;
}

}  // namespace taups
