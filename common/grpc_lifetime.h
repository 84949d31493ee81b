// Keeps the gRPC library initialized for the rest of the process.
//
// gRPC shuts its core down (on a background thread) whenever the last
// channel or server goes away, and initializes it again when the next one
// is made. A process that makes and drops clients and servers repeatedly
// (tests, benchmarks, a trainer reconnecting) can race that shutdown against
// the next start-up and abort inside gRPC. One extra reference, taken once
// and never released, keeps the core up; it costs nothing at exit.
#ifndef TAUPS_COMMON_GRPC_LIFETIME_H_
#define TAUPS_COMMON_GRPC_LIFETIME_H_

namespace taups {

// Idempotent and thread-safe.
void KeepGrpcInitialized();

// Keeps gRPC's process-wide callback completion queue up for the rest of the
// process (and gRPC initialized).
//
// The gRPC of Debian 12 (1.51) completes callback-API calls, which the
// client library makes, on one shared queue that it creates for the first
// channel making such a call and shuts down when the last of those channels
// is destroyed. A channel that arrives while that shutdown is still draining
// can abort the process inside gRPC ("ref_counted.h:183 assertion failed:
// prior > 0" from grpc_cq_internal_unref): a process that connects,
// disconnects and connects again (tests, a Python session, a trainer that
// reconnects) hit it in about 3 % of runs of a test binary under load.
// One channel bound to the queue and never destroyed keeps it from shutting
// down. The first call makes one failed call to 127.0.0.1:1 (at most 1 s).
// Idempotent and thread-safe.
void KeepCallbackQueueAlive();

}  // namespace taups

#endif  // TAUPS_COMMON_GRPC_LIFETIME_H_
