// The client core under the name the tests first knew it by: Client::Connect
// (grpc_client.cc) returns a ClientCore over one GrpcTransport per shard.
#ifndef TAUPS_WORKER_SRC_GRPC_CLIENT_H_
#define TAUPS_WORKER_SRC_GRPC_CLIENT_H_

#include "worker/src/client_core.h"

namespace taups {

using GrpcClient = ClientCore;

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_GRPC_CLIENT_H_
