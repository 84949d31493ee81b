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

Grant GrantOf(Rpc method) {
  switch (method) {
    case Rpc::kRegister:
    case Rpc::kHeartbeat:
    case Rpc::kLeave:
    case Rpc::kPullDense:
    case Rpc::kPushDense:
    case Rpc::kPullSparse:
    case Rpc::kPushSparse:
      return {true, false, false};
    case Rpc::kCreateTable:
    case Rpc::kDropTable:
    case Rpc::kSetConsistency:
    case Rpc::kCheckpoint:
    case Rpc::kEvictWorker:
    case Rpc::kRollback:
      return {false, true, false};
    case Rpc::kShardStatus:
      return {false, true, true};
    case Rpc::kGetTable:
    case Rpc::kStats:
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

bool ActsAsWorker(Rpc method) {
  const Grant grant = GrantOf(method);
  return grant.worker && !grant.admin;
}

absl::Status Authorize(const Principal* caller, Rpc method,
                       std::optional<uint32_t> worker_id) {
  if (caller == nullptr) {
    return absl::UnauthenticatedError(absl::StrCat(
        RpcName(method),
        ": no credential (send a bearer token, or a client certificate this "
        "shard maps to a principal)"));
  }
  if (!Allows(GrantOf(method), caller->role)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "principal '", caller->name, "' (role ", RoleName(caller->role),
        ") may not call ", RpcName(method)));
  }
  if (!ActsAsWorker(method)) return absl::OkStatus();
  if (!worker_id.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        RpcName(method), " authorized without its worker id"));
  }
  if (!caller->ActsAs(*worker_id)) {
    return absl::PermissionDeniedError(absl::StrCat(
        "principal '", caller->name, "' acts as workers ",
        caller->first_worker, "-", caller->last_worker, ", not worker ",
        *worker_id, " (", RpcName(method), ")"));
  }
  return absl::OkStatus();
}

}  // namespace taups
