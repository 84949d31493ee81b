#include "common/rpc.h"

namespace taups {

absl::string_view RpcName(Rpc rpc) {
  switch (rpc) {
    case Rpc::kCreateTable: return "CreateTable";
    case Rpc::kGetTable: return "GetTable";
    case Rpc::kPullDense: return "PullDense";
    case Rpc::kPushDense: return "PushDense";
    case Rpc::kPullSparse: return "PullSparse";
    case Rpc::kPushSparse: return "PushSparse";
    case Rpc::kRegister: return "Register";
    case Rpc::kHeartbeat: return "Heartbeat";
    case Rpc::kLeave: return "Leave";
    case Rpc::kSetConsistency: return "SetConsistency";
    case Rpc::kStats: return "Stats";
    case Rpc::kDropTable: return "DropTable";
    case Rpc::kCheckpoint: return "Checkpoint";
    case Rpc::kEvictWorker: return "EvictWorker";
    case Rpc::kShardStatus: return "ShardStatus";
    case Rpc::kRollback: return "Rollback";
  }
  return "unknown";
}

}  // namespace taups
