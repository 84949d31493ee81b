#include "worker/python/src/array_args.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace py = pybind11;

namespace taups::python {
namespace {

std::string TypeName(py::handle object) {
  return py::str(py::type::handle_of(object).attr("__name__"));
}

std::string ShapeText(const py::array& array) {
  std::vector<py::ssize_t> shape(array.shape(), array.shape() + array.ndim());
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// The numpy array behind `object`, or TypeError.
py::array AsArray(py::handle object, const char* what) {
  if (!py::isinstance<py::array>(object)) {
    throw py::type_error(absl::StrCat(
        what, ": expected a numpy array or a CPU torch tensor, got ",
        TypeName(object)));
  }
  return py::reinterpret_borrow<py::array>(object);
}

void CheckContiguous(const py::array& array, const char* what) {
  if ((array.flags() & py::array::c_style) == 0) {
    throw py::value_error(absl::StrCat(
        what, ": array is not C-contiguous (use numpy.ascontiguousarray or "
              "tensor.contiguous(); tauPS never copies silently)"));
  }
}

template <typename T>
bool HasDtype(const py::array& array) {
  return py::isinstance<py::array_t<T>>(array);
}

std::string DtypeText(const py::array& array) {
  return py::str(array.dtype());
}

py::array FloatArray(py::handle object, const char* what) {
  py::array array = AsArray(object, what);
  if (!HasDtype<float>(array)) {
    throw py::type_error(absl::StrCat(what, ": dtype ", DtypeText(array),
                                      ", expected float32"));
  }
  CheckContiguous(array, what);
  return array;
}

}  // namespace

absl::Span<float> OutputFloats(py::handle object, const char* what) {
  py::array array = FloatArray(object, what);
  if (!array.writeable()) {
    throw py::value_error(absl::StrCat(what, ": array is read-only"));
  }
  return absl::Span<float>(static_cast<float*>(array.mutable_data()),
                           static_cast<size_t>(array.size()));
}

absl::Span<const float> InputFloats(py::handle object, const char* what) {
  py::array array = FloatArray(object, what);
  return absl::Span<const float>(static_cast<const float*>(array.data()),
                                 static_cast<size_t>(array.size()));
}

absl::Span<const uint64_t> Keys(py::handle object, const char* what) {
  py::array array = AsArray(object, what);
  if (!HasDtype<uint64_t>(array) && !HasDtype<int64_t>(array)) {
    throw py::type_error(absl::StrCat(what, ": dtype ", DtypeText(array),
                                      ", expected uint64 or int64"));
  }
  CheckContiguous(array, what);
  return absl::Span<const uint64_t>(
      static_cast<const uint64_t*>(array.data()),
      static_cast<size_t>(array.size()));
}

void CheckRowsFitKeys(py::handle keys_object, py::handle rows_object,
                      const char* what) {
  py::array keys = AsArray(keys_object, "keys");
  py::array rows = AsArray(rows_object, what);
  bool fits = rows.ndim() == keys.ndim() + 1;
  for (py::ssize_t d = 0; fits && d < keys.ndim(); ++d) {
    fits = rows.shape(d) == keys.shape(d);
  }
  if (!fits) {
    throw py::value_error(absl::StrCat(
        what, ": shape ", ShapeText(rows), " does not fit keys of shape ",
        ShapeText(keys), "; expected keys.shape + (dim,)"));
  }
}

}  // namespace taups::python
