// Top-k kernels and the selection built on cub's radix sort. Compiled with
// --fmad=false like every codec source.
#include "cuda/codec_topk_kernels.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "common/codec_math.h"
#include "common/status_macros.h"
#include "cuda/codec_value_kernels.h"
#include "cuda/cuda_status.h"

namespace taups::cuda {
namespace {

namespace cm = codec_math;

constexpr uint32_t kThreads = 256;

uint32_t Blocks(uint64_t threads) {
  return static_cast<uint32_t>((threads + kThreads - 1) / kThreads);
}

__device__ __forceinline__ uint32_t GlobalThread() {
  return blockIdx.x * blockDim.x + threadIdx.x;
}

__global__ void RankKeysKernel(const float* values, uint32_t n, uint32_t* keys,
                               uint32_t* order) {
  const uint32_t i = GlobalThread();
  if (i >= n) return;
  keys[i] = cm::TopKSortKey(values[i]);
  order[i] = i;
}

__global__ void IotaKernel(uint32_t n, uint32_t* out) {
  const uint32_t i = GlobalThread();
  if (i < n) out[i] = i;
}

__global__ void GatherKernel(const float* values, const uint32_t* kept,
                             uint32_t k, float* out) {
  const uint32_t j = GlobalThread();
  if (j < k) out[j] = values[kept[j]];
}

__global__ void AddKernel(const float* a, const float* b, uint32_t n,
                          float* out) {
  const uint32_t i = GlobalThread();
  if (i < n) out[i] = cm::FeedbackSum(a[i], b[i]);
}

__global__ void CommitCorrectedKernel(const float* corrected, uint32_t n,
                                      float* residual,
                                      const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;
  const uint32_t i = GlobalThread();
  if (i < n) residual[i] = corrected[i] - 0.0f;  // what was sent there: 0
}

__global__ void KeptResidualKernel(const uint32_t* kept,
                                   const float* kept_residual, uint32_t k,
                                   float* residual,
                                   const unsigned long long* first_bad) {
  if (*first_bad != kNoBadIndex) return;
  const uint32_t j = GlobalThread();
  if (j < k) residual[kept[j]] = kept_residual[j];
}

__global__ void ScatterKeptKernel(const uint32_t* kept, const float* values,
                                  uint32_t k, uint32_t n, float* out,
                                  uint32_t* error) {
  const uint32_t j = GlobalThread();
  if (j >= k) return;
  const uint32_t index = kept[j];
  if (index >= n || (j > 0 && kept[j - 1] >= index)) {
    *error = 1;
    return;
  }
  out[index] = values[j];
}

// Bits needed to hold every index below n.
int IndexBits(uint32_t n) {
  int bits = 1;
  while (bits < 32 && (n - 1) >> bits != 0) ++bits;
  return bits;
}

}  // namespace

absl::Status EnqueueSelectTopK(const float* values, uint32_t n, uint32_t k,
                               uint32_t* kept, TopKScratch* scratch,
                               cudaStream_t stream) {
  if (k == 0) return absl::OkStatus();
  if (k >= n) {  // everything is kept, in index order
    IotaKernel<<<Blocks(n), kThreads, 0, stream>>>(n, kept);
    return CudaStatus(cudaGetLastError(), "top-k: IotaKernel");
  }
  const size_t array_bytes = sizeof(uint32_t) * static_cast<size_t>(n);
  RETURN_IF_ERROR(scratch->keys_in.Reserve(array_bytes));
  RETURN_IF_ERROR(scratch->keys_out.Reserve(array_bytes));
  RETURN_IF_ERROR(scratch->order_in.Reserve(array_bytes));
  RETURN_IF_ERROR(scratch->order_out.Reserve(array_bytes));
  uint32_t* keys_in = scratch->keys_in.as<uint32_t>();
  uint32_t* keys_out = scratch->keys_out.as<uint32_t>();
  uint32_t* order_in = scratch->order_in.as<uint32_t>();
  uint32_t* order_out = scratch->order_out.as<uint32_t>();
  const int index_bits = IndexBits(n);

  size_t rank_bytes = 0, index_bytes = 0;
  RETURN_IF_ERROR(CudaStatus(
      cub::DeviceRadixSort::SortPairs(nullptr, rank_bytes, keys_in, keys_out,
                                      order_in, order_out, n, 0, 32, stream),
      "top-k: sizing the rank sort"));
  RETURN_IF_ERROR(CudaStatus(
      cub::DeviceRadixSort::SortKeys(nullptr, index_bytes, order_out, kept, k,
                                     0, index_bits, stream),
      "top-k: sizing the index sort"));
  RETURN_IF_ERROR(scratch->sort_temp.Reserve(
      std::max<size_t>(std::max(rank_bytes, index_bytes), 1)));
  void* temp = scratch->sort_temp.as<void>();

  RankKeysKernel<<<Blocks(n), kThreads, 0, stream>>>(values, n, keys_in,
                                                     order_in);
  RETURN_IF_ERROR(CudaStatus(cudaGetLastError(), "top-k: RankKeysKernel"));
  // Stable: equal keys keep their index order, so ties go to the lower index.
  RETURN_IF_ERROR(CudaStatus(
      cub::DeviceRadixSort::SortPairs(temp, rank_bytes, keys_in, keys_out,
                                      order_in, order_out, n, 0, 32, stream),
      "top-k: rank sort"));
  return CudaStatus(
      cub::DeviceRadixSort::SortKeys(temp, index_bytes, order_out, kept, k, 0,
                                     index_bits, stream),
      "top-k: index sort");
}

cudaError_t EnqueueGather(const float* values, const uint32_t* kept,
                          uint32_t k, float* out, cudaStream_t stream) {
  if (k == 0) return cudaSuccess;
  GatherKernel<<<Blocks(k), kThreads, 0, stream>>>(values, kept, k, out);
  return cudaGetLastError();
}

cudaError_t EnqueueAdd(const float* a, const float* b, uint32_t n, float* out,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  AddKernel<<<Blocks(n), kThreads, 0, stream>>>(a, b, n, out);
  return cudaGetLastError();
}

cudaError_t EnqueueTopKResidual(const float* corrected, uint32_t n,
                                const uint32_t* kept,
                                const float* kept_residual, uint32_t k,
                                float* residual,
                                const unsigned long long* first_bad,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  CommitCorrectedKernel<<<Blocks(n), kThreads, 0, stream>>>(
      corrected, n, residual, first_bad);
  if (k > 0) {
    KeptResidualKernel<<<Blocks(k), kThreads, 0, stream>>>(
        kept, kept_residual, k, residual, first_bad);
  }
  return cudaGetLastError();
}

cudaError_t EnqueueScatterKept(const uint32_t* kept, const float* values,
                               uint32_t k, uint32_t n, float* out,
                               uint32_t* error, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const cudaError_t cleared =
      cudaMemsetAsync(out, 0, sizeof(float) * static_cast<size_t>(n), stream);
  if (cleared != cudaSuccess || k == 0) return cleared;
  ScatterKeptKernel<<<Blocks(k), kThreads, 0, stream>>>(kept, values, k, n,
                                                        out, error);
  return cudaGetLastError();
}

}  // namespace taups::cuda
