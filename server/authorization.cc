#include "server/authorization.h"

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

// Which roles may call a method.
struct Grant {
  bool worker;
  bool admin;
  bool reader;
};

Grant GrantOf(RpcMethod method) {
  switch (method) {
    case RpcMethod::kRegister:
    case RpcMethod::kHeartbeat:
    case RpcMethod::kLeave:
    case RpcMethod::kPullDense:
    case RpcMethod::kPushDense:
    case RpcMethod::kPullSparse:
    case RpcMethod::kPushSparse:
      return {true, false, false};
    case RpcMethod::kCreateTable:
    case RpcMethod::kDropTable:
    case RpcMethod::kSetConsistency:
    case RpcMethod::kCheckpoint:
    case RpcMethod::kEvictWorker:
      return {false, true, false};
    case RpcMethod::kGetTable:
    case RpcMethod::kStats:
      return {true, true, true};
  }
  return {false, false, false};
}

bool Allows(const Grant& grant, Role role) {
  switch (role) {
    case Role::kWorker: return grant.worker;
    case Role::kAdmin: return grant.admin;
    case Role::kReader: return grant.reader;
  }
  return false;
}

}  // namespace

const char* RpcMethodName(RpcMethod method) {
  switch (method) {
    case RpcMethod::kCreateTable: return "CreateTable";
    case RpcMethod::kDropTable: return "DropTable";
    case RpcMethod::kGetTable: return "GetTable";
    case RpcMethod::kPullDense: return "PullDense";
    case RpcMethod::kPushDense: return "PushDense";
    case RpcMethod::kPullSparse: return "PullSparse";
    case RpcMethod::kPushSparse: return "PushSparse";
    case RpcMethod::kRegister: return "Register";
    case RpcMethod::kHeartbeat: return "Heartbeat";
    case RpcMethod::kLeave: return "Leave";
    case RpcMethod::kSetConsistency: return "SetConsistency";
    case RpcMethod::kStats: return "Stats";
    case RpcMethod::kCheckpoint: return "Checkpoint";
    case RpcMethod::kEvictWorker: return "EvictWorker";
  }
  return "unknown method";
}

bool ActsAsWorker(RpcMethod method) {
  const Grant grant = GrantOf(method);
  return grant.worker && !grant.admin;
}

absl::Status Authorize(const Principal* caller, RpcMethod method,
                       std::optional<uint32_t> worker_id) {
  if (caller == nullptr) {
    return absl::UnauthenticatedError(absl::StrCat(
        RpcMethodName(method),
        ": no credential (send a bearer token, or a client certificate this "
        "shard maps to a principal)"));
  }
  if (!Allows(GrantOf(method), caller->role)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "principal '", caller->name, "' (role ", RoleName(caller->role),
        ") may not call ", RpcMethodName(method)));
  }
  if (!ActsAsWorker(method)) return absl::OkStatus();
  if (!worker_id.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        RpcMethodName(method), " authorized without its worker id"));
  }
  if (!caller->ActsAs(*worker_id)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "principal '", caller->name, "' acts as workers ",
        caller->first_worker, "-", caller->last_worker, ", not worker ",
        *worker_id, " (", RpcMethodName(method), ")"));
  }
  return absl::OkStatus();
}

}  // namespace taups
