// Worker-side compression for Python: the enums and structs of
// taups/compression.h and the client's TransferCounters, field for field,
// with the C++ names in snake_case. Client.set_compression takes a
// CompressionConfig; Client.transfers returns the counters.
#include "taups/client.h"
#include "taups/compression.h"
#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"

namespace py = pybind11;

namespace taups::python {

void BindCompression(py::module_& m) {
  py::enum_<CodecKind>(m, "Codec", "How gradients or parameters travel.")
      .value("NONE", CodecKind::kNone)
      .value("FP16", CodecKind::kFp16)
      .value("BF16", CodecKind::kBf16)
      .value("INT8", CodecKind::kInt8)
      .value("INT4", CodecKind::kInt4)
      .value("INT2", CodecKind::kInt2)
      .value("SIGN", CodecKind::kSign)
      .value("TOPK", CodecKind::kTopK);
  py::enum_<Rounding>(m, "Rounding", "Rounding of int8/int4/int2.")
      .value("NEAREST", Rounding::kNearest)
      .value("STOCHASTIC", Rounding::kStochastic);

  py::class_<CodecOptions>(m, "CodecOptions", "How one block is encoded.")
      .def(py::init<>())
      .def_readwrite("codec", &CodecOptions::codec)
      .def_readwrite("bucket_size", &CodecOptions::bucket_size)
      .def_readwrite("rounding", &CodecOptions::rounding)
      .def_readwrite("seed", &CodecOptions::seed)
      .def_readwrite("topk_ratio", &CodecOptions::topk_ratio)
      .def_readwrite("topk_count", &CodecOptions::topk_count)
      .def_readwrite("topk_values", &CodecOptions::topk_values)
      .def("validate",
           [](const CodecOptions& o) { ThrowIfError(o.Validate()); });

  py::class_<CompressionConfig>(
      m, "CompressionConfig",
      "A worker's compression of one table (Client.set_compression).")
      .def(py::init<>())
      .def_readwrite("push", &CompressionConfig::push)
      .def_readwrite("error_feedback", &CompressionConfig::error_feedback)
      .def_readwrite("accumulate_steps", &CompressionConfig::accumulate_steps)
      .def_readwrite("topk_warmup_pushes",
                     &CompressionConfig::topk_warmup_pushes)
      .def_readwrite("topk_warmup_start_ratio",
                     &CompressionConfig::topk_warmup_start_ratio)
      .def_readwrite("pull", &CompressionConfig::pull)
      .def_readwrite("pull_bucket_size", &CompressionConfig::pull_bucket_size)
      .def("validate",
           [](const CompressionConfig& c) { ThrowIfError(c.Validate()); });

  py::class_<TransferCounters>(
      m, "TransferCounters",
      "What this worker sent and received for one table, raw (float32) and "
      "on the wire (encoded).")
      .def_readonly("pushes_sent", &TransferCounters::pushes_sent)
      .def_readonly("pushes_deferred", &TransferCounters::pushes_deferred)
      .def_readonly("push_raw_bytes", &TransferCounters::push_raw_bytes)
      .def_readonly("push_wire_bytes", &TransferCounters::push_wire_bytes)
      .def_readonly("pulls", &TransferCounters::pulls)
      .def_readonly("pull_raw_bytes", &TransferCounters::pull_raw_bytes)
      .def_readonly("pull_wire_bytes", &TransferCounters::pull_wire_bytes);
}

}  // namespace taups::python
