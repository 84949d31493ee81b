// Top-k on the device: selection in codec_math's rank order, gathering the
// kept values, scattering them back when decoding, and the error-feedback
// steps of a top-k push.
//
// Internal to cuda/: uses CUDA types. Functions only enqueue work on
// `stream`, except that EnqueueSelectTopK may grow its scratch (cudaMalloc,
// which waits for the device).
#ifndef TAUPS_CUDA_CODEC_TOPK_KERNELS_H_
#define TAUPS_CUDA_CODEC_TOPK_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "cuda/device_bytes.h"

namespace taups::cuda {

// Work areas of the selection, kept across calls.
struct TopKScratch {
  DeviceBytes keys_in, keys_out, order_in, order_out, sort_temp;
};

// Writes the indices of the k highest-ranked of values[0, n) (larger
// magnitude first, NaN first of all, the lower index first on ties: exactly
// the CPU's SelectTopK) to kept[0, k) in increasing order. A stable radix
// sort of (TopKSortKey, index) pairs, then a sort of the k kept indices.
absl::Status EnqueueSelectTopK(const float* values, uint32_t n, uint32_t k,
                               uint32_t* kept, TopKScratch* scratch,
                               cudaStream_t stream);

// out[j] = values[kept[j]] for j < k.
cudaError_t EnqueueGather(const float* values, const uint32_t* kept,
                          uint32_t k, float* out, cudaStream_t stream);

// out[i] = a[i] + b[i]: error feedback's corrected gradient.
cudaError_t EnqueueAdd(const float* a, const float* b, uint32_t n, float* out,
                       cudaStream_t stream);

// Error feedback after a top-k encode, unless *first_bad != kNoBadIndex:
// residual[i] = corrected[i] - 0 for every i, then
// residual[kept[j]] = kept_residual[j] for the kept entries.
cudaError_t EnqueueTopKResidual(const float* corrected, uint32_t n,
                                const uint32_t* kept,
                                const float* kept_residual, uint32_t k,
                                float* residual,
                                const unsigned long long* first_bad,
                                cudaStream_t stream);

// Decoding: out[0, n) = 0, then out[kept[j]] = values[j]. Sets *error to 1
// when an index is not below n or not above the previous one (such an entry
// is not written).
cudaError_t EnqueueScatterKept(const uint32_t* kept, const float* values,
                               uint32_t k, uint32_t n, float* out,
                               uint32_t* error, cudaStream_t stream);

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CODEC_TOPK_KERNELS_H_
