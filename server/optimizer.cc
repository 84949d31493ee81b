#include "server/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/types/span.h"
#include "common/vector_math.h"

namespace taups {
namespace {

// A change no larger than this cannot turn a finite float infinite (see
// SgdOptimizer::StepAlwaysFinite).
constexpr float kSafeChange = 1e30f;

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
  // Near FLT_MAX a float's spacing is 2^104 (about 2e31): a change below
  // half of it rounds back to a finite value, so |lr g| <= 1e30 never
  // overflows.
  bool StepAlwaysFinite(float max_abs_g, float lr_factor) const override {
    return std::abs(lr_ * lr_factor) * max_abs_g <= kSafeChange;
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
  // g^2 <= 1e30 cannot overflow the accumulator (see SGD), and since acc >=
  // g^2 after the add, the change |lr g / (sqrt(acc) + eps)| is at most |lr|.
  bool StepAlwaysFinite(float max_abs_g, float lr_factor) const override {
    return initial_ >= 0.0f && max_abs_g <= 1e15f &&
           std::abs(lr_ * lr_factor) <= kSafeChange;
  }

 private:
  const float lr_;
  const float initial_;
  const float epsilon_;
};

// v <- momentum * v + g;  w <- w - lr * v
class MomentumOptimizer final : public Optimizer {
 public:
  MomentumOptimizer(float lr, float momentum) : lr_(lr), momentum_(momentum) {}
  int state_width() const override { return 1; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + n, 0.0f);
  }
  void Apply(float* w, float* v, const float* g, size_t n,
             float lr_factor) const override {
    const float step = lr_ * lr_factor;
    for (size_t i = 0; i < n; ++i) {
      v[i] = momentum_ * v[i] + g[i];
      w[i] -= step * v[i];
    }
  }

 private:
  const float lr_;
  const float momentum_;
};

// Adam with per-parameter step counts (slots m, v, t), so sparse rows that
// are updated rarely still get their own bias correction.
class AdamOptimizer final : public Optimizer {
 public:
  AdamOptimizer(float lr, float beta1, float beta2, float epsilon)
      : lr_(lr), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  int state_width() const override { return 3; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + 3 * n, 0.0f);
  }
  void Apply(float* w, float* state, const float* g, size_t n,
             float lr_factor) const override {
    const float step = lr_ * lr_factor;
    for (size_t i = 0; i < n; ++i) {
      float& m = state[3 * i];
      float& v = state[3 * i + 1];
      float& t = state[3 * i + 2];
      t += 1.0f;
      m = beta1_ * m + (1.0f - beta1_) * g[i];
      v = beta2_ * v + (1.0f - beta2_) * g[i] * g[i];
      const float m_hat = m / (1.0f - std::pow(beta1_, t));
      const float v_hat = v / (1.0f - std::pow(beta2_, t));
      w[i] -= step * m_hat / (std::sqrt(v_hat) + epsilon_);
    }
  }

 private:
  const float lr_, beta1_, beta2_, epsilon_;
};

// FTRL-Proximal, per coordinate (slots z, n); alpha = lr * lr_factor.
class FtrlOptimizer final : public Optimizer {
 public:
  FtrlOptimizer(float alpha, float beta, float l1, float l2)
      : alpha_(alpha), beta_(beta), l1_(l1), l2_(l2) {}
  int state_width() const override { return 2; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + 2 * n, 0.0f);
  }
  void Apply(float* w, float* state, const float* g, size_t n,
             float lr_factor) const override {
    const float alpha = alpha_ * lr_factor;
    if (alpha <= 0.0f) return;
    for (size_t i = 0; i < n; ++i) {
      float& z = state[2 * i];
      float& acc = state[2 * i + 1];
      const float acc_new = acc + g[i] * g[i];
      const float sigma = (std::sqrt(acc_new) - std::sqrt(acc)) / alpha;
      z += g[i] - sigma * w[i];
      acc = acc_new;
      if (std::abs(z) <= l1_) {
        w[i] = 0.0f;
      } else {
        const float sign = z > 0.0f ? 1.0f : -1.0f;
        w[i] = -(z - sign * l1_) / ((beta_ + std::sqrt(acc)) / alpha + l2_);
      }
    }
  }

 private:
  const float alpha_, beta_, l1_, l2_;
};

}  // namespace

bool Optimizer::StaysFinite(const float* w, const float* state, const float* g,
                            size_t n, float lr_factor) const {
  constexpr size_t kChunk = 256;
  const size_t width = static_cast<size_t>(state_width());
  float w_copy[kChunk];
  float state_copy[kChunk * 4];  // widest rule: Adam's 3 slots
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    std::memcpy(w_copy, w + begin, count * sizeof(float));
    if (width > 0) {
      std::memcpy(state_copy, state + begin * width,
                  count * width * sizeof(float));
    }
    Apply(w_copy, state_copy, g + begin, count, lr_factor);
    if (!AllFinite(absl::MakeConstSpan(w_copy, count)) ||
        !AllFinite(absl::MakeConstSpan(state_copy, count * width))) {
      return false;
    }
  }
  return true;
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config) {
  switch (config.kind) {
    case OptimizerKind::kSgd:
      return std::make_unique<SgdOptimizer>(config.learning_rate);
    case OptimizerKind::kAdagrad:
      return std::make_unique<AdagradOptimizer>(
          config.learning_rate, config.adagrad_initial_accumulator,
          config.adagrad_epsilon);
    case OptimizerKind::kMomentum:
      return std::make_unique<MomentumOptimizer>(config.learning_rate,
                                                 config.momentum);
    case OptimizerKind::kAdam:
      return std::make_unique<AdamOptimizer>(
          config.learning_rate, config.adam_beta1, config.adam_beta2,
          config.adam_epsilon);
    case OptimizerKind::kFtrl:
      return std::make_unique<FtrlOptimizer>(config.learning_rate,
                                             config.ftrl_beta, config.ftrl_l1,
                                             config.ftrl_l2);
  }
  return nullptr;
}

}  // namespace taups
