#include "worker/trainer/cuda_math_backend.h"

#include <utility>

#include "common/status_macros.h"

#if TAUPS_HAVE_CUDA
#include "cuda/cublas_gemm.h"
#include "cuda/cuda_device.h"
#endif

namespace taups::cuda {
#if !TAUPS_HAVE_CUDA
// Never constructed without CUDA; complete so unique_ptr can destroy it.
class CublasGemm {};
#endif
}  // namespace taups::cuda

namespace taups::trainer {

CudaMathBackend::CudaMathBackend(std::unique_ptr<cuda::CublasGemm> gemm)
    : gemm_(std::move(gemm)) {}
CudaMathBackend::~CudaMathBackend() = default;

#if TAUPS_HAVE_CUDA

bool CudaMathBackend::DeviceAvailable() { return cuda::HasUsableDevice(); }

absl::StatusOr<std::unique_ptr<MathBackend>> CudaMathBackend::Create() {
  if (!cuda::HasUsableDevice()) {
    return absl::FailedPreconditionError(
        "--device=cuda: this build has CUDA, but no usable CUDA device was "
        "found at run time (no GPU, or no/old NVIDIA driver); use "
        "--device=cpu or --device=auto");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<cuda::CublasGemm> gemm,
                   cuda::CublasGemm::Create(0));
  return std::unique_ptr<MathBackend>(new CudaMathBackend(std::move(gemm)));
}

std::string CudaMathBackend::description() const {
  return gemm_->device_description();
}

absl::Status CudaMathBackend::Sgemm(Transpose trans_a, Transpose trans_b,
                                    int m, int n, int k, float alpha,
                                    const float* a, int lda, const float* b,
                                    int ldb, float beta, float* c, int ldc) {
  RETURN_IF_ERROR(ValidateSgemmArgs(trans_a, trans_b, m, n, k, a, lda, b, ldb,
                                    c, ldc));
  return gemm_->Sgemm(trans_a == Transpose::kYes, trans_b == Transpose::kYes,
                      m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#else  // !TAUPS_HAVE_CUDA

bool CudaMathBackend::DeviceAvailable() { return false; }

absl::StatusOr<std::unique_ptr<MathBackend>> CudaMathBackend::Create() {
  return absl::FailedPreconditionError(
      "--device=cuda: this build has no CUDA support (no toolkit found at "
      "configure time); use --device=cpu or --device=auto");
}

std::string CudaMathBackend::description() const { return "unavailable"; }

absl::Status CudaMathBackend::Sgemm(Transpose, Transpose, int, int, int, float,
                                    const float*, int, const float*, int,
                                    float, float*, int) {
  return absl::FailedPreconditionError("CUDA support is not compiled in");
}

#endif  // TAUPS_HAVE_CUDA

}  // namespace taups::trainer
