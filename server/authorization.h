// Who may call what on a shard: the decision table of tauPS's roles, with
// no gRPC in it (the edge, server/grpc_auth.h, finds the caller and asks).
//
//   method                                   worker        admin  reader
//   Register Heartbeat Leave Pull* Push*     own ids only  -      -
//   CreateTable DropTable SetConsistency     -             yes    -
//   Checkpoint EvictWorker Rollback          -             yes    -
//   ShardStatus                              -             yes    yes
//   GetTable Stats                           yes           yes    yes
//
// "Own ids only": the request's worker id must be one the principal may act
// as (Principal::ActsAs); since worker ids of principals never overlap, a
// worker id is registered, heartbeated, pulled and pushed for only by the
// principal that owns it.
//
// Thread-safe (pure functions).
#ifndef TAUPS_SERVER_AUTHORIZATION_H_
#define TAUPS_SERVER_AUTHORIZATION_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "common/rpc.h"
#include "server/principals.h"

namespace taups {

// Whether `method` names a worker in its request (and so needs
// `worker_id` in Authorize).
bool ActsAsWorker(Rpc method);

// OK when `caller` may call `method` (as `worker_id`, for the methods that
// act as a worker). UNAUTHENTICATED when `caller` is null (no credential
// was presented); PERMISSION_DENIED, naming the principal, its role and
// what it asked, when the role may not call the method or the worker id is
// not the caller's. A worker method without `worker_id` is
// INVALID_ARGUMENT (a bug at the edge, not the caller's fault).
absl::Status Authorize(const Principal* caller, Rpc method,
                       std::optional<uint32_t> worker_id = std::nullopt);

}  // namespace taups

#endif  // TAUPS_SERVER_AUTHORIZATION_H_
