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
// The request and answer are two one-field messages, written and read
// here on the wire so the probe needs no generated health stubs (Debian
// ships health.proto only in grpc-proto, a build-time extra).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/command_line.h"
#include "common/tool_start.h"
#include "proto/grpc_credentials.h"
#include "taups/client.h"
#include "worker/tools/transport_flags.h"

ABSL_FLAG(std::string, server, "",
          "host:port of the shard to ask (e.g. 127.0.0.1:7000)");
ABSL_FLAG(std::string, service, "",
          "service to ask about: empty for the whole server, or "
          "taups.v1.ParameterServer");
ABSL_FLAG(double, timeout_s, 5, "give up on the call after this long");

namespace taups {
namespace {

constexpr int kExitNotServing = 1;
constexpr int kExitCallFailed = 3;
constexpr char kCheckMethod[] = "/grpc.health.v1.Health/Check";

// HealthCheckResponse.ServingStatus values.
std::string StatusName(uint64_t status) {
  switch (status) {
    case 0:
      return "UNKNOWN";
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
  }
  return absl::StrCat("status ", status);
}

void AppendVarint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

// HealthCheckRequest{service = 1 (string)}.
std::string EncodeRequest(const std::string& service) {
  std::string out;
  if (service.empty()) return out;  // proto3: the default is not written
  out.push_back(static_cast<char>((1 << 3) | 2));
  AppendVarint(service.size(), out);
  out += service;
  return out;
}

std::optional<uint64_t> ReadVarint(const std::string& in, size_t& at) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && at < in.size(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in[at++]);
    value |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// HealthCheckResponse{status = 1 (enum)}; fields it does not know skipped.
// nullopt when the bytes are not a message.
std::optional<uint64_t> DecodeStatus(const std::string& in) {
  uint64_t status = 0;  // absent: UNKNOWN
  size_t at = 0;
  while (at < in.size()) {
    const std::optional<uint64_t> tag = ReadVarint(in, at);
    if (!tag.has_value()) return std::nullopt;
    const uint64_t field = *tag >> 3;
    switch (*tag & 7) {
      case 0: {
        const std::optional<uint64_t> v = ReadVarint(in, at);
        if (!v.has_value()) return std::nullopt;
        if (field == 1) status = *v;
        break;
      }
      case 1:
        at += 8;
        break;
      case 2: {
        const std::optional<uint64_t> n = ReadVarint(in, at);
        if (!n.has_value() || *n > in.size() - std::min(at, in.size())) {
          return std::nullopt;
        }
        at += *n;
        break;
      }
      case 5:
        at += 4;
        break;
      default:
        return std::nullopt;
    }
    if (at > in.size()) return std::nullopt;
  }
  return status;
}

std::string BytesOf(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

int Probe() {
  const std::string server = absl::GetFlag(FLAGS_server);
  const std::string service = absl::GetFlag(FLAGS_service);
  if (server.empty()) {
    std::fprintf(stderr, "ps_health_probe: --server=host:port is required\n");
    return kExitBadFlags;
  }
  ClientOptions transport;
  transport.servers = {server};
  if (absl::Status s = ApplyTransportFlags(transport); !s.ok()) {
    std::fprintf(stderr, "ps_health_probe: %s\n", std::string(s.message()).c_str());
    return kExitBadFlags;
  }
  const ChannelSecurity security{transport.tls_ca_file, transport.tls_cert_file,
                                 transport.tls_key_file,
                                 transport.tls_server_name, transport.auth_token};
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      OpenChannel(server, security);
  if (!channel.ok()) {
    std::fprintf(stderr, "ps_health_probe: %s\n",
                 std::string(channel.status().message()).c_str());
    return kExitBadFlags;
  }
  const std::string request_bytes = EncodeRequest(service);
  grpc::Slice slice(request_bytes);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::microseconds(static_cast<int64_t>(
          absl::GetFlag(FLAGS_timeout_s) * 1e6)));
  grpc::GenericStub stub(*channel);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, kCheckMethod, grpc::StubOptions(), &request,
                 &response, [&done](grpc::Status s) { done.set_value(s); });
  const grpc::Status status = done.get_future().get();
  const std::string about = service.empty() ? server : server + " " + service;
  if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
    // What grpc.health.v1 answers for a service the server does not have.
    std::printf("%s: SERVICE_UNKNOWN\n", about.c_str());
    return kExitNotServing;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "ps_health_probe: %s: Health/Check failed: %s (code %d)\n",
                 about.c_str(), status.error_message().c_str(),
                 static_cast<int>(status.error_code()));
    return kExitCallFailed;
  }
  const std::optional<uint64_t> serving = DecodeStatus(BytesOf(response));
  if (!serving.has_value()) {
    std::fprintf(stderr, "ps_health_probe: %s: the answer is not a "
                 "HealthCheckResponse\n", about.c_str());
    return kExitCallFailed;
  }
  std::printf("%s: %s\n", about.c_str(), StatusName(*serving).c_str());
  return *serving == 1 ? 0 : kExitNotServing;
}

}  // namespace
}  // namespace taups

int main(int argc, char** argv) {
  taups::StartToolOrExit(
      argc, argv,
      {.name = "ps_health_probe",
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
