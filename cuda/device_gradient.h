// DeviceGradient: a gradient in GPU memory that encodes its own slices, for
// Client::PushDenseWith. The codecs run on the device (DeviceCodec, the same
// bytes as the CPU codecs); only the encoded blocks cross to the host. With
// error feedback the residual lives on the device too (allocated, zeroed, on
// first use), and changes only by what the shards accepted, as the host
// path's: each slice encodes from the committed residual and writes its new
// residual into a pending buffer; FinishPush copies the delivered parts'
// pending residual over the committed one (or swaps the buffers when every
// part was delivered). A push refused by a shard, or one that failed to
// encode (a NaN in its last slice), leaves the residual as it was.
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
#include <utility>
#include <vector>

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
  // Fails with the error of an earlier FinishPush that could not commit
  // (a CUDA error), if any.
  absl::Status EncodeSlice(uint64_t offset, uint64_t count,
                           const CodecOptions& options, bool error_feedback,
                           std::string* block) override;
  void FinishPush(const std::vector<std::pair<uint64_t, uint64_t>>& parts,
                  const std::vector<bool>& delivered) override;

  // Copies the committed device residual to `out` (n floats; zeros before
  // any error-feedback push was accepted). For tests and inspection.
  absl::Status CopyResidual(float* out) const;

 private:
  DeviceGradient(const float* values, uint64_t n,
                 std::unique_ptr<DeviceCodec> codec);

  const float* const values_;
  const uint64_t n_;
  std::unique_ptr<DeviceCodec> codec_;
  // Allocates and zeroes the two residual buffers on first use.
  absl::Status EnsureResiduals();

  // Device; n floats each once error feedback is used.
  float* residual_ = nullptr;  // committed: what the next push adds
  float* pending_ = nullptr;   // this push's parts' residual-to-be
  bool staged_ = false;         // pending_ holds this push's residuals
  absl::Status commit_status_;  // a failed FinishPush copy, reported later
};

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_DEVICE_GRADIENT_H_
