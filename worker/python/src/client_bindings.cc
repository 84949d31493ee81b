// ClientCore: taups::Client for Python. The taups.Client wrapper
// (taups/client.py) turns torch tensors into numpy views and calls this.
//
// Every call that talks to the cluster releases the GIL for the network
// part, so other Python threads run meanwhile and several threads may use
// one client at once (taups::Client is thread-safe). Arrays are checked and
// viewed as spans before the GIL is released and are never copied.
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "taups/client.h"
#include "worker/python/src/array_args.h"
#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"

namespace py = pybind11;

namespace taups::python {
namespace {

// Owns the connection. close() drops this handle's reference; a call still
// running in another thread keeps its own, so the client is destroyed when
// the last call returns. Members are touched only with the GIL held.
class ClientCore {
 public:
  explicit ClientCore(std::shared_ptr<Client> client)
      : client_(std::move(client)) {}

  std::shared_ptr<Client> get() const {
    if (client_ == nullptr) throw py::value_error("taups.Client is closed");
    return client_;
  }

  void Close() {
    std::shared_ptr<Client> last = std::move(client_);
    py::gil_scoped_release release;  // stopping the heartbeat can take a while
    last.reset();
  }
  bool closed() const { return client_ == nullptr; }

 private:
  std::shared_ptr<Client> client_;
};

// Connects with `options` (a taups.ClientOptions; Connect validates it).
ClientCore Connect(const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client;
  {
    py::gil_scoped_release release;
    client = Client::Connect(options);
  }
  return ClientCore(ValueOrThrow(std::move(client)));
}

// Runs `call(client)` without the GIL and returns its value or raises.
template <typename Call>
auto WithoutGil(const ClientCore& core, Call call) {
  std::shared_ptr<Client> client = core.get();
  std::optional<decltype(call(*client))> result;
  {
    py::gil_scoped_release release;
    result.emplace(call(*client));
  }
  if constexpr (std::is_same_v<decltype(call(*client)), absl::Status>) {
    ThrowIfError(*result);
  } else {
    return ValueOrThrow(*std::move(result));
  }
}

PullInfo PullDense(const ClientCore& core, const std::string& table,
                   py::handle out) {
  absl::Span<float> values = OutputFloats(out, "out");
  return WithoutGil(core,
                    [&](Client& c) { return c.PullDense(table, values); });
}

PushResult PushDense(const ClientCore& core, const std::string& table,
                     py::handle grad, const PullInfo* basis) {
  absl::Span<const float> gradient = InputFloats(grad, "grad");
  return WithoutGil(core, [&](Client& c) {
    return c.PushDense(table, gradient, basis);
  });
}

// A gradient that encodes itself (on the device: taups.DeviceGradient),
// with the table's push codec and error feedback.
PushResult PushDenseWith(const ClientCore& core, const std::string& table,
                         SliceEncoder& encoder, const PullInfo* basis) {
  return WithoutGil(core, [&](Client& c) {
    return c.PushDenseWith(table, encoder, basis);
  });
}

// row_versions: also read each key's row version (PullInfo.row_versions),
// so a push based on this pull reports per-row tau (PushResult.row_taus).
PullInfo PullSparse(const ClientCore& core, const std::string& table,
                    py::handle keys, py::handle out, bool row_versions) {
  absl::Span<const uint64_t> key_span = Keys(keys, "keys");
  absl::Span<float> rows = OutputFloats(out, "out");
  CheckRowsFitKeys(keys, out, "out");
  SparsePullOptions options;
  options.row_versions = row_versions;
  return WithoutGil(core, [&](Client& c) {
    return c.PullSparse(table, key_span, rows, options);
  });
}

PushResult PushSparse(const ClientCore& core, const std::string& table,
                      py::handle keys, py::handle grads,
                      const PullInfo* basis) {
  absl::Span<const uint64_t> key_span = Keys(keys, "keys");
  absl::Span<const float> gradients = InputFloats(grads, "grads");
  CheckRowsFitKeys(keys, grads, "grads");
  return WithoutGil(core, [&](Client& c) {
    return c.PushSparse(table, key_span, gradients, basis);
  });
}

}  // namespace

void BindClient(py::module_& m) {
  py::class_<ClientCore>(
      m, "ClientCore",
      "Connection to a tauPS cluster (numpy arrays only); use taups.Client.")
      .def(py::init(&Connect), py::arg("options"))
      .def_property_readonly("num_shards",
                             [](const ClientCore& c) {
                               return c.get()->num_shards();
                             })
      .def_property_readonly(
          "worker_id", [](const ClientCore& c) { return c.get()->worker_id(); })
      .def_property_readonly(
          "worker_clock", [](const ClientCore& c) { return c.get()->clock(); })
      .def("clock",
           [](const ClientCore& c) {
             std::shared_ptr<Client> client = c.get();
             client->Clock();
             return client->clock();
           })
      .def("create_table",
           [](const ClientCore& core, const TableConfig& config) {
             WithoutGil(core, [&](Client& c) { return c.CreateTable(config); });
           },
           py::arg("config"))
      .def("open_table",
           [](const ClientCore& core, const std::string& name) {
             return WithoutGil(core,
                               [&](Client& c) { return c.OpenTable(name); });
           },
           py::arg("name"))
      .def("set_consistency",
           [](const ClientCore& core, const std::string& table,
              const ConsistencyConfig& consistency,
              const StalenessConfig& staleness) {
             WithoutGil(core, [&](Client& c) {
               return c.SetConsistency(table, consistency, staleness);
             });
           },
           py::arg("table"), py::arg("consistency"),
           py::arg("staleness") = StalenessConfig())
      .def("drop_table",
           [](const ClientCore& core, const std::string& name) {
             return WithoutGil(core,
                               [&](Client& c) { return c.DropTable(name); });
           },
           py::arg("name"))
      .def("stats",
           [](const ClientCore& core, const std::string& table) {
             return WithoutGil(core, [&](Client& c) { return c.Stats(table); });
           },
           py::arg("table"))
      .def("set_compression",
           [](const ClientCore& core, const std::string& table,
              const CompressionConfig& config) {
             WithoutGil(core, [&](Client& c) {
               return c.SetCompression(table, config);
             });
           },
           py::arg("table"), py::arg("config"))
      .def("transfers",
           [](const ClientCore& core, const std::string& table) {
             return WithoutGil(core,
                               [&](Client& c) { return c.Transfers(table); });
           },
           py::arg("table"))
      .def("pull_dense", &PullDense, py::arg("table"), py::arg("out"))
      .def("push_dense", &PushDense, py::arg("table"), py::arg("grad"),
           py::arg("basis") = nullptr)
      .def("push_dense_with", &PushDenseWith, py::arg("table"),
           py::arg("encoder"), py::arg("basis") = nullptr)
      .def("pull_sparse", &PullSparse, py::arg("table"), py::arg("keys"),
           py::arg("out"), py::arg("row_versions") = false)
      .def("push_sparse", &PushSparse, py::arg("table"), py::arg("keys"),
           py::arg("grads"), py::arg("basis") = nullptr)
      .def("close", &ClientCore::Close)
      .def_property_readonly("closed", &ClientCore::closed);
}

}  // namespace taups::python
