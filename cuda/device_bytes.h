// DeviceBytes: an owned, growable cudaMalloc'ed byte buffer for scratch
// space that lives across calls (the codec kernels' work areas).
//
// Includes the CUDA runtime header, so only code built against the CUDA
// runtime includes it (cuda/*.cu and the CUDA benchmark). Thread-compatible; the buffer belongs to the
// device that was current when it was (re)allocated.
#ifndef TAUPS_CUDA_DEVICE_BYTES_H_
#define TAUPS_CUDA_DEVICE_BYTES_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "absl/status/status.h"
#include "cuda/cuda_status.h"

namespace taups::cuda {

class DeviceBytes {
 public:
  DeviceBytes() = default;
  ~DeviceBytes() { Free(); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;

  // Makes room for at least `bytes` bytes; the old contents are lost when
  // the buffer grows. Keeps the larger buffer for later calls.
  absl::Status Reserve(size_t bytes) {
    if (bytes <= capacity_) return absl::OkStatus();
    Free();
    void* raw = nullptr;
    absl::Status status = CudaStatus(cudaMalloc(&raw, bytes), "cudaMalloc");
    if (!status.ok()) return status;
    data_ = raw;
    capacity_ = bytes;
    return absl::OkStatus();
  }

  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t capacity() const { return capacity_; }

 private:
  void Free() {
    if (data_ != nullptr) cudaFree(data_);
    data_ = nullptr;
    capacity_ = 0;
  }

  void* data_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_DEVICE_BYTES_H_
