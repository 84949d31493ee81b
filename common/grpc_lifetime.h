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

}  // namespace taups

#endif  // TAUPS_COMMON_GRPC_LIFETIME_H_
