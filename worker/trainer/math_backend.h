// The dense linear algebra the trainers need, behind one small interface so
// the same model code runs on the CPU or on a CUDA device.
//
// Matrices are row-major host arrays with an explicit leading dimension (the
// number of floats between the starts of consecutive rows). Sgemm computes
//   C = alpha * op(A) * op(B) + beta * C
// with op(A) m x k, op(B) k x n, C m x n; op(X) = X^T when its Transpose is
// kYes. beta == 0 means C's input is ignored. Results of different backends
// agree to float rounding (they may sum in different orders).
//
// Thread-compatibility: a backend object keeps scratch state (buffers, a
// stream); use one object per thread.
#ifndef TAUPS_WORKER_TRAINER_MATH_BACKEND_H_
#define TAUPS_WORKER_TRAINER_MATH_BACKEND_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace taups::trainer {

enum class Transpose { kNo, kYes };

class MathBackend {
 public:
  virtual ~MathBackend() = default;

  // "cpu" or "cuda": the value reported in summaries.
  virtual std::string_view name() const = 0;
  // Human-readable description, e.g. the GPU model.
  virtual std::string description() const = 0;

  // See the file comment. INVALID_ARGUMENT for negative sizes, leading
  // dimensions below the row length, or null non-empty operands; the
  // device's error otherwise (C is then unspecified).
  virtual absl::Status Sgemm(Transpose trans_a, Transpose trans_b, int m,
                             int n, int k, float alpha, const float* a,
                             int lda, const float* b, int ldb, float beta,
                             float* c, int ldc) = 0;
};

// Checks the Sgemm arguments shared by every backend (see Sgemm).
absl::Status ValidateSgemmArgs(Transpose trans_a, Transpose trans_b, int m,
                               int n, int k, const float* a, int lda,
                               const float* b, int ldb, const float* c,
                               int ldc);

// Which backend --device asks for.
enum class DeviceKind { kAuto, kCpu, kCuda };

// "auto" | "cpu" | "cuda"; INVALID_ARGUMENT otherwise.
absl::StatusOr<DeviceKind> ParseDeviceKind(std::string_view text);

// True when this build has CUDA support and the process can see a device.
bool CudaDeviceAvailable();

// kCpu: the CPU backend. kCuda: the cuBLAS backend on device 0, or
// FAILED_PRECONDITION explaining why none is usable (no CUDA in this build, or
// no device/driver at run time). kAuto: CUDA when a device is usable, else CPU.
absl::StatusOr<std::unique_ptr<MathBackend>> CreateMathBackend(DeviceKind kind);

}  // namespace taups::trainer

#endif  // TAUPS_WORKER_TRAINER_MATH_BACKEND_H_
