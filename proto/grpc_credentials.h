// The one place tauPS makes gRPC credentials: every shard's port and every
// client channel (worker library, ps_admin, tests, benchmarks) is built
// from the plain settings of common/transport_security.h here, so TLS,
// mutual TLS, local credentials and bearer tokens behave the same
// everywhere.
//
// Thread-safe (no shared state; files are read at each call).
#ifndef TAUPS_PROTO_GRPC_CREDENTIALS_H_
#define TAUPS_PROTO_GRPC_CREDENTIALS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/transport_security.h"

namespace taups {

// Credentials for a shard's listening port: TLS (with client certificates
// requested, or required, when a client CA is given), local credentials
// (security.local) or insecure ones. INVALID_ARGUMENT naming the file when
// one cannot be read or holds no PEM block of the kind expected.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const ServerSecurity& security);

// A channel to `target` ("host:port") with `args` plus what `security`
// asks for: TLS against security.ca_file (client certificate for mutual
// TLS, certificate name override), then a bearer token on every call. A
// token without TLS uses local credentials, so the target must be a
// loopback address (INVALID_ARGUMENT otherwise). Nothing set: insecure.
absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(
    const std::string& target, const ChannelSecurity& security,
    grpc::ChannelArguments args = grpc::ChannelArguments());

}  // namespace taups

#endif  // TAUPS_PROTO_GRPC_CREDENTIALS_H_
