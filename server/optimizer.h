// Server-side update rules.
//
// An Optimizer applies one gradient to a run of parameters, with `state_width`
// floats of per-parameter state stored beside them, interleaved:
// state[i * state_width() + k] is slot k of element i of the run.
//
// Apply's pointers must not overlap one another (w, state and g are three
// separate arrays); the rules' loops are written on that promise so the
// compiler vectorises them. Every rule is element-wise: element i's result
// depends only on w[i], its state and g[i], never on a sum over the run, so a
// run gives the same bits however it is cut into calls.
//
// Optimizers are immutable after construction and thread-safe; callers
// serialize access to the parameters they update.
#ifndef TAUPS_SERVER_OPTIMIZER_H_
#define TAUPS_SERVER_OPTIMIZER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "taups/table_config.h"

namespace taups {

// Rows of a sparse stripe to update in one call (Optimizer::ApplyRows): row
// k's parameters are arena + slots[k] * row_stride (`dim` values, then their
// state), its gradient grads + grad_rows[k] * dim. Slots are distinct.
struct RowBatch {
  float* arena = nullptr;
  size_t row_stride = 0;
  const uint32_t* slots = nullptr;
  const float* grads = nullptr;
  const uint32_t* grad_rows = nullptr;
  size_t count = 0;
  uint32_t dim = 0;
};

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
  // Apply with the gradient as n little-endian floats at `g_bytes`, any
  // alignment (a run of a received payload, read where it lies): the same
  // bits as Apply on the same floats. `g_bytes` must not overlap w or state.
  virtual void ApplyBytes(float* w, float* state, const char* g_bytes,
                          size_t n, float lr_factor) const = 0;
  // Apply on every row of `batch`, in order: one virtual call for a stripe's
  // rows instead of one per row; the same bits as row-by-row Apply.
  virtual void ApplyRows(const RowBatch& batch, float lr_factor) const = 0;

  // Whether one step with every |g| <= max_abs_g leaves finite parameters
  // and state finite whatever their values (a proof from the update rule,
  // not a test). False means "not provable": ask StaysFinite.
  virtual bool StepAlwaysFinite(float /*max_abs_g*/, float /*lr_factor*/) const {
    return false;
  }
  // Like StepAlwaysFinite, for `n` parameters whose state is `state`: a
  // proof from bounds of the state read in one branch-free pass (finite
  // parameters stay finite under any change of at most 1e30). False means
  // "not provable". The default knows no more than StepAlwaysFinite.
  virtual bool StepFiniteFor(const float* /*state*/, size_t /*n*/,
                             float max_abs_g, float lr_factor) const {
    return StepAlwaysFinite(max_abs_g, lr_factor);
  }
  // Whether Apply(w, state, g, n, lr_factor) would leave every parameter and
  // state value finite; changes nothing. `max_abs_g` is max |g[i]| when the
  // caller knows it (or any larger bound), negative otherwise. Tries
  // StepFiniteFor first and otherwise runs the step on copies.
  bool StaysFinite(const float* w, const float* state, const float* g,
                   size_t n, float lr_factor, float max_abs_g = -1.0f) const;
  // Whether ApplyRows(batch, lr_factor) would leave every row's parameters
  // and state finite; changes nothing (the arena is only read). The same
  // answer as StaysFinite on each row in turn, but one virtual call for the
  // batch: a row is proven from its state's bounds (StepFiniteFor, called
  // without virtual dispatch) or else tried on copies. `max_abs_g` bounds
  // every |g| of the batch's rows (not negative).
  virtual bool RowsStayFinite(const RowBatch& batch, float lr_factor,
                              float max_abs_g) const = 0;
};

// The rule for `config`; the config must have passed TableConfig::Validate().
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerConfig& config);

}  // namespace taups

#endif  // TAUPS_SERVER_OPTIMIZER_H_
