#include "server/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/types/span.h"
#include "common/vector_math.h"

namespace taups {
namespace {

// A change no larger than this cannot turn a finite float infinite (see
// SgdOptimizer::StepAlwaysFinite).
constexpr float kSafeChange = 1e30f;
// Bounds below are computed in double on exact inputs; this covers the few
// float roundings of a rule's step (each at most 2^-24 relative).
constexpr double kRounding = 1.0 + 1e-6;

// A rule's gradient is either aligned floats or the bytes of floats at any
// alignment (Optimizer::ApplyBytes); each rule's Run is written once over
// GradAt (element i) and GradFrom (the gradient from element i on). The
// byte form loads with std::memcpy, which compiles to unaligned loads, so
// the loops vectorise the same way.
inline float GradAt(const float* g, size_t i) { return g[i]; }
inline float GradAt(const char* g, size_t i) {
  float x;
  std::memcpy(&x, g + sizeof(float) * i, sizeof(x));
  return x;
}
inline const float* GradFrom(const float* g, size_t i) { return g + i; }
inline const char* GradFrom(const char* g, size_t i) {
  return g + sizeof(float) * i;
}

// The largest bit pattern of each slot k < W of W-wide interleaved state,
// in one pass, masked by masks[k]: 0x7fffffff orders |x| (sign cleared),
// 0xffffffff keeps the sign so any negative value reads above every positive
// one. A result >= 0x7f800000 means a NaN, an infinity or (sign kept) a
// negative value in that slot.
template <size_t W>
void MaxSlotBits(const float* state, size_t n, const uint32_t (&masks)[W],
                 uint32_t (&max_bits)[W]) {
  uint32_t max[W] = {};
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < W; ++k) {
      uint32_t bits;
      std::memcpy(&bits, state + i * W + k, sizeof(bits));
      bits &= masks[k];
      max[k] = bits > max[k] ? bits : max[k];
    }
  }
  std::copy(max, max + W, max_bits);
}

// The float of one of MaxSlotBits' answers, or a negative number when it is
// not a finite non-negative value.
double BoundOf(uint32_t max_bits) {
  if (max_bits >= 0x7f800000u) return -1.0;
  float value;
  std::memcpy(&value, &max_bits, sizeof(value));
  return value;
}

// Runs `run(w, state, g, count)` on copies of w and state, 256 elements at
// a time, and says whether every result stays finite; the originals are only
// read. `width` is the rule's state_width() (at most 4).
template <typename RunFn>
bool TrialStaysFinite(RunFn&& run, const float* w, const float* state,
                      const float* g, size_t n, size_t width) {
  constexpr size_t kChunk = 256;
  float w_copy[kChunk];
  float state_copy[kChunk * 4];  // widest rule: Adam's 3 slots
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    std::memcpy(w_copy, w + begin, count * sizeof(float));
    if (width > 0) {
      std::memcpy(state_copy, state + begin * width,
                  count * width * sizeof(float));
    }
    run(w_copy, state_copy, g + begin, count);
    if (!AllFinite(absl::MakeConstSpan(w_copy, count)) ||
        !AllFinite(absl::MakeConstSpan(state_copy, count * width))) {
      return false;
    }
  }
  return true;
}

