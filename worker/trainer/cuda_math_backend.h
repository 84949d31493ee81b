// MathBackend on a CUDA device through cuBLAS (taups::cuda::CublasGemm).
// Operands are host arrays: every call copies them to device scratch buffers
// that persist across calls, and waits for the result.
//
// In a build without CUDA the class still exists: DeviceAvailable() is false
// and Create() fails with FAILED_PRECONDITION, so callers need no #ifs.
//
// Thread-compatible: one object per thread.
#ifndef TAUPS_WORKER_TRAINER_CUDA_MATH_BACKEND_H_
#define TAUPS_WORKER_TRAINER_CUDA_MATH_BACKEND_H_

#include <memory>

#include "worker/trainer/math_backend.h"

namespace taups::cuda {
class CublasGemm;
}

namespace taups::trainer {

class CudaMathBackend final : public MathBackend {
 public:
  // True when the build has CUDA and a device is usable at run time.
  static bool DeviceAvailable();
  // A backend on device 0, or FAILED_PRECONDITION naming why none is usable;
  // other CUDA failures keep their code.
  static absl::StatusOr<std::unique_ptr<MathBackend>> Create();

  ~CudaMathBackend() override;

  std::string_view name() const override { return "cuda"; }
  std::string description() const override;

  absl::Status Sgemm(Transpose trans_a, Transpose trans_b, int m, int n, int k,
                     float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc) override;

 private:
  explicit CudaMathBackend(std::unique_ptr<cuda::CublasGemm> gemm);
  std::unique_ptr<cuda::CublasGemm> gemm_;
};

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_CUDA_MATH_BACKEND_H_
