// The codecs of common/codec.h computed on a CUDA device: encode float32
// values that live in device memory into a block, and decode a block into
// device memory. Each produces the SAME BYTES as the CPU codec (EncodeBlock)
// for the same values, options and index base, stochastic rounding included:
// both do their per-element arithmetic through common/codec_math.h, every
// scale comes from an exact reduction (a maximum, or the sign codec's L1 norm
// summed in double in element order by one thread per bucket), and top-k
// selection follows codec_math::TopKSortKey, the radix form of RanksAbove.
//
//   auto codec = taups::cuda::DeviceCodec::Create(/*device=*/0);
//   if (!codec.ok()) ...                   // no device, driver or memory
//   std::string block;
//   RETURN_IF_ERROR((*codec)->Encode(d_grad, n, options, 0, &block));
//   ... block travels ...
//   RETURN_IF_ERROR((*codec)->Decode(block, d_out, n));
//
// Device pointers are plain `float*` into memory of the codec's device. Every
// call is synchronous: it runs on the codec's own stream, which is ordered
// after work on the legacy default stream (a blocking stream); work on other
// streams that writes the inputs must be finished before the call. When a
// call returns, its outputs (block, residual, decoded values) are complete.
//
// Limits: a block of at most kMaxDeviceElements values (indices are 32-bit on
// the device; top-k blocks carry 32-bit indices anyway).
//
// Plain C++ header (pimpl): no CUDA headers. Only defined when the build has
// CUDA (TAUPS_HAVE_CUDA). Thread-compatible: one DeviceCodec must not be used
// by two threads at once; separate objects are independent.
#ifndef TAUPS_CUDA_CODEC_KERNELS_H_
#define TAUPS_CUDA_CODEC_KERNELS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/codec_format.h"
#include "taups/compression.h"

namespace taups::cuda {

// The most values one device call takes: element indices stay 32-bit, with
// room for a whole bucket past the last element.
inline constexpr uint64_t kMaxDeviceElements =
    (uint64_t{1} << 32) - (uint64_t{1} << 21);

class DeviceCodec {
 public:
  // Selects `device` and creates a stream and a small pinned status buffer.
  // Scratch space is allocated on first use and kept (it grows to what the
  // largest call needed; top-k needs about 16 bytes per input value).
  // INVALID_ARGUMENT for a device that does not exist; UNAVAILABLE or
  // INTERNAL when CUDA fails.
  static absl::StatusOr<std::unique_ptr<DeviceCodec>> Create(int device = 0);

  ~DeviceCodec();
  DeviceCodec(const DeviceCodec&) = delete;
  DeviceCodec& operator=(const DeviceCodec&) = delete;

  // taups::EncodeBlock of device_values[0, n) into `block` (host memory):
  // the header is made on the host, the payload on the device and copied
  // back once. The same errors as EncodeBlock (invalid options; a NaN or
  // infinite input to a scaled codec, naming the same index), plus
  // INVALID_ARGUMENT for n > kMaxDeviceElements or a null pointer with n > 0,
  // and the CUDA error if the device fails. On error `block` is unspecified.
  absl::Status Encode(const float* device_values, uint64_t n,
                      const CodecOptions& options, uint64_t index_base,
                      std::string* block);

  // ErrorFeedback::EncodeRange on the device, for the range whose gradient
  // is device_gradient[0, n) and whose residual is device_residual[0, n)
  // (the residual of this range, not of the whole tensor); `offset` is the
  // range's first index in the tensor and numbers the elements for
  // stochastic rounding. corrected = gradient + residual is encoded into
  // `block`, then residual = corrected - decode(block), fused into the
  // quantize kernels. The residual is left unchanged when encoding fails.
  // Bit-identical to the CPU's residual wherever that is not NaN (a NaN
  // residual is NaN here too, perhaps with other payload bits).
  absl::Status EncodeWithFeedback(const float* device_gradient,
                                  float* device_residual, uint64_t n,
                                  uint64_t offset, const CodecOptions& options,
                                  std::string* block);

  // ParseHeader(block, n) and taups::DecodeBlock into device_out[0, n):
  // refuses exactly the blocks the CPU refuses, with the same status and
  // message (scales and codes are checked on the device; the message of a
  // refused block is worked out on the host). On error device_out holds
  // garbage.
  absl::Status Decode(absl::string_view block, float* device_out, uint64_t n);

  // Encode into device memory: device_block (4-byte aligned) receives the
  // whole block, EncodedBytes(options, n) bytes, header included.
  absl::Status EncodeToDeviceBlock(const float* device_values, uint64_t n,
                                   const CodecOptions& options,
                                   uint64_t index_base, char* device_block);

  // taups::DecodeBlock of a block held in device memory (4-byte aligned,
  // BlockBytes(header) bytes) whose header the caller got from ParseHeader
  // (say, on the host copy the block arrived in); device_out receives
  // header.element_count floats. Checks scales, codes and indices like
  // Decode; INVALID_ARGUMENT for a misaligned block.
  absl::Status DecodeDeviceBlock(const char* device_block,
                                 const BlockHeader& header, float* device_out);

  // "NAME (sm_XY, N MiB)" of the device this codec runs on.
  const std::string& device_description() const;

 private:
  struct Impl;
  explicit DeviceCodec(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-off forms on the current CUDA device: each makes a DeviceCodec (a
// stream and fresh scratch) for the one call. Keep a DeviceCodec for
// repeated calls.
absl::Status EncodeOnDevice(const float* device_values, uint64_t n,
                            const CodecOptions& options, uint64_t index_base,
                            std::string* block);
absl::Status EncodeWithFeedbackOnDevice(const float* device_gradient,
                                        float* device_residual, uint64_t n,
                                        uint64_t offset,
                                        const CodecOptions& options,
                                        std::string* block);
absl::Status DecodeToDevice(absl::string_view block, float* device_out,
                            uint64_t n);

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CODEC_KERNELS_H_
