// Run-time discovery of CUDA devices.
//
// Plain C++ header (no CUDA headers). Only defined when the build has CUDA
// (TAUPS_HAVE_CUDA); code that must also build without it guards its calls
// with `#if TAUPS_HAVE_CUDA`.
//
// Thread-safe: the functions only query the CUDA runtime.
#ifndef TAUPS_CUDA_CUDA_DEVICE_H_
#define TAUPS_CUDA_CUDA_DEVICE_H_

#include <string>

#include "absl/status/statusor.h"

namespace taups::cuda {

// Number of CUDA devices this process can use. Never fails: a missing driver,
// a driver older than the runtime, or no device at all all give 0.
int UsableDeviceCount();

// UsableDeviceCount() > 0.
bool HasUsableDevice();

// "NAME (sm_XY, N MiB)" for device `index`; INVALID_ARGUMENT for a bad index,
// UNAVAILABLE when the runtime cannot be queried.
absl::StatusOr<std::string> DeviceDescription(int index);

}  // namespace taups::cuda

#endif  // TAUPS_CUDA_CUDA_DEVICE_H_
