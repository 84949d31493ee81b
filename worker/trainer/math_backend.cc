#include "worker/trainer/math_backend.h"

#include "absl/strings/str_cat.h"
#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/cuda_math_backend.h"

namespace taups::trainer {
namespace {

absl::Status CheckOperand(const char* name, const float* p, int rows, int cols,
                          int ld) {
  if (ld < (cols > 1 ? cols : 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Sgemm: leading dimension of ", name, " is ", ld, ", need >= ", cols));
  }
  if (p == nullptr && rows > 0 && cols > 0) {
    return absl::InvalidArgumentError(absl::StrCat("Sgemm: ", name, " is null"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSgemmArgs(Transpose trans_a, Transpose trans_b, int m,
                               int n, int k, const float* a, int lda,
                               const float* b, int ldb, const float* c,
                               int ldc) {
  if (m < 0 || n < 0 || k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sgemm: negative size m=", m, " n=", n, " k=", k));
  }
  const bool ta = trans_a == Transpose::kYes;
  const bool tb = trans_b == Transpose::kYes;
  if (absl::Status s = CheckOperand("A", a, ta ? k : m, ta ? m : k, lda);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckOperand("B", b, tb ? n : k, tb ? k : n, ldb);
      !s.ok()) {
    return s;
  }
  return CheckOperand("C", c, m, n, ldc);
}

absl::StatusOr<DeviceKind> ParseDeviceKind(std::string_view text) {
  if (text == "auto") return DeviceKind::kAuto;
  if (text == "cpu") return DeviceKind::kCpu;
  if (text == "cuda") return DeviceKind::kCuda;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown device '", std::string(text), "'; expected auto, cpu or cuda"));
}

bool CudaDeviceAvailable() { return CudaMathBackend::DeviceAvailable(); }

absl::StatusOr<std::unique_ptr<MathBackend>> CreateMathBackend(
    DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu:
      return std::unique_ptr<MathBackend>(std::make_unique<CpuMathBackend>());
    case DeviceKind::kCuda:
      return CudaMathBackend::Create();
    case DeviceKind::kAuto:
      if (CudaDeviceAvailable()) return CudaMathBackend::Create();
      return std::unique_ptr<MathBackend>(std::make_unique<CpuMathBackend>());
  }
  return absl::InvalidArgumentError("unknown DeviceKind");
}

}  // namespace taups::trainer
