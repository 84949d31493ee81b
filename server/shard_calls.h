// ShardCalls: one shard's RPCs as plain function calls on the wire messages,
// with no network and no gRPC types: convert the request, call the
// ParameterStore, convert the answer, return an absl::Status. What the gRPC
// edge (grpc_service.cc) does per handler, for callers in the same process:
// the worker's InProcessTransport (worker/src/inprocess_transport.h), which
// runs the real client core against real shards without sockets.
//
// Request checks are the store's (sizes against its limits before anything
// is allocated, ranges, keys, finiteness); a refused push slice is reported
// to the store (RefusePush) so the rest of its push is refused too. Every
// answer carries `incarnation`. Wire traffic is counted per table as the
// gRPC edge counts it.
//
// Rollback (shard_rollback.cc) restores a sync step's checkpoint in place:
// pushes, parking pulls, membership and table admin calls hold a gate
// shared while they run; Rollback holds it exclusively for the restore,
// so each such call runs wholly before it or wholly after it, and the
// incarnation changes with it (answers after it carry the new one).
// Blocking pulls (the in-process transport's) do not hold the gate: they
// read one table part at one point, before or after its restore.
//
// Thread-safe (the store is). The store must outlive this object.
#ifndef TAUPS_SERVER_SHARD_CALLS_H_
#define TAUPS_SERVER_SHARD_CALLS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "ps.pb.h"
#include "server/lent_values.h"
#include "server/parameter_store.h"
#include "server/pull_waiters.h"
#include "server/shard_checkpointer.h"
#include "server/wire_traffic.h"

namespace taups {

class ShardCalls {
 public:
  ShardCalls(ParameterStore* store, uint64_t incarnation)
      : store_(store), incarnation_(incarnation) {}

  absl::Status CreateTable(const v1::CreateTableRequest& request,
                           v1::CreateTableResponse* response);
  absl::Status GetTable(const v1::GetTableRequest& request,
                        v1::GetTableResponse* response);
  // A pull that waits for its policy (sync, semi-sync, ssp) blocks the
  // calling thread at most until `deadline` (DEADLINE_EXCEEDED).
  absl::Status PullDense(const v1::PullDenseRequest& request,
                         absl::Time deadline, v1::PullDenseResponse* response);
  // The same pull whose raw answer (no pull codec) of exactly
  // values.size() floats the store writes straight into `values`, with no
  // bytes in response->values() and *landed set true: the one copy, from
  // the table to the caller. Any other answer is PullDense's, *landed
  // false. `values` is written only once the pull has passed its checks
  // and its policy; a refused or timed-out pull leaves it unchanged.
  absl::Status PullDenseInto(const v1::PullDenseRequest& request,
                             absl::Time deadline, absl::Span<float> values,
                             bool* landed, v1::PullDenseResponse* response);
  absl::Status PushDense(const v1::PushDenseRequest& request,
                         v1::PushResponse* response);
  // The same push with its gradient's bytes given apart from the message
  // (whose own `gradient` is then ignored): for an edge that takes the
  // tensor from the received buffers without copying it into the message.
  // `holder`, when given, keeps `gradient_bytes` alive and unchanged as long
  // as it lives, so a slice staged for its push's other slices refers to
  // them instead of being copied. `bytes_max_abs`, when not negative, is
  // MaxAbs of `gradient_bytes` read as floats (measured by the edge while
  // it gathered them; used only for a raw, not encoded, gradient), so the
  // finite check does not scan them again.
  absl::Status PushDense(const v1::PushDenseRequest& request,
                         absl::string_view gradient_bytes,
                         v1::PushResponse* response,
                         std::shared_ptr<const void> holder = nullptr,
                         float bytes_max_abs = -1.0f);
  // The same push with a raw (not encoded: the caller checks) gradient
  // left in the pieces it was received in (FloatPieces), read there by the
  // finite check and the apply. `holder` (not null) keeps `gradient` and
  // its bytes alive and unchanged as long as it lives, for a staged slice.
  absl::Status PushDense(const v1::PushDenseRequest& request,
                         const FloatPieces& gradient,
                         v1::PushResponse* response,
                         std::shared_ptr<const void> holder);
  absl::Status PullSparse(const v1::PullSparseRequest& request,
                          absl::Time deadline, v1::PullSparseResponse* response);
  // Where a plain (not encoded) pull's values may go instead of the
  // response's bytes.
  struct ValuesRoom {
    // Called once per answer, after the pull's checks and before its read,
    // with the number of floats; returns room for exactly that many
    // (uninitialized is fine: every float is written) or an empty span to
    // leave the values to the response.
    std::function<absl::Span<float>(uint64_t floats)> take;
    // When set, a dense pull of at least lend_min_floats values is lent
    // here from the table's memory instead (ParameterStore::LendDense);
    // `take` is then not called.
    LentValues* lend = nullptr;
    uint64_t lend_min_floats = 0;
  };
  // The same pulls for an edge that must not block a thread: a pull that
  // has to wait is parked with *park instead (ParameterStore's
  // PullContext::park), the response is left empty and the ticket
  // returned; *park is then called once (OK: call again to answer it; any
  // other status is the call's). An empty ticket: answered (or refused).
  // With `room` and `landed` given, *landed says whether an answered pull's
  // values went to the room or were lent (false when refused or parked).
  absl::StatusOr<ParkedPull> PullDense(const v1::PullDenseRequest& request,
                                       absl::Time deadline,
                                       PullWaiters::Wake* park,
                                       v1::PullDenseResponse* response,
                                       const ValuesRoom* room = nullptr,
                                       bool* landed = nullptr);
  absl::StatusOr<ParkedPull> PullSparse(const v1::PullSparseRequest& request,
                                        absl::Time deadline,
                                        PullWaiters::Wake* park,
                                        v1::PullSparseResponse* response,
                                        const ValuesRoom* room = nullptr,
                                        bool* landed = nullptr);
  absl::Status PushSparse(const v1::PushSparseRequest& request,
                          v1::PushResponse* response);
  // The same push with its gradients' bytes given apart from the message
  // (whose own `gradients` is then ignored), as PushDense's: for an edge
  // that reads them from the received buffers. `gradient_bytes` need only
  // stay valid for the call; `bytes_max_abs` is PushDense's.
  absl::Status PushSparse(const v1::PushSparseRequest& request,
                          absl::string_view gradient_bytes,
                          v1::PushResponse* response,
                          float bytes_max_abs = -1.0f);
  absl::Status Register(const v1::RegisterRequest& request,
                        v1::RegisterResponse* response);
  absl::Status Heartbeat(const v1::HeartbeatRequest& request,
                         v1::HeartbeatResponse* response);
  absl::Status Leave(const v1::LeaveRequest& request,
                     v1::LeaveResponse* response);
  absl::Status SetConsistency(const v1::SetConsistencyRequest& request,
                              v1::SetConsistencyResponse* response);
  absl::Status Stats(const v1::StatsRequest& request,
                     v1::StatsResponse* response);
  absl::Status DropTable(const v1::DropTableRequest& request,
                         v1::DropTableResponse* response);

