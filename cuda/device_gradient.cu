#include "cuda/device_gradient.h"

#include <cuda_runtime.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "cuda/cuda_status.h"

namespace taups::cuda {

absl::StatusOr<std::unique_ptr<DeviceGradient>> DeviceGradient::Create(
    const float* device_values, uint64_t n, int device) {
  if (device_values == nullptr && n > 0) {
    return absl::InvalidArgumentError("DeviceGradient: null device pointer");
  }
  absl::StatusOr<std::unique_ptr<DeviceCodec>> codec = DeviceCodec::Create(device);
  if (!codec.ok()) return codec.status();
  return std::unique_ptr<DeviceGradient>(
      new DeviceGradient(device_values, n, std::move(*codec)));
}

DeviceGradient::DeviceGradient(const float* values, uint64_t n,
                               std::unique_ptr<DeviceCodec> codec)
    : values_(values), n_(n), codec_(std::move(codec)) {}

DeviceGradient::~DeviceGradient() {
  if (residual_ != nullptr) cudaFree(residual_);
}

absl::Status DeviceGradient::EncodeSlice(uint64_t offset, uint64_t count,
                                         const CodecOptions& options,
                                         bool error_feedback,
                                         std::string* block) {
  if (offset > n_ || count > n_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "DeviceGradient: slice [", offset, ", ", offset + count,
        ") passes the gradient's ", n_, " elements"));
  }
  if (!error_feedback) {
    return codec_->Encode(values_ + offset, count, options, offset, block);
  }
  if (residual_ == nullptr && n_ > 0) {
    void* raw = nullptr;
    absl::Status status =
        CudaStatus(cudaMalloc(&raw, n_ * sizeof(float)), "cudaMalloc residual");
    if (!status.ok()) return status;
    residual_ = static_cast<float*>(raw);
    status = CudaStatus(cudaMemset(residual_, 0, n_ * sizeof(float)),
                        "cudaMemset residual");
    if (!status.ok()) return status;
  }
  return codec_->EncodeWithFeedback(values_ + offset, residual_ + offset, count,
                                    offset, options, block);
}

absl::Status DeviceGradient::CopyResidual(float* out) const {
  if (residual_ == nullptr) {
    std::fill(out, out + n_, 0.0f);
    return absl::OkStatus();
  }
  return CudaStatus(cudaMemcpy(out, residual_, n_ * sizeof(float),
                               cudaMemcpyDeviceToHost),
                    "cudaMemcpy residual");
}

}  // namespace taups::cuda
