// taups._taups.CtrData: the C++ trainer's synthetic click logs with the
// planted model (worker/trainer/ctr_data.h), so a Python job trains on
// exactly the examples `ps_worker --model=ctr` trains on and knows the best
// achievable AUC and log-loss. Generation releases the GIL; a CtrData is
// immutable and may be used from several threads.
#include <cstdint>
#include <cstring>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"
#include "worker/trainer/ctr_data.h"
#include "worker/trainer/ctr_trainer.h"

namespace py = pybind11;

namespace taups::python {
namespace {

using trainer::CtrDataGenerator;
using trainer::CtrExamples;
using trainer::CtrSplit;

CtrSplit SplitOf(const std::string& name) {
  if (name == "train") return CtrSplit::kTrain;
  if (name == "eval") return CtrSplit::kEval;
  throw py::value_error("split must be 'train' or 'eval', got '" + name + "'");
}

template <typename T>
py::array_t<T> ToArray(const std::vector<T>& values, py::ssize_t rows,
                       py::ssize_t cols) {
  std::vector<py::ssize_t> shape = {rows};
  if (cols >= 0) shape.push_back(cols);
  py::array_t<T> array(shape);
  if (!values.empty()) {
    std::memcpy(array.mutable_data(), values.data(), values.size() * sizeof(T));
  }
  return array;
}

// dense (n, D) float32, ids (n, F) int64, labels (n,) float32,
// planted_probs (n,) float32.
py::dict ToDict(const CtrExamples& ex) {
  const py::ssize_t n = ex.size();
  std::vector<int64_t> ids(ex.ids.begin(), ex.ids.end());
  py::dict out;
  out["dense"] = ToArray(ex.dense, n, ex.num_dense);
  out["ids"] = ToArray(ids, n, ex.num_fields);
  out["labels"] = ToArray(ex.labels, n, -1);
  out["planted_probs"] = ToArray(ex.planted_probs, n, -1);
  return out;
}

class CtrData {
 public:
  explicit CtrData(uint64_t seed)
      : generator_(ValueOrThrow(
            CtrDataGenerator::Create(trainer::DefaultCtrSpec(seed)))) {}

  py::dict Range(const std::string& split, int64_t first, int count) const {
    const CtrSplit s = SplitOf(split);
    if (first < 0 || count < 0) {
      throw py::value_error("first and count must be >= 0");
    }
    CtrExamples ex;
    {
      py::gil_scoped_release release;
      generator_.AppendRange(s, static_cast<uint64_t>(first), count, ex);
    }
    ex.num_fields = generator_.spec().num_fields();
    ex.num_dense = generator_.spec().num_dense();
    return ToDict(ex);
  }

  py::dict Indices(const std::string& split,
                   const py::array_t<int64_t, py::array::c_style |
                                                  py::array::forcecast>& idx)
      const {
    const CtrSplit s = SplitOf(split);
    std::vector<int> indices(static_cast<size_t>(idx.size()));
    for (py::ssize_t i = 0; i < idx.size(); ++i) {
      const int64_t v = idx.data()[i];
      if (v < 0 || v > INT32_MAX) {
        throw py::value_error("indices must be in [0, 2^31)");
      }
      indices[static_cast<size_t>(i)] = static_cast<int>(v);
    }
    CtrExamples ex;
    {
      py::gil_scoped_release release;
      generator_.AppendIndices(s, indices, ex);
    }
    ex.num_fields = generator_.spec().num_fields();
    ex.num_dense = generator_.spec().num_dense();
    return ToDict(ex);
  }

  const CtrDataGenerator& generator() const { return generator_; }

 private:
  CtrDataGenerator generator_;
};

}  // namespace

void BindCtrData(py::module_& m) {
  py::class_<CtrData>(
      m, "CtrData",
      "ps_worker --model=ctr's synthetic Criteo-like click logs (13 dense "
      "features, 26 categorical fields) labelled by a planted model fixed by "
      "`seed`. Example i of a split is a pure function of (seed, split, i).")
      .def(py::init<uint64_t>(), py::arg("seed") = 1)
      .def_property_readonly(
          "num_fields",
          [](const CtrData& d) { return d.generator().spec().num_fields(); })
      .def_property_readonly(
          "num_dense",
          [](const CtrData& d) { return d.generator().spec().num_dense(); })
      .def_property_readonly(
          "cardinalities",
          [](const CtrData& d) {
            return d.generator().spec().schema.cardinalities;
          },
          "ids of field f lie in [0, cardinalities[f])")
      .def_property_readonly(
          "bias", [](const CtrData& d) { return d.generator().bias(); },
          "the planted model's bias")
      .def("range", &CtrData::Range, py::arg("split"), py::arg("first"),
           py::arg("count"),
           "Examples first .. first+count-1 of 'train' or 'eval': a dict of "
           "dense (n, 13) float32 = log(1 + count), ids (n, 26) int64, labels "
           "(n,) float32 0/1 and planted_probs (n,) float32.")
      .def("take", &CtrData::Indices, py::arg("split"), py::arg("indices"),
           "The examples named by `indices` (in that order), as range().");
}

}  // namespace taups::python
