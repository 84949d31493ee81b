// Sends gRPC's own log lines (gpr_log: bind failures, transport errors)
// through spdlog's default logger, so they carry the process tag and, under
// the journal, a priority like every other line (see common/logging.h).
// gRPC's verbosity still applies (GRPC_VERBOSITY, default ERROR). Repeats
// from one place in gRPC's source go through DefaultLogRateLimiter().
//
// The one file of common/ that touches gRPC; it is built as its own library
// (taups_grpc_logging) so taups_common stays free of gRPC.
#ifndef TAUPS_COMMON_GRPC_LOGGING_H_
#define TAUPS_COMMON_GRPC_LOGGING_H_

namespace taups {

// Call after SetUpLogging(). Idempotent; thread-safe once installed.
void RouteGrpcLogsToSpdlog();

}  // namespace taups

#endif  // TAUPS_COMMON_GRPC_LOGGING_H_
