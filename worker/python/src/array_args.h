// Checks the array arguments of the client calls and views their memory as
// spans, without copying.
//
// Accepted: numpy arrays (torch tensors arrive as numpy views, made by the
// Python wrapper) that are C-contiguous, of the exact dtype, and writable
// where the call writes. Anything else raises before any network call:
//   TypeError   not a numpy array, or the wrong dtype;
//   ValueError  not C-contiguous, read-only, or a shape that does not fit.
//
// The spans point into the arrays' own buffers and stay valid while the
// caller holds the arrays (the pybind11 call does, for its whole duration).
// Called with the GIL held.
#ifndef TAUPS_WORKER_PYTHON_SRC_ARRAY_ARGS_H_
#define TAUPS_WORKER_PYTHON_SRC_ARRAY_ARGS_H_

#include <cstdint>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "absl/types/span.h"

namespace taups::python {

// float32, C-contiguous, writable (pull destinations); any shape.
absl::Span<float> OutputFloats(pybind11::handle array, const char* what);
// float32, C-contiguous (gradients); any shape.
absl::Span<const float> InputFloats(pybind11::handle array, const char* what);
// Sparse keys: uint64, or int64 read bit for bit as uint64 (torch's index
// type); C-contiguous; any shape.
absl::Span<const uint64_t> Keys(pybind11::handle array, const char* what);
// Sparse rows for `keys`: `rows` must have the shape keys.shape + (dim,).
// The table's dim itself is checked by the client (InvalidArgumentError).
void CheckRowsFitKeys(pybind11::handle keys, pybind11::handle rows,
                      const char* what);

}  // namespace taups::python

#endif  // TAUPS_WORKER_PYTHON_SRC_ARRAY_ARGS_H_
