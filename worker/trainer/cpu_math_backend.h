// MathBackend on the host CPU: single-threaded loops ordered so the innermost
// loop walks contiguous memory (i-k-j for C = A B, row dot products for
// C = A B^T), which compilers vectorise at -O2.
//
// Thread-compatible (the object holds a scratch buffer for A^T B^T).
#ifndef TAUPS_WORKER_TRAINER_CPU_MATH_BACKEND_H_
#define TAUPS_WORKER_TRAINER_CPU_MATH_BACKEND_H_

#include <vector>

#include "worker/trainer/math_backend.h"

namespace taups::trainer {

class CpuMathBackend final : public MathBackend {
 public:
  std::string_view name() const override { return "cpu"; }
  std::string description() const override { return "host CPU (1 thread)"; }

  absl::Status Sgemm(Transpose trans_a, Transpose trans_b, int m, int n, int k,
                     float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc) override;

 private:
  std::vector<float> scratch_;  // A transposed, for the A^T B^T case
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CPU_MATH_BACKEND_H_
