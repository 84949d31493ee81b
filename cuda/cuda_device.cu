#include "cuda/cuda_device.h"

#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "cuda/cuda_status.h"

namespace taups::cuda {

int UsableDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error; "no GPU" is not a failure
    return 0;
  }
  return count < 0 ? 0 : count;
}

bool HasUsableDevice() { return UsableDeviceCount() > 0; }

absl::StatusOr<std::string> DeviceDescription(int index) {
  const int count = UsableDeviceCount();
  if (index < 0 || index >= count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CUDA device ", index, " does not exist (", count, " usable)"));
  }
  cudaDeviceProp prop{};
  RETURN_IF_ERROR(
      CudaStatus(cudaGetDeviceProperties(&prop, index), "cudaGetDeviceProperties"));
  return absl::StrCat(prop.name, " (sm_", prop.major, prop.minor, ", ",
                      prop.totalGlobalMem >> 20, " MiB)");
}

}  // namespace taups::cuda
