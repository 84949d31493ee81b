// Codecs from Python, on the host and (in builds with CUDA) on the device:
//   cuda_built            whether this extension holds the CUDA codecs
//   cuda_device_count()   usable CUDA devices (0 without CUDA built, a
//                         driver or a device)
//   encode_block(values, options, index_base=0) -> bytes
//                         the CPU codec (taups::EncodeBlock) on a float32
//                         array, for comparing against the device's bytes
//   SliceEncoder          a gradient that encodes itself, for
//                         ClientCore.push_dense_with (abstract here)
//   DeviceGradient(ptr, n, device)   (CUDA builds only) cuda::DeviceGradient
//                         over n float32 values at device address `ptr`:
//                         the device codecs, error-feedback residual on the
//                         device; encode_slice / copy_residual for tests
//
// A DeviceGradient reads the memory at `ptr` at every push: the caller
// (taups.torch.device_push) keeps the tensor alive and makes sure the work
// that wrote it is finished first (the codec runs on a stream of its own,
// ordered only after the legacy default stream). Thread-compatible: one
// push or encode at a time per DeviceGradient.
#include <cstdint>
#include <memory>
#include <string>

#include <pybind11/numpy.h>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "taups/compression.h"
#include "worker/python/src/array_args.h"
#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"

#if TAUPS_HAVE_CUDA
#include "cuda/cuda_device.h"
#include "cuda/device_gradient.h"
#endif

namespace py = pybind11;

namespace taups::python {
namespace {

py::bytes EncodeOnHost(py::handle values, const CodecOptions& options,
                       uint64_t index_base) {
  absl::Span<const float> floats = InputFloats(values, "values");
  std::string block;
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = EncodeBlock(floats, options, index_base, &block);
  }
  ThrowIfError(status);
  return py::bytes(block);
}

#if TAUPS_HAVE_CUDA
void BindDeviceGradient(py::module_& m) {
  py::class_<cuda::DeviceGradient, SliceEncoder>(
      m, "DeviceGradient",
      "A float32 gradient in CUDA memory (address, element count, device) "
      "that encodes its own slices with the device codecs; pass it to "
      "ClientCore.push_dense_with. Keep the memory alive while it is used.")
      .def(py::init([](uintptr_t address, uint64_t n, int device) {
             return ValueOrThrow(cuda::DeviceGradient::Create(
                 reinterpret_cast<const float*>(address), n, device));
           }),
           py::arg("address"), py::arg("n"), py::arg("device") = 0)
      .def("encode_slice",
           [](cuda::DeviceGradient& gradient, uint64_t offset, uint64_t count,
              const CodecOptions& options, bool error_feedback) {
             std::string block;
             absl::Status status;
             {
               py::gil_scoped_release release;
               status = gradient.EncodeSlice(offset, count, options,
                                             error_feedback, &block);
               // A test's encode is not a push: drop what it staged.
               gradient.FinishPush({}, {});
             }
             ThrowIfError(status);
             return py::bytes(block);
           },
           py::arg("offset"), py::arg("count"), py::arg("options"),
           py::arg("error_feedback") = false,
           "One block of elements [offset, offset + count), as a push would "
           "encode it (with error_feedback, from the committed residual, "
           "which stays as it was).")
      .def("copy_residual",
           [](const cuda::DeviceGradient& gradient, py::handle out) {
             absl::Span<float> values = OutputFloats(out, "out");
             if (values.size() != gradient.size()) {
               throw py::value_error(absl::StrCat(
                   "out: ", values.size(), " elements, the gradient has ",
                   gradient.size()));
             }
             ThrowIfError(gradient.CopyResidual(values.data()));
           },
           py::arg("out"),
           "Copies the committed device residual (zeros before any "
           "error-feedback push was accepted) into a float32 array.");
}
#endif

}  // namespace

void BindDevice(py::module_& m) {
#if TAUPS_HAVE_CUDA
  m.attr("cuda_built") = true;
  m.def("cuda_device_count", [] { return cuda::UsableDeviceCount(); });
#else
  m.attr("cuda_built") = false;
  m.def("cuda_device_count", [] { return 0; });
#endif
  m.def("encode_block", &EncodeOnHost, py::arg("values"), py::arg("options"),
        py::arg("index_base") = 0,
        "The CPU codec's block for a float32 array (any shape, C order).");
  py::class_<SliceEncoder>(
      m, "SliceEncoder",
      "A gradient that encodes its own slices (see DeviceGradient).")
      .def_property_readonly("size", &SliceEncoder::size);
#if TAUPS_HAVE_CUDA
  BindDeviceGradient(m);
#endif
}

}  // namespace taups::python
