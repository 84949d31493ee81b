// absl::Status <-> grpc::Status, for the gRPC adapters of the server and the
// client (their codes share one numbering). Stateless, thread-safe.
#ifndef TAUPS_PROTO_GRPC_STATUS_CONVERT_H_
#define TAUPS_PROTO_GRPC_STATUS_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace taups {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace taups

#endif  // TAUPS_PROTO_GRPC_STATUS_CONVERT_H_
