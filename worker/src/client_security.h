// The transport settings of ClientOptions (tls_* fields, auth_token) as the
// plain ChannelSecurity that proto/grpc_credentials.h's OpenChannel takes:
// the one place the client library, ps_admin's stubs and ps_health_probe
// turn the one into the other. No gRPC types, so ClientOptions::Validate
// can use it too.
//
// Thread-safe: a pure function of its argument.
#ifndef TAUPS_WORKER_SRC_CLIENT_SECURITY_H_
#define TAUPS_WORKER_SRC_CLIENT_SECURITY_H_

#include "common/transport_security.h"
#include "taups/client.h"

namespace taups {

ChannelSecurity ChannelSecurityOf(const ClientOptions& options);

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_CLIENT_SECURITY_H_
