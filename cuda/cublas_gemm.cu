#include "cuda/cublas_gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_status.h"

namespace taups::cuda {
namespace {

// Owns one cudaMalloc'ed float array; grows on demand, never shrinks.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() {
    if (data_ != nullptr) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Makes room for `count` floats; old contents are not preserved.
  absl::Status Reserve(size_t count) {
    if (count <= capacity_) return absl::OkStatus();
    if (data_ != nullptr) {
      cudaFree(data_);
      data_ = nullptr;
      capacity_ = 0;
    }
    void* raw = nullptr;
    RETURN_IF_ERROR(CudaStatus(cudaMalloc(&raw, count * sizeof(float)),
                               "cudaMalloc"));
    data_ = static_cast<float*>(raw);
    capacity_ = count;
    return absl::OkStatus();
  }
  float* get() const { return data_; }

 private:
  float* data_ = nullptr;
  size_t capacity_ = 0;
};

// Owns a non-blocking CUDA stream.
class Stream {
 public:
  Stream() = default;
  ~Stream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  absl::Status Init() {
    return CudaStatus(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
        "cudaStreamCreateWithFlags");
  }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

// Owns a cuBLAS handle.
class BlasHandle {
 public:
  BlasHandle() = default;
  ~BlasHandle() {
    if (handle_ != nullptr) cublasDestroy(handle_);
  }
  BlasHandle(const BlasHandle&) = delete;
  BlasHandle& operator=(const BlasHandle&) = delete;

  absl::Status Init(cudaStream_t stream) {
    RETURN_IF_ERROR(CublasStatus(cublasCreate(&handle_), "cublasCreate"));
    RETURN_IF_ERROR(
        CublasStatus(cublasSetStream(handle_, stream), "cublasSetStream"));
    // Plain FP32 math: results must match the CPU backend to float rounding.
    return CublasStatus(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH),
                        "cublasSetMathMode");
  }
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// Floats spanned by a row-major rows x cols matrix with leading dimension ld.
size_t SpanOf(int rows, int cols, int ld) {
  if (rows == 0 || cols == 0) return 0;
  return static_cast<size_t>(rows - 1) * static_cast<size_t>(ld) +
         static_cast<size_t>(cols);
}

absl::Status CheckOperand(const char* name, const float* p, int rows, int cols,
                          int ld) {
  if (ld < (cols > 1 ? cols : 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Sgemm: leading dimension of ", name, " is ", ld, ", need >= ", cols));
  }
  if (p == nullptr && rows > 0 && cols > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sgemm: ", name, " is null"));
  }
  return absl::OkStatus();
}

}  // namespace

struct CublasGemm::Impl {
  int device = 0;
  std::string description;
  // Destruction runs bottom-up: buffers and handle go before the stream.
  Stream stream;
  BlasHandle blas;
  DeviceBuffer a, b, c;
};

CublasGemm::CublasGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CublasGemm::~CublasGemm() = default;

absl::StatusOr<std::unique_ptr<CublasGemm>> CublasGemm::Create(int device) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  ASSIGN_OR_RETURN(impl->description, DeviceDescription(device));
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(device), "cudaSetDevice"));
  RETURN_IF_ERROR(impl->stream.Init());
  RETURN_IF_ERROR(impl->blas.Init(impl->stream.get()));
  return std::unique_ptr<CublasGemm>(new CublasGemm(std::move(impl)));
}

const std::string& CublasGemm::device_description() const {
  return impl_->description;
}

absl::Status CublasGemm::Sgemm(bool trans_a, bool trans_b, int m, int n, int k,
                               float alpha, const float* a, int lda,
                               const float* b, int ldb, float beta, float* c,
                               int ldc) {
  if (m < 0 || n < 0 || k < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Sgemm: negative size m=", m, " n=", n, " k=", k));
  }
  const int a_rows = trans_a ? k : m, a_cols = trans_a ? m : k;
  const int b_rows = trans_b ? n : k, b_cols = trans_b ? k : n;
  RETURN_IF_ERROR(CheckOperand("A", a, a_rows, a_cols, lda));
  RETURN_IF_ERROR(CheckOperand("B", b, b_rows, b_cols, ldb));
  RETURN_IF_ERROR(CheckOperand("C", c, m, n, ldc));
  if (m == 0 || n == 0) return absl::OkStatus();
  if (k == 0 || alpha == 0.0f) {
    // Nothing to multiply: C = beta * C, done here (beta == 0 writes zeros).
    for (int i = 0; i < m; ++i) {
      float* row = c + static_cast<size_t>(i) * ldc;
      for (int j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return absl::OkStatus();
  }

  Impl& s = *impl_;
  const cudaStream_t stream = s.stream.get();
  const size_t a_count = SpanOf(a_rows, a_cols, lda);
  const size_t b_count = SpanOf(b_rows, b_cols, ldb);
  const size_t c_count = SpanOf(m, n, ldc);
  RETURN_IF_ERROR(CudaStatus(cudaSetDevice(s.device), "cudaSetDevice"));
  RETURN_IF_ERROR(s.a.Reserve(a_count));
  RETURN_IF_ERROR(s.b.Reserve(b_count));
  RETURN_IF_ERROR(s.c.Reserve(c_count));
  if (a_count > 0) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(s.a.get(), a, a_count * sizeof(float),
                        cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync(A)"));
  }
  if (b_count > 0) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(s.b.get(), b, b_count * sizeof(float),
                        cudaMemcpyHostToDevice, stream),
        "cudaMemcpyAsync(B)"));
  }
  // C moves row by row (pitch ldc) so padding between rows is never
  // written back. cuBLAS reads C only when beta != 0.
  const size_t c_pitch = static_cast<size_t>(ldc) * sizeof(float);
  const size_t c_width = static_cast<size_t>(n) * sizeof(float);
  if (beta != 0.0f) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpy2DAsync(s.c.get(), c_pitch, c, c_pitch, c_width, m,
                          cudaMemcpyHostToDevice, stream),
        "cudaMemcpy2DAsync(C in)"));
  }
  // cuBLAS is column-major. A row-major matrix read column-major is its
  // transpose, so row-major C = op(A) op(B) is column-major
  // C^T = op(B)^T op(A)^T: swap the operands and m/n, keep the ops.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  RETURN_IF_ERROR(CublasStatus(
      cublasSgemm(s.blas.get(), op_b, op_a, n, m, k, &alpha, s.b.get(), ldb,
                  s.a.get(), lda, &beta, s.c.get(), ldc),
      "cublasSgemm"));
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpy2DAsync(c, c_pitch, s.c.get(), c_pitch, c_width, m,
                        cudaMemcpyDeviceToHost, stream),
      "cudaMemcpy2DAsync(C out)"));
  return CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace taups::cuda
