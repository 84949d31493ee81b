// The shard's RPCs (service ParameterServer in proto/ps.proto), named once
// for everything that tells them apart: the client's transports
// (worker/src/shard_transport.h) and the shard's decision table of who may
// call what (server/authorization.h).
//
// A new RPC in ps.proto gets an enumerator here; the compiler then points at
// every switch that has to learn it.
//
// Thread-safe (constants and a pure function).
#ifndef TAUPS_COMMON_RPC_H_
#define TAUPS_COMMON_RPC_H_

#include "absl/strings/string_view.h"

namespace taups {

enum class Rpc {
  kCreateTable,
  kGetTable,
  kPullDense,
  kPushDense,
  kPullSparse,
  kPushSparse,
  kRegister,
  kHeartbeat,
  kLeave,
  kSetConsistency,
  kStats,
  kDropTable,
  kCheckpoint,
  kEvictWorker,
  kShardStatus,
  kRollback,
};

// The RPC's name as ps.proto spells it ("PushDense").
absl::string_view RpcName(Rpc rpc);

}  // namespace taups

#endif  // TAUPS_COMMON_RPC_H_
