// DeviceGradient: a gradient in GPU memory that encodes its own slices, for
// Client::PushDenseWith. The codecs run on the device (DeviceCodec, the same
// bytes as the CPU codecs); only the encoded blocks cross to the host. With
// error feedback the residual lives on the device too (allocated, zeroed, on
// first use).
//
//   auto gradient = taups::cuda::DeviceGradient::Create(d_grad, n);
//   ... each step: write the new gradient into d_grad on the device ...
//   client->PushDenseWith("weights", **gradient);
//
// Plain C++ header; only defined with CUDA (TAUPS_HAVE_CUDA).
// Thread-compatible: one push at a time (the client serializes the pushes
// of one table through its encoder).
#ifndef TAUPS_CUDA_DEVICE_GRADIENT_H_
#define TAUPS_CUDA_DEVICE_GRADIENT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cuda/codec_kernels.h"
#include "taups/compression.h"

namespace taups::cuda {

class DeviceGradient final : public SliceEncoder {
 public:
  // `device_values` holds `n` floats on `device` and must outlive this
  // object; its contents are read at each push.
  static absl::StatusOr<std::unique_ptr<DeviceGradient>> Create(
      const float* device_values, uint64_t n, int device = 0);
  ~DeviceGradient() override;

  uint64_t size() const override { return n_; }
  absl::Status EncodeSlice(uint64_t offset, uint64_t count,
                           const CodecOptions& options, bool error_feedback,
                           std::string* block) override;

  // Copies the device residual to `out` (n floats; zeros before any
  // error-feedback push). For tests and inspection.
  absl::Status CopyResidual(float* out) const;

 private:
  DeviceGradient(const float* values, uint64_t n,
                 std::unique_ptr<DeviceCodec> codec);

  const float* const values_;
  const uint64_t n_;
  std::unique_ptr<DeviceCodec> codec_;
  float* residual_ = nullptr;  // device; n floats once error feedback is used
};

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_DEVICE_GRADIENT_H_
