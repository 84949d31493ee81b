// The standard gRPC health service (grpc.health.v1.Health) and server
// reflection on a shard's gRPC port, so generic tools (grpc_health_probe,
// grpcurl, Kubernetes gRPC probes) can ask a shard whether it serves and
// what it offers without tauPS's protos.
//
// A shard reports NOT_SERVING until its checkpoint restore has finished and
// SERVING after; NOT_SERVING again once shutdown begins. Both the whole
// server ("") and the tauPS service name carry that status.
//
// Thread-safe.
#ifndef TAUPS_SERVER_GRPC_HEALTH_H_
#define TAUPS_SERVER_GRPC_HEALTH_H_

#include <string>

namespace grpc {
class Server;
}

namespace taups {

// Turns on gRPC's built-in health service and the reflection plugin for
// every server built afterwards. Must run before the grpc::ServerBuilder is
// constructed (gRPC collects builder plugins there). Idempotent.
void EnableHealthAndReflection();

// The service name whose health is reported besides "" (taups.v1.ParameterServer).
const std::string& ParameterServiceName();

// Sets the health of "" and of ParameterServiceName() on `server`.
void SetServingHealth(grpc::Server& server, bool serving);

}  // namespace taups

#endif  // TAUPS_SERVER_GRPC_HEALTH_H_