  // Admin (shard_admin_calls.cc). Checkpoint: FAILED_PRECONDITION without
  // a checkpointer (see SetShardLife); answers once it is durable.
  absl::Status Checkpoint(const v1::CheckpointRequest& request,
                          v1::CheckpointResponse* response);
  absl::Status EvictWorker(const v1::EvictWorkerRequest& request,
                           v1::EvictWorkerResponse* response);
  // Reader / admin: Stats of every table plus the shard's own state.
  absl::Status ShardStatus(const v1::ShardStatusRequest& request,
                           v1::ShardStatusResponse* response);
  // Admin (shard_rollback.cc): restores in place the newest checkpoint of
  // sync step request.step, all or nothing (ps.proto RollbackRequest).
  absl::Status Rollback(const v1::RollbackRequest& request,
                        v1::RollbackResponse* response)
      ABSL_LOCKS_EXCLUDED(gate_);

  // What the shard knows beyond its store, for Checkpoint and ShardStatus.
  // Set once, before the first call (ShardServer does, before it opens its
  // port); left unset (the in-process transport), the shard has no
  // checkpointer and counts its uptime from this object's construction.
  struct ShardLife {
    ShardCheckpointer* checkpointer = nullptr;  // null: no checkpoint dir
    absl::Time started = absl::Now();
    const std::atomic<bool>* serving = nullptr;  // null: always
    // Started from a checkpoint whose sync / semi-sync tables were at this
    // step (the smallest open step among them); unset: started empty, or no
    // such table. Its step cuts after it are not a model that existed
    // until a Rollback (ShardStatus resumed_alone).
    std::optional<uint64_t> resumed_step;
  };
  void SetShardLife(const ShardLife& life) {
    life_ = life;
    resumed_alone_.store(life.resumed_step.has_value());
  }

  ParameterStore* store() const { return store_; }
  uint64_t incarnation() const { return incarnation_.load(); }
  const WireTraffic& traffic() const { return traffic_; }

 private:
  // A dense push's answer once the store took it: counted, on the wire.
  void AnswerPush(const v1::PushDenseRequest& request, uint64_t floats,
                  uint64_t wire_bytes, const PushOutcome& outcome,
                  v1::PushResponse* response);

  ParameterStore* const store_;
  std::atomic<uint64_t> incarnation_;  // changed only by Rollback
  WireTraffic traffic_;
  ShardLife life_;
  // Held shared by the calls a rollback must not interleave with.
  mutable absl::Mutex gate_;
  std::atomic<uint64_t> rollbacks_{0};
  std::atomic<bool> resumed_alone_{false};  // cleared by a Rollback
  absl::Mutex rollback_mu_;  // one Rollback at a time
};

}  // namespace taups

#endif  // TAUPS_SERVER_SHARD_CALLS_H_
