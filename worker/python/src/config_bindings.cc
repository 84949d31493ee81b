// Table configuration for Python: the enums and structs of
// taups/table_config.h, field for field, with the C++ names in snake_case.
// Validation is TableConfig.validate() here and CreateTable on the server.
#include <string>

#include "absl/strings/str_cat.h"
#include "taups/table_config.h"
#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"

namespace py = pybind11;

namespace taups::python {
namespace {

void BindEnums(py::module_& m) {
  py::enum_<TableKind>(m, "TableKind")
      .value("DENSE", TableKind::kDense)
      .value("SPARSE", TableKind::kSparse);
  py::enum_<OptimizerKind>(m, "Optimizer",
                           "Server-side update rule of a table.")
      .value("SGD", OptimizerKind::kSgd)
      .value("ADAGRAD", OptimizerKind::kAdagrad)
      .value("MOMENTUM", OptimizerKind::kMomentum)
      .value("ADAM", OptimizerKind::kAdam)
      .value("FTRL", OptimizerKind::kFtrl);
  py::enum_<InitializerKind>(m, "Initializer",
                             "How a table's parameters are born.")
      .value("ZEROS", InitializerKind::kZeros)
      .value("UNIFORM", InitializerKind::kUniform)
      .value("NORMAL", InitializerKind::kNormal);
  py::enum_<SparseEvictionKind>(m, "SparseEviction",
                                "Which row a full sparse shard evicts.")
      .value("LRU", SparseEvictionKind::kLru)
      .value("LFU", SparseEvictionKind::kLfu);
  py::enum_<ConsistencyKind>(m, "Consistency")
      .value("ASYNC", ConsistencyKind::kAsync)
      .value("SYNC", ConsistencyKind::kSync)
      .value("SEMI_SYNC", ConsistencyKind::kSemiSync)
      .value("SSP", ConsistencyKind::kSsp);
  py::enum_<LatePolicy>(m, "LatePolicy")
      .value("DROP", LatePolicy::kDrop)
      .value("REUSE_LAST", LatePolicy::kReuseLast)
      .value("APPLY_LATE", LatePolicy::kApplyLate);
  py::enum_<DownweightKind>(m, "Downweight")
      .value("NONE", DownweightKind::kNone)
      .value("INVERSE", DownweightKind::kInverse)
      .value("INVERSE_PLUS_ONE", DownweightKind::kInversePlusOne)
      .value("EXPONENTIAL", DownweightKind::kExponential);
}

template <typename T>
void AddEquality(py::class_<T>& cls) {
  cls.def("__eq__", [](const T& a, const T& b) { return a == b; },
          py::is_operator());
  cls.attr("__hash__") = py::none();  // mutable: not hashable
}

void BindParts(py::module_& m) {
  py::class_<OptimizerConfig> optimizer(
      m, "OptimizerConfig",
      "Update rule and its hyper-parameters (see table_config.h for the "
      "exact formulas).");
  optimizer.def(py::init<>())
      .def_readwrite("kind", &OptimizerConfig::kind)
      .def_readwrite("learning_rate", &OptimizerConfig::learning_rate)
      .def_readwrite("adagrad_initial_accumulator",
                     &OptimizerConfig::adagrad_initial_accumulator)
      .def_readwrite("adagrad_epsilon", &OptimizerConfig::adagrad_epsilon)
      .def_readwrite("momentum", &OptimizerConfig::momentum)
      .def_readwrite("adam_beta1", &OptimizerConfig::adam_beta1)
      .def_readwrite("adam_beta2", &OptimizerConfig::adam_beta2)
      .def_readwrite("adam_epsilon", &OptimizerConfig::adam_epsilon)
      .def_readwrite("ftrl_beta", &OptimizerConfig::ftrl_beta)
      .def_readwrite("ftrl_l1", &OptimizerConfig::ftrl_l1)
      .def_readwrite("ftrl_l2", &OptimizerConfig::ftrl_l2);
  AddEquality(optimizer);

  py::class_<InitializerConfig> initializer(
      m, "InitializerConfig",
      "uniform: U(-scale, scale); normal: N(0, scale^2); deterministic in "
      "(seed, table, position or key).");
  initializer.def(py::init<>())
      .def_readwrite("kind", &InitializerConfig::kind)
      .def_readwrite("scale", &InitializerConfig::scale)
      .def_readwrite("seed", &InitializerConfig::seed);
  AddEquality(initializer);

  py::class_<ConsistencyConfig> consistency(
      m, "ConsistencyConfig", "When updates apply and what pulls wait for.");
  consistency.def(py::init<>())
      .def_readwrite("kind", &ConsistencyConfig::kind)
      .def_readwrite("num_workers", &ConsistencyConfig::num_workers)
      .def_readwrite("quorum", &ConsistencyConfig::quorum)
      .def_readwrite("step_timeout_s", &ConsistencyConfig::step_timeout_s)
      .def_readwrite("late", &ConsistencyConfig::late)
      .def_readwrite("staleness_bound", &ConsistencyConfig::staleness_bound);
  AddEquality(consistency);

  py::class_<StalenessConfig> staleness(
      m, "StalenessConfig", "What the server does with stale pushes.");
  staleness.def(py::init<>())
      .def_readwrite("reject_above_tau_max",
                     &StalenessConfig::reject_above_tau_max)
      .def_readwrite("tau_max", &StalenessConfig::tau_max)
      .def_readwrite("downweight", &StalenessConfig::downweight)
      .def_readwrite("downweight_lambda", &StalenessConfig::downweight_lambda)
      .def_readwrite("delay_compensation",
                     &StalenessConfig::delay_compensation)
      .def_readwrite("delay_compensation_lambda",
                     &StalenessConfig::delay_compensation_lambda)
      .def_readwrite("clip_norm", &StalenessConfig::clip_norm)
      .def_readwrite("warmup_versions", &StalenessConfig::warmup_versions);
  AddEquality(staleness);
}

std::string Describe(const TableConfig& c) {
  const std::string shape =
      c.kind == TableKind::kDense ? absl::StrCat("size=", c.dense_size)
                                  : absl::StrCat("dim=", c.dim);
  return absl::StrCat("TableConfig(name='", c.name, "', ",
                      TableKindName(c.kind), ", ", shape, ", ",
                      OptimizerKindName(c.optimizer.kind),
                      " lr=", c.optimizer.learning_rate, ", ",
                      ConsistencyKindName(c.consistency.kind), ")");
}

}  // namespace

void BindTableConfig(py::module_& m) {
  BindEnums(m);
  BindParts(m);
  py::class_<TableConfig> table(
      m, "TableConfig",
      "A table: dense (dense_size floats split over the shards) or sparse "
      "(uint64 key -> row of dim floats). Build one with "
      "TableConfig.dense/sparse or taups.dense_table/sparse_table.");
  table.def(py::init<>())
      .def_static("dense", &TableConfig::Dense, py::arg("name"),
                  py::arg("size"), "A dense table of `size` floats.")
      .def_static("sparse", &TableConfig::Sparse, py::arg("name"),
                  py::arg("dim"), "A sparse table with rows of `dim` floats.")
      .def_readwrite("name", &TableConfig::name)
      .def_readwrite("kind", &TableConfig::kind)
      .def_readwrite("dense_size", &TableConfig::dense_size)
      .def_readwrite("dim", &TableConfig::dim)
      .def_readwrite("sparse_max_rows", &TableConfig::sparse_max_rows)
      .def_readwrite("sparse_max_bytes", &TableConfig::sparse_max_bytes)
      .def_readwrite("sparse_eviction", &TableConfig::sparse_eviction)
      .def_readwrite("sparse_ttl_s", &TableConfig::sparse_ttl_s)
      .def_readwrite("sparse_admit_after", &TableConfig::sparse_admit_after)
      .def_readwrite("sparse_admit_probability",
                     &TableConfig::sparse_admit_probability)
      .def_readwrite("optimizer", &TableConfig::optimizer)
      .def_readwrite("initializer", &TableConfig::initializer)
      .def_readwrite("consistency", &TableConfig::consistency)
      .def_readwrite("staleness", &TableConfig::staleness)
      .def(
          "validate",
          [](const TableConfig& c) { ThrowIfError(c.Validate()); },
          "Raises InvalidArgumentError naming the first bad field.")
      .def("__repr__", &Describe);
  AddEquality(table);
}

}  // namespace taups::python