// Implements Apply and ApplyRows of a rule from its inline Run(w, state, g,
// n, lr_factor), so the per-row loop of ApplyRows calls Run directly.
template <typename Rule>
class RuleOptimizer : public Optimizer {
 public:
  void Apply(float* w, float* state, const float* g, size_t n,
             float lr_factor) const final {
    static_cast<const Rule*>(this)->Run(w, state, g, n, lr_factor);
  }
  void ApplyBytes(float* w, float* state, const char* g_bytes, size_t n,
                  float lr_factor) const final {
    static_cast<const Rule*>(this)->Run(w, state, g_bytes, n, lr_factor);
  }
  void ApplyRows(const RowBatch& batch, float lr_factor) const final {
    const Rule* rule = static_cast<const Rule*>(this);
    // Rows lie anywhere in the arena (and their gradients anywhere in the
    // request): the row kRowsAhead on is loaded while this one updates.
    constexpr size_t kRowsAhead = 4;
    constexpr size_t kLineFloats = 16;  // a 64-byte cache line
    for (size_t k = 0; k < batch.count; ++k) {
      if (k + kRowsAhead < batch.count) {
        const float* ahead =
            batch.arena + size_t{batch.slots[k + kRowsAhead]} * batch.row_stride;
        for (size_t f = 0; f < batch.row_stride; f += kLineFloats) {
          __builtin_prefetch(ahead + f, /*rw=*/1);
        }
        __builtin_prefetch(batch.grads +
                           size_t{batch.grad_rows[k + kRowsAhead]} * batch.dim);
      }
      float* row = batch.arena + size_t{batch.slots[k]} * batch.row_stride;
      rule->Run(row, row + batch.dim,
                batch.grads + size_t{batch.grad_rows[k]} * batch.dim,
                batch.dim, lr_factor);
    }
  }
  bool RowsStayFinite(const RowBatch& batch, float lr_factor,
                      float max_abs_g) const final {
    if (!std::isfinite(max_abs_g)) return false;  // a NaN or infinite gradient
    // A rule without its own StepFiniteFor proves a step from max |g| alone
    // (the default StepFiniteFor): one answer for every row.
    constexpr bool kProvesFromState = !std::is_same_v<
        decltype(&Rule::StepFiniteFor),
        bool (Optimizer::*)(const float*, size_t, float, float) const>;
    if (StepAlwaysFinite(max_abs_g, lr_factor)) return true;
    const Rule* rule = static_cast<const Rule*>(this);
    const size_t width = static_cast<size_t>(rule->Rule::state_width());
    for (size_t k = 0; k < batch.count; ++k) {
      const float* row =
          batch.arena + size_t{batch.slots[k]} * batch.row_stride;
      const float* g = batch.grads + size_t{batch.grad_rows[k]} * batch.dim;
      if constexpr (kProvesFromState) {
        // Qualified: the rule is final, so this does not dispatch.
        if (rule->Rule::StepFiniteFor(row + batch.dim, batch.dim, max_abs_g,
                                      lr_factor)) {
          continue;
        }
      }
      const bool finite = TrialStaysFinite(
          [&](float* w_copy, float* state_copy, const float* g_part,
              size_t count) {
            rule->Run(w_copy, state_copy, g_part, count, lr_factor);
          },
          row, row + batch.dim, g, batch.dim, width);
      if (!finite) return false;
    }
    return true;
  }
};

