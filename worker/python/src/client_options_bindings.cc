// taups.ClientOptions: the C++ ClientOptions (taups/client.h) for Python,
// field for field. Durations are seconds as floats (`call_timeout_s`, ...);
// the transport-security fields are the C++ ones (paths to PEM files and
// the bearer token). taups.Client fills one from its keyword arguments.
//
// The token is write-mostly: repr() says only whether one is set, so an
// options object can be printed or logged without leaking it.
//
// A value object; not thread-safe (copy it per thread).
#include <cmath>
#include <string>

#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "taups/client.h"
#include "worker/python/src/bindings.h"
#include "worker/python/src/status_errors.h"

namespace py = pybind11;

namespace taups::python {
namespace {

// A read-write float property of seconds over the absl::Duration `field`.
template <absl::Duration ClientOptions::*field>
void AddSeconds(py::class_<ClientOptions>& cls, const char* name,
                const char* doc) {
  cls.def_property(
      name,
      [](const ClientOptions& o) { return absl::ToDoubleSeconds(o.*field); },
      [name](ClientOptions& o, double seconds) {
        if (!std::isfinite(seconds) || seconds < 0) {
          throw py::value_error(absl::StrCat(
              "ClientOptions.", name,
              " must be a finite number of seconds >= 0, not ", seconds));
        }
        o.*field = absl::Seconds(seconds);
      },
      doc);
}

std::string Repr(const ClientOptions& o) {
  auto quoted = [](const std::string& s) { return absl::StrCat("'", s, "'"); };
  std::string text = absl::StrCat(
      "ClientOptions(servers=[", absl::StrJoin(o.servers, ", ",
                                               [&](std::string* out,
                                                   const std::string& s) {
                                                 out->append(quoted(s));
                                               }),
      "], worker_id=", o.worker_id,
      ", call_timeout_s=", absl::ToDoubleSeconds(o.call_timeout),
      ", register_worker=", o.register_worker ? "True" : "False");
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string&>{"tls_ca_file", o.tls_ca_file},
        {"tls_cert_file", o.tls_cert_file},
        {"tls_key_file", o.tls_key_file},
        {"tls_server_name", o.tls_server_name}}) {
    if (!value.empty()) absl::StrAppend(&text, ", ", name, "=", quoted(value));
  }
  absl::StrAppend(&text, ", auth_token=",
                  o.auth_token.empty() ? "None" : "<set>", ")");
  return text;
}

}  // namespace

void BindClientOptions(py::module_& m) {
  py::class_<ClientOptions> cls(
      m, "ClientOptions",
      "How a taups.Client connects: the C++ taups::ClientOptions field for "
      "field (durations in seconds). validate() raises InvalidArgumentError "
      "naming the bad field; Connect validates too.");
  cls.def(py::init<>())
      .def(py::init<const ClientOptions&>(), py::arg("other"),
           "A copy of `other`.")
      .def_readwrite("servers", &ClientOptions::servers,
                     "One 'host:port' per shard, in shard order.")
      .def_readwrite("worker_id", &ClientOptions::worker_id)
      .def_readwrite("worker_incarnation", &ClientOptions::worker_incarnation,
                     "Tells restarts of one worker id apart; 0 = pick one.")
      .def_readwrite("max_attempts", &ClientOptions::max_attempts,
                     "Attempts per call while a shard is UNAVAILABLE.")
      .def_readwrite("slice_bytes", &ClientOptions::slice_bytes)
      .def_readwrite("channels_per_shard", &ClientOptions::channels_per_shard)
      .def_readwrite("register_worker", &ClientOptions::register_worker,
                     "Hold a lease (sync, semi_sync and ssp tables need it).")
      .def_readwrite("tls_ca_file", &ClientOptions::tls_ca_file,
                     "PEM CA bundle the shards' certificates are checked "
                     "against; setting it turns TLS on.")
      .def_readwrite("tls_cert_file", &ClientOptions::tls_cert_file,
                     "PEM client certificate (mutual TLS; with tls_key_file).")
      .def_readwrite("tls_key_file", &ClientOptions::tls_key_file,
                     "PEM private key of tls_cert_file.")
      .def_readwrite("tls_server_name", &ClientOptions::tls_server_name,
                     "Name in the shards' certificates when it is not the "
                     "host dialled.")
      .def_readwrite("auth_token", &ClientOptions::auth_token,
                     "Bearer token of this client's principal, sent with "
                     "every call (without TLS to loopback shards only).");
  AddSeconds<&ClientOptions::call_timeout>(cls, "call_timeout_s",
                                           "Deadline of each call attempt.");
  AddSeconds<&ClientOptions::connect_timeout>(
      cls, "connect_timeout_s", "How long Connect waits for every shard.");
  AddSeconds<&ClientOptions::retry_budget>(
      cls, "retry_budget_s",
      "Calls keep retrying an UNAVAILABLE shard this long.");
  AddSeconds<&ClientOptions::lease>(
      cls, "lease_s", "Lease asked for; 0 = the server's default.");
  cls.def("validate",
          [](const ClientOptions& o) { ThrowIfError(o.Validate()); })
      .def("__repr__", &Repr);
}

}  // namespace taups::python
