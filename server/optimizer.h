// Server-side update rules.
//
// An Optimizer applies one gradient to a run of parameters, with `state_width`
// floats of per-parameter state stored beside them, interleaved:
// state[i * state_width() + k] is slot k of element i of the run.
//
// Optimizers are immutable after construction and thread-safe; callers
// serialize access to the parameters they update.
#ifndef TAUPS_SERVER_OPTIMIZER_H_
#define TAUPS_SERVER_OPTIMIZER_H_

#include <cstddef>
#include <memory>

#include "taups/table_config.h"

namespace taups {

class Optimizer {
 public:
  virtual ~Optimizer() = default;

  // Per-parameter state floats this rule keeps (0 for plain SGD).
  virtual int state_width() const = 0;
  // Writes the initial state for `n` parameters (state_width() * n floats).
  virtual void InitState(float* state, size_t n) const = 0;
  // w[i] -= update(g[i]) for i < n, with the learning rate multiplied by
  // `lr_factor` (the staleness treatment's factor; 1 when none).
  virtual void Apply(float* w, float* state, const float* g, size_t n,
                     float lr_factor) const = 0;

  // Whether one step with every |g| <= max_abs_g leaves finite parameters
  // and state finite whatever their values (a proof from the update rule,
  // not a test). False means "not provable": ask StaysFinite.
  virtual bool StepAlwaysFinite(float /*max_abs_g*/, float /*lr_factor*/) const {
    return false;
  }
  // Whether Apply(w, state, g, n, lr_factor) would leave every parameter and
  // state value finite. Runs the step on copies; changes nothing.
  bool StaysFinite(const float* w, const float* state, const float* g,
                   size_t n, float lr_factor) const;
};

// The rule for `config`; the config must have passed TableConfig::Validate().
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace taups

#endif  // TAUPS_SERVER_OPTIMIZER_H_