// w <- w - lr * g
class SgdOptimizer final : public RuleOptimizer<SgdOptimizer> {
 public:
  explicit SgdOptimizer(float lr) : lr_(lr) {}
  int state_width() const override { return 0; }
  void InitState(float*, size_t) const override {}
  template <typename G>
  void Run(float* __restrict w, float*, const G* __restrict g, size_t n,
           float lr_factor) const {
    const float step = lr_ * lr_factor;
    for (size_t i = 0; i < n; ++i) w[i] -= step * GradAt(g, i);
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
class AdagradOptimizer final : public RuleOptimizer<AdagradOptimizer> {
 public:
  AdagradOptimizer(float lr, float initial_accumulator, float epsilon)
      : lr_(lr), initial_(initial_accumulator), epsilon_(epsilon) {}
  int state_width() const override { return 1; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + n, initial_);
  }
  template <typename G>
  void Run(float* __restrict w, float* __restrict acc, const G* __restrict g,
           size_t n, float lr_factor) const {
    const float step = lr_ * lr_factor;
    const float eps = epsilon_;
    for (size_t i = 0; i < n; ++i) {
      const float gi = GradAt(g, i);
      const float a = acc[i] + gi * gi;
      acc[i] = a;
      w[i] -= step * gi / (std::sqrt(a) + eps);
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
class MomentumOptimizer final : public RuleOptimizer<MomentumOptimizer> {
 public:
  MomentumOptimizer(float lr, float momentum) : lr_(lr), momentum_(momentum) {}
  int state_width() const override { return 1; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + n, 0.0f);
  }
  template <typename G>
  void Run(float* __restrict w, float* __restrict v, const G* __restrict g,
           size_t n, float lr_factor) const {
    const float step = lr_ * lr_factor;
    const float mu = momentum_;
    for (size_t i = 0; i < n; ++i) {
      const float velocity = mu * v[i] + GradAt(g, i);
      v[i] = velocity;
      w[i] -= step * velocity;
    }
  }
  // |v'| <= mu max|v| + max|g| (0 < mu < 1), and the change is |lr v'|.
  bool StepFiniteFor(const float* v, size_t n, float max_abs_g,
                     float lr_factor) const override {
    const float max_v = MaxAbs(absl::MakeConstSpan(v, n));  // inf: not finite
    if (!std::isfinite(max_v) || !(max_abs_g >= 0.0f)) return false;
    const double velocity =
        (double{momentum_} * max_v + max_abs_g) * kRounding;
    return velocity <= 1e38 &&
           std::abs(double{lr_} * lr_factor) * velocity <= kSafeChange;
  }

 private:
  const float lr_;
  const float momentum_;
};

// Adam with per-parameter step counts (slots m, v, t), so sparse rows that
// are updated rarely still get their own bias correction.
class AdamOptimizer final : public RuleOptimizer<AdamOptimizer> {
 public:
  AdamOptimizer(float lr, float beta1, float beta2, float epsilon)
      : lr_(lr), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}
  int state_width() const override { return 3; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + 3 * n, 0.0f);
  }
  template <typename G>
  void Run(float* __restrict w, float* __restrict state, const G* __restrict g,
           size_t n, float lr_factor) const {
    if (n == 0) return;
    // Parameters updated together share a step count (a sparse row always,
    // a dense range nearly always): then the two bias corrections are one
    // pow each for the run instead of two per element.
    // Compared as bits (a branch-free scan); a -0 among +0s only takes the
    // slower path, which gives the same result.
    uint32_t t0_bits;
    std::memcpy(&t0_bits, state + 2, sizeof(t0_bits));
    uint32_t differ = 0;
    for (size_t i = 1; i < n; ++i) {
      uint32_t bits;
      std::memcpy(&bits, state + 3 * i + 2, sizeof(bits));
      differ |= bits ^ t0_bits;
    }
    const float t0 = state[2];
    if (differ == 0) {
      RunSharedStep(w, state, g, n, lr_factor, t0 + 1.0f);
    } else {
      RunEach(w, state, g, n, lr_factor);
    }
  }
  // With every |g| <= G, |m| <= M, 0 <= v <= V and t >= 0 finite:
  // |m'| <= max(M, G), v' <= max(V, G^2), 1 - beta^t' >= 1 - beta, so
  // |m_hat| <= max(M, G) / (1 - beta1), v_hat <= v' / (1 - beta2), and the
  // change is at most |lr| |m_hat| / eps.
  bool StepFiniteFor(const float* state, size_t n, float max_abs_g,
                     float lr_factor) const override {
    // |m|; v and t signed, so a negative one fails the proof.
    uint32_t bits[3];
    MaxSlotBits<3>(state, n, {0x7fffffffu, 0xffffffffu, 0xffffffffu}, bits);
    const double max_m = BoundOf(bits[0]);
    const double max_v = BoundOf(bits[1]);
    const double max_t = BoundOf(bits[2]);
    if (max_m < 0.0 || max_v < 0.0 || max_t < 0.0 || !(max_abs_g >= 0.0f)) {
      return false;
    }
    const double g = max_abs_g;
    const double m_hat = std::max(max_m, g) / (1.0 - beta1_) * kRounding;
    const double v_hat = std::max(max_v, g * g) / (1.0 - beta2_) * kRounding;
    const double lr = std::abs(double{lr_} * lr_factor);
    return m_hat <= 1e38 && v_hat <= 1e38 &&
           lr * m_hat * std::max(1.0, 1.0 / epsilon_) <= kSafeChange;
  }

 private:
  template <typename G>
  void RunSharedStep(float* __restrict w, float* __restrict state,
                     const G* __restrict g, size_t n, float lr_factor,
                     float t) const {
    const float step = lr_ * lr_factor;
    const float b1 = beta1_, b2 = beta2_, eps = epsilon_;
    const float c1 = 1.0f - std::pow(b1, t);
    const float c2 = 1.0f - std::pow(b2, t);
    for (size_t i = 0; i < n; ++i) {
      const float gi = GradAt(g, i);
      const float m = b1 * state[3 * i] + (1.0f - b1) * gi;
      const float v = b2 * state[3 * i + 1] + (1.0f - b2) * gi * gi;
      state[3 * i] = m;
      state[3 * i + 1] = v;
      state[3 * i + 2] = t;
      w[i] -= step * (m / c1) / (std::sqrt(v / c2) + eps);
    }
  }
  // The same step, each element with its own count (two pows each).
  template <typename G>
  void RunEach(float* w, float* state, const G* g, size_t n,
               float lr_factor) const {
    for (size_t i = 0; i < n; ++i) {
      RunSharedStep(w + i, state + 3 * i, GradFrom(g, i), 1, lr_factor,
                    state[3 * i + 2] + 1.0f);
    }
  }

  const float lr_, beta1_, beta2_, epsilon_;
};

// FTRL-Proximal, per coordinate (slots z, n); alpha = lr * lr_factor.
class FtrlOptimizer final : public RuleOptimizer<FtrlOptimizer> {
 public:
  FtrlOptimizer(float alpha, float beta, float l1, float l2)
      : alpha_(alpha), beta_(beta), l1_(l1), l2_(l2) {}
  int state_width() const override { return 2; }
  void InitState(float* state, size_t n) const override {
    std::fill(state, state + 2 * n, 0.0f);
  }
  template <typename G>
  void Run(float* __restrict w, float* __restrict state, const G* __restrict g,
           size_t n, float lr_factor) const {
    const float alpha = alpha_ * lr_factor;
    if (alpha <= 0.0f) return;
    const float beta = beta_, l1 = l1_, l2 = l2_;
    for (size_t i = 0; i < n; ++i) {
      const float gi = GradAt(g, i);
      const float acc = state[2 * i + 1];
      const float acc_new = acc + gi * gi;
      const float sigma = (std::sqrt(acc_new) - std::sqrt(acc)) / alpha;
      const float z = state[2 * i] + (gi - sigma * w[i]);
      state[2 * i] = z;
      state[2 * i + 1] = acc_new;
      // Both sides computed, one kept: a select, not a branch.
      const float sign = z > 0.0f ? 1.0f : -1.0f;
      const float solved =
          -(z - sign * l1) / ((beta + std::sqrt(acc_new)) / alpha + l2);
      w[i] = std::abs(z) <= l1 ? 0.0f : solved;
    }
  }

 private:
  const float alpha_, beta_, l1_, l2_;
};

}  // namespace

bool Optimizer::StaysFinite(const float* w, const float* state, const float* g,
                            size_t n, float lr_factor, float max_abs_g) const {
  if (max_abs_g < 0.0f) max_abs_g = MaxAbs(absl::MakeConstSpan(g, n));
  if (!std::isfinite(max_abs_g)) return false;  // a NaN or infinite gradient
  if (StepFiniteFor(state, n, max_abs_g, lr_factor)) return true;
  return TrialStaysFinite(
      [&](float* w_copy, float* state_copy, const float* g_part, size_t count) {
        Apply(w_copy, state_copy, g_part, count, lr_factor);
      },
      w, state, g, n, static_cast<size_t>(state_width()));
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
