// ps_health_probe: asks one shard grpc.health.v1.Health/Check over the
// transport the workers use (TLS, mutual TLS, bearer token: the --tls_* and
// --auth_token_file flags of ps_worker and ps_admin, through the project's
// one credentials factory, proto/grpc_credentials.h), and exits 0 only when
// the answer is SERVING. Kubernetes' built-in gRPC probe speaks plaintext
// only, so deploy/k8s runs this as an exec probe against a TLS shard.
//
// A shard opens its gRPC port only once its checkpoint restore has finished
// (the probe fails with 3 until then) and answers NOT_SERVING once SIGTERM
// starts its shutdown (server/grpc_health.h, exit 1), so SERVING means
// ready.
//
// Exit status: 0 SERVING; 1 the shard answered, but not SERVING
// (NOT_SERVING, UNKNOWN, or SERVICE_UNKNOWN: the server has no --service);
// 2 a flag was refused; 3 the call failed (nothing listening, TLS refused,
// deadline).
// One line on stdout says what the shard answered, or on stderr why not.
//
// The stub is generated from gRPC's own health.proto (Debian: grpc-proto;
// proto/grpc_std_protos.cmake), as the tests that ask a shard's health use.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/tool_start.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "proto/grpc_credentials.h"
#include "taups/client.h"
#include "worker/src/client_security.h"
#include "worker/tools/transport_flags.h"

ABSL_FLAG(std::string, server, "",
          "host:port of the shard to ask (e.g. 127.0.0.1:7000)");
ABSL_FLAG(std::string, service, "",
          "service to ask about: empty for the whole server, or "
          "taups.v1.ParameterServer");
ABSL_FLAG(double, timeout_s, 5, "give up on the call after this long");

namespace taups {
namespace {

constexpr char kName[] = "ps_health_probe";
constexpr int kExitNotServing = 1;
constexpr int kExitCallFailed = 3;

int Probe() {
  const std::string server = absl::GetFlag(FLAGS_server);
  const std::string service = absl::GetFlag(FLAGS_service);
  if (server.empty()) {
    return ToolFailure(kName, "--server=host:port is required", kExitBadFlags);
  }
  ClientOptions transport;
  transport.servers = {server};
  if (absl::Status s = ApplyTransportFlags(transport); !s.ok()) {
    return ToolFailure(kName, s.message(), kExitBadFlags);
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(server, ChannelSecurityOf(transport));
  if (!channel.ok()) {
    return ToolFailure(kName, channel.status().message(), kExitBadFlags);
  }
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::ClientContext context;
  context.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(
          absl::GetFlag(FLAGS_timeout_s) * 1e6)));
  const grpc::Status status =
      grpc::health::v1::Health::NewStub(*channel)->Check(&context, request,
                                                         &response);
  const std::string about = service.empty() ? server : server + " " + service;
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // What grpc.health.v1 answers for a service the server does not have.
    std::printf("%s: SERVICE_UNKNOWN\n", about.c_str());
    return kExitNotServing;
  }
  if (!status.ok()) {
    return ToolFailure(
        kName,
        absl::StrCat(about, ": Health/Check failed: ", status.error_message(),
                     " (code ", static_cast<int>(status.error_code()), ")"),
        kExitCallFailed);
  }
  using grpc::health::v1::HealthCheckResponse;
  std::string name = HealthCheckResponse::ServingStatus_Name(response.status());
  if (name.empty()) name = absl::StrCat("status ", response.status());
  std::printf("%s: %s\n", about.c_str(), name.c_str());
  return response.status() == HealthCheckResponse::SERVING ? 0
                                                            : kExitNotServing;
}

}  // namespace
}  // namespace taups

int main(int argc, char** argv) {
  taups::StartToolOrExit(
      argc, argv,
      {.name = taups::kName,
       .usage =
           "ps_health_probe --server=host:port [--service=S] [--tls_ca=F "
           "[--tls_cert=F --tls_key=F] [--tls_server_name=N]] "
           "[--auth_token_file=F]\n"
           "Asks one tauPS shard grpc.health.v1.Health/Check over TLS or "
           "plaintext as ps_worker would reach it. Exit status 0 SERVING, 1 "
           "answered but not SERVING (e.g. still restoring, or shutting "
           "down), 2 a flag refused, 3 the call failed (nothing listening, "
           "TLS refused, deadline).",
       .ranges = {{"timeout_s", 0, 3600, true}},
       .log_level = "error"});
  return taups::Probe();
}
