// The optimizer rules as plain scalar loops, one element at a time: the
// oracle that server/optimizer.cc's vectorised rules must match bit for bit
// (optimizer_reference_test) and the "before" column of bench/optimizer_bench.
// Written for clarity, not speed; header-only so the bench can use it.
#ifndef TAUPS_TESTS_OPTIMIZER_REFERENCE_H_
#define TAUPS_TESTS_OPTIMIZER_REFERENCE_H_

#include <cmath>
#include <cstddef>

#include "taups/table_config.h"

namespace taups {

// One step of `config`'s rule on n parameters (state interleaved as
// Optimizer keeps it), learning rate scaled by lr_factor.
inline void ReferenceApply(const OptimizerConfig& config, float* w,
                           float* state, const float* g, size_t n,
                           float lr_factor) {
  const float step = config.learning_rate * lr_factor;
  switch (config.kind) {
    case OptimizerKind::kSgd:
      for (size_t i = 0; i < n; ++i) w[i] -= step * g[i];
      return;
    case OptimizerKind::kAdagrad:
      for (size_t i = 0; i < n; ++i) {
        state[i] += g[i] * g[i];
        w[i] -= step * g[i] / (std::sqrt(state[i]) + config.adagrad_epsilon);
      }
      return;
    case OptimizerKind::kMomentum:
      for (size_t i = 0; i < n; ++i) {
        state[i] = config.momentum * state[i] + g[i];
        w[i] -= step * state[i];
      }
      return;
    case OptimizerKind::kAdam: {
      const float b1 = config.adam_beta1, b2 = config.adam_beta2;
      for (size_t i = 0; i < n; ++i) {
        float& m = state[3 * i];
        float& v = state[3 * i + 1];
        float& t = state[3 * i + 2];
        t += 1.0f;
        m = b1 * m + (1.0f - b1) * g[i];
        v = b2 * v + (1.0f - b2) * g[i] * g[i];
        const float m_hat = m / (1.0f - std::pow(b1, t));
        const float v_hat = v / (1.0f - std::pow(b2, t));
        w[i] -= step * m_hat / (std::sqrt(v_hat) + config.adam_epsilon);
      }
      return;
    }
    case OptimizerKind::kFtrl: {
      const float alpha = step;
      if (alpha <= 0.0f) return;
      for (size_t i = 0; i < n; ++i) {
        float& z = state[2 * i];
        float& acc = state[2 * i + 1];
        const float acc_new = acc + g[i] * g[i];
        const float sigma = (std::sqrt(acc_new) - std::sqrt(acc)) / alpha;
        z += g[i] - sigma * w[i];
        acc = acc_new;
        if (std::abs(z) <= config.ftrl_l1) {
          w[i] = 0.0f;
        } else {
          const float sign = z > 0.0f ? 1.0f : -1.0f;
          w[i] = -(z - sign * config.ftrl_l1) /
                 ((config.ftrl_beta + std::sqrt(acc)) / alpha + config.ftrl_l2);
        }
      }
      return;
    }
  }
}

}  // namespace taups

#endif  // TAUPS_TESTS_OPTIMIZER_REFERENCE_H_
