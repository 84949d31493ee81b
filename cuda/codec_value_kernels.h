// Kernels for the value payloads of common/codec_format.h (none, fp16, bf16,
// int8/int4/int2, sign): what DeviceCodec enqueues for a whole block, or for
// the kept values of a top-k block. Per-element math is codec_math's, so the
// bytes equal the CPU codec's.
//
// Internal to cuda/: uses CUDA types. Every function only enqueues work on
// `stream`; nothing here synchronizes. Payload pointers must be 4-byte
// aligned (scales and packed codes are written as 32-bit words).
#ifndef TAUPS_CUDA_CODEC_VALUE_KERNELS_H_
#define TAUPS_CUDA_CODEC_VALUE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "taups/compression.h"

namespace taups::cuda {

// *first_bad when every input was finite.
inline constexpr unsigned long long kNoBadIndex = ~0ull;

// Element i of the values to encode: a[i] + b[i] when b is set (error
// feedback's gradient + residual, added as the CPU adds them), else a[i].
struct ValueSource {
  const float* a = nullptr;
  const float* b = nullptr;
};

// Writes the payload of m values under a value codec or sign (`codec`, not
// top-k) at `payload`; `index_base` numbers element 0 for stochastic
// rounding. Scaled codecs (int*, sign) lower *first_bad to the lowest index
// of a NaN or infinite input (the caller sets it to kNoBadIndex first); the
// payload is then meaningless. With `residual` set, residual[i] = x_i -
// decode(x_i) for every i, and nothing is written to it when an input was
// refused; `residual` may be source.b (each element is read, then written,
// by one thread). `bucket_max` is scratch for ceil(m / bucket) words.
cudaError_t EnqueueEncodeValues(ValueSource source, uint32_t m,
                                CodecKind codec, uint32_t bucket,
                                bool stochastic, uint64_t seed,
                                uint64_t index_base, uint8_t* payload,
                                float* residual, uint32_t* bucket_max,
                                unsigned long long* first_bad,
                                cudaStream_t stream);

// Decodes a payload of m values under `codec` into out[0, m). Sets *error to
// 1 when a scale or a code is invalid, or unused bits are set, by the rules
// of taups::DecodeBlock; `out` is then garbage.
cudaError_t EnqueueDecodeValues(const uint8_t* payload, uint32_t m,
                                CodecKind codec, uint32_t bucket, float* out,
                                uint32_t* error, cudaStream_t stream);

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CODEC_VALUE_KERNELS_H_
