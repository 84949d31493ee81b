// Conversion of CUDA runtime and cuBLAS return codes into absl::Status.
//
// Internal to cuda/: this header pulls in the CUDA headers, so only .cu files
// of this directory include it. Stateless; safe from any thread.
#ifndef TAUPS_CUDA_CUDA_STATUS_H_
#define TAUPS_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "absl/status/status.h"

namespace taups::cuda {

// OK for cudaSuccess; otherwise a status naming `what` and the CUDA error.
// Out-of-memory maps to RESOURCE_EXHAUSTED, a missing device or driver to
// UNAVAILABLE, everything else to INTERNAL. Clears the runtime's sticky
// "last error" for non-fatal errors.
absl::Status CudaStatus(cudaError_t error, const char* what);

// OK for CUBLAS_STATUS_SUCCESS; otherwise a status naming `what`.
// Allocation failure maps to RESOURCE_EXHAUSTED, invalid values to
// INVALID_ARGUMENT, everything else to INTERNAL.
absl::Status CublasStatus(cublasStatus_t status, const char* what);

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CUDA_STATUS_H_
