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
  if (pending_ != nullptr) cudaFree(pending_);
}

absl::Status DeviceGradient::EnsureResiduals() {
  for (float** buffer : {&residual_, &pending_}) {
    if (*buffer != nullptr || n_ == 0) continue;
    void* raw = nullptr;
    const absl::Status allocated =
        CudaStatus(cudaMalloc(&raw, n_ * sizeof(float)), "cudaMalloc residual");
    if (!allocated.ok()) return allocated;
    *buffer = static_cast<float*>(raw);
    const absl::Status zeroed = CudaStatus(
        cudaMemset(*buffer, 0, n_ * sizeof(float)), "cudaMemset residual");
    if (!zeroed.ok()) return zeroed;
  }
  return absl::OkStatus();
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
  if (!commit_status_.ok()) return commit_status_;
  if (!error_feedback) {
    staged_ = false;  // a push without feedback commits nothing
    return codec_->Encode(values_ + offset, count, options, offset, block);
  }
  const absl::Status ready = EnsureResiduals();
  if (!ready.ok()) return ready;
  // The slice starts from the committed residual and leaves its new one in
  // pending_; the committed residual changes only in FinishPush. (The
  // codec's stream is a blocking one, ordered after this copy.)
  const absl::Status copied = CudaStatus(
      cudaMemcpy(pending_ + offset, residual_ + offset, count * sizeof(float),
                 cudaMemcpyDeviceToDevice),
      "cudaMemcpy pending residual");
  if (!copied.ok()) return copied;
  staged_ = true;
  return codec_->EncodeWithFeedback(values_ + offset, pending_ + offset, count,
                                    offset, options, block);
}

void DeviceGradient::FinishPush(
    const std::vector<std::pair<uint64_t, uint64_t>>& parts,
    const std::vector<bool>& delivered) {
  // Nothing pending: the push did not use error feedback.
  if (!staged_ || residual_ == nullptr || pending_ == nullptr) return;
  staged_ = false;
  uint64_t covered = 0;
  bool all_delivered = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    covered += parts[i].second;
    all_delivered = all_delivered && i < delivered.size() && delivered[i];
  }
  if (all_delivered && covered == n_) {
    std::swap(residual_, pending_);  // every element has its new residual
    return;
  }
  for (size_t i = 0; i < parts.size() && i < delivered.size(); ++i) {
    if (!delivered[i]) continue;
    const auto [offset, count] = parts[i];
    if (offset > n_ || count > n_ - offset) continue;
    const absl::Status copied = CudaStatus(
        cudaMemcpy(residual_ + offset, pending_ + offset, count * sizeof(float),
                   cudaMemcpyDeviceToDevice),
        "cudaMemcpy commit residual");
    commit_status_.Update(copied);  // keeps the first error
  }
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
