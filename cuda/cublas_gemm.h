// Row-major single-precision GEMM on host matrices, computed by cuBLAS.
//
//   auto gemm = taups::cuda::CublasGemm::Create(/*device=*/0);
//   if (!gemm.ok()) ...  // no device, driver or memory
//   (*gemm)->Sgemm(false, true, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
//
// Sgemm computes C = alpha * op(A) * op(B) + beta * C where every matrix is
// row-major with the given leading dimension (elements between row starts),
// op(X) = X or X^T, op(A) is m x k, op(B) is k x n and C is m x n. With
// beta == 0 the input contents of C are ignored (NaNs there do not leak).
// Each call copies A, B (and C when beta != 0) to device buffers, runs cuBLAS
// on the object's own stream, copies C back and waits: the call is
// synchronous. Device buffers grow as needed and are kept across calls.
//
// Plain C++ header (pimpl): no CUDA headers. Thread-compatible: one object
// must not be used by two threads at once; separate objects are independent.
#ifndef TAUPS_CUDA_CUBLAS_GEMM_H_
#define TAUPS_CUDA_CUBLAS_GEMM_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taups::cuda {

class CublasGemm {
 public:
  // Selects `device`, creates a stream and a cuBLAS handle bound to it.
  // INVALID_ARGUMENT for a device index that does not exist; UNAVAILABLE,
  // RESOURCE_EXHAUSTED or INTERNAL when CUDA or cuBLAS fails.
  static absl::StatusOr<std::unique_ptr<CublasGemm>> Create(int device = 0);

  ~CublasGemm();
  CublasGemm(const CublasGemm&) = delete;
  CublasGemm& operator=(const CublasGemm&) = delete;

  // See the file comment. INVALID_ARGUMENT for negative sizes, leading
  // dimensions smaller than the row length, or null pointers to non-empty
  // matrices; the CUDA/cuBLAS error otherwise. On error C is unspecified.
  absl::Status Sgemm(bool trans_a, bool trans_b, int m, int n, int k,
                     float alpha, const float* a, int lda, const float* b,
                     int ldb, float beta, float* c, int ldc);

  // "NAME (sm_XY, N MiB)" of the device this object computes on.
  const std::string& device_description() const;

 private:
  struct Impl;
  explicit CublasGemm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CUBLAS_GEMM_H_
