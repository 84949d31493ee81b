// The gRPC face of one shard, on gRPC's callback API: per RPC, the
// caller's authorization (the AuthGate, when there is one), the call's
// deadline, then ShardCalls (server/shard_calls.h) — the one place
// requests are converted for the ParameterStore, shared with the worker's
// in-process transport — and the status mapped to gRPC's once.
//
// No call holds a thread while it waits. A pull its policy does not let
// read yet (a sync step still open, an SSP bound) is parked on its
// partition and answered, on a small executor, when a change lets it read;
// it waits at most min(the client's deadline, max_wait) and then gets
// DEADLINE_EXCEEDED naming what it waited for; a client that cancels or
// goes away releases it (and its WaitingCalls seat); CloseWaits (shutdown)
// answers every parked pull UNAVAILABLE.
//
// Thread-safe (ShardCalls and the store are).
#ifndef TAUPS_SERVER_GRPC_SERVICE_H_
#define TAUPS_SERVER_GRPC_SERVICE_H_

#include <cstdint>

#include <optional>

#include "absl/time/time.h"
#include "ps.grpc.pb.h"
#include "server/answer_buffers.h"
#include "server/answers_in_flight.h"
#include "server/authorization.h"
#include "server/call_executor.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "server/wire_traffic.h"

namespace taups {

// PushDense, PullDense, PushSparse and PullSparse are raw methods: their
// tensors (a push's gradients, a pull's values) are taken from and put into
// gRPC's buffers without a protobuf copy (proto/raw_payload.h); the bytes on
// the wire are still ps.proto's messages.
using ParameterServerServiceBase =
    v1::ParameterServer::WithRawCallbackMethod_PushDense<
        v1::ParameterServer::WithRawCallbackMethod_PullDense<
            v1::ParameterServer::WithRawCallbackMethod_PushSparse<
                v1::ParameterServer::WithRawCallbackMethod_PullSparse<
                    v1::ParameterServer::CallbackService>>>>;

class ParameterServerService final : public ParameterServerServiceBase {
 public:
  // `store` must outlive the service. `incarnation` identifies this run of
  // the shard; it is sent with every response. `auth`, when not null, must
  // outlive the service; null lets every caller call everything. A parked
  // pull waits at most `max_wait` (> 0).
  ParameterServerService(ParameterStore* store, uint64_t incarnation,
                         const class AuthGate* auth = nullptr,
                         absl::Duration max_wait = absl::Seconds(60));

  grpc::ServerUnaryReactor* CreateTable(grpc::CallbackServerContext*,
                                        const v1::CreateTableRequest*,
                                        v1::CreateTableResponse*) override;
  grpc::ServerUnaryReactor* GetTable(grpc::CallbackServerContext*,
                                     const v1::GetTableRequest*,
                                     v1::GetTableResponse*) override;
  // A PullDenseRequest in, a PullDenseResponse out, as ps.proto's bytes.
  grpc::ServerUnaryReactor* PullDense(grpc::CallbackServerContext*,
                                      const grpc::ByteBuffer*,
                                      grpc::ByteBuffer*) override;
  // A PushDenseRequest in, a PushResponse out, as ps.proto's bytes.
  grpc::ServerUnaryReactor* PushDense(grpc::CallbackServerContext*,
                                      const grpc::ByteBuffer*,
                                      grpc::ByteBuffer*) override;
  // A PullSparseRequest in, a PullSparseResponse out, as ps.proto's bytes.
  grpc::ServerUnaryReactor* PullSparse(grpc::CallbackServerContext*,
                                       const grpc::ByteBuffer*,
                                       grpc::ByteBuffer*) override;
  // A PushSparseRequest in, a PushResponse out, as ps.proto's bytes.
  grpc::ServerUnaryReactor* PushSparse(grpc::CallbackServerContext*,
                                       const grpc::ByteBuffer*,
                                       grpc::ByteBuffer*) override;
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext*,
                                     const v1::RegisterRequest*,
                                     v1::RegisterResponse*) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext*,
                                      const v1::HeartbeatRequest*,
                                      v1::HeartbeatResponse*) override;
  grpc::ServerUnaryReactor* Leave(grpc::CallbackServerContext*,
                                  const v1::LeaveRequest*,
                                  v1::LeaveResponse*) override;
  grpc::ServerUnaryReactor* SetConsistency(grpc::CallbackServerContext*,
                                           const v1::SetConsistencyRequest*,
                                           v1::SetConsistencyResponse*) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext*,
                                  const v1::StatsRequest*,
                                  v1::StatsResponse*) override;
  // Admin: drops this shard's part of a table (ParameterStore::DropTable).
  grpc::ServerUnaryReactor* DropTable(grpc::CallbackServerContext*,
                                      const v1::DropTableRequest*,
                                      v1::DropTableResponse*) override;

  // Admin: a checkpoint now; evict or drain a worker. Reader / admin: the
  // shard's status (ShardCalls).
  grpc::ServerUnaryReactor* Checkpoint(grpc::CallbackServerContext*,
                                       const v1::CheckpointRequest*,
                                       v1::CheckpointResponse*) override;
  grpc::ServerUnaryReactor* EvictWorker(grpc::CallbackServerContext*,
                                        const v1::EvictWorkerRequest*,
                                        v1::EvictWorkerResponse*) override;
  grpc::ServerUnaryReactor* ShardStatus(grpc::CallbackServerContext*,
                                        const v1::ShardStatusRequest*,
                                        v1::ShardStatusResponse*) override;
  // Admin: restore a sync step's checkpoint in place (ShardCalls::Rollback).
  grpc::ServerUnaryReactor* Rollback(grpc::CallbackServerContext*,
                                     const v1::RollbackRequest*,
                                     v1::RollbackResponse*) override;
  // The incarnation answers carry now (a rollback changes it).
  uint64_t incarnation() const { return calls_.incarnation(); }
  // The checkpointer, start time and serving flag Checkpoint and
  // ShardStatus report; before the server starts (ShardCalls::SetShardLife).
  void SetShardLife(const ShardCalls::ShardLife& life) { calls_.SetShardLife(life); }

  // What the tensors took on the wire, per table (for /metrics).
  const WireTraffic& traffic() const { return calls_.traffic(); }
  // The memory large pull answers are sent from (for /metrics).
  std::shared_ptr<const AnswerBuffers> answer_buffers() const {
    return answer_buffers_;
  }
  // The bound on pull answers not yet read (store->limits().
  // max_pull_in_flight_bytes; for /metrics).
  std::shared_ptr<const AnswersInFlight> answers_in_flight() const {
    return answers_in_flight_;
  }

 private:
  // OK without a gate; else the gate's answer for the caller of `context`.
  grpc::Status Allow(const grpc::CallbackServerContext* context, Rpc method,
                     std::optional<uint32_t> worker_id = std::nullopt) const;
  // How long a pull of `context` may wait: its deadline, at most max_wait_.
  absl::Time WaitUntil(const grpc::CallbackServerContext& context) const;

  ShardCalls calls_;
  const AuthGate* const auth_;
  const absl::Duration max_wait_;
  // Large plain pull answers are sent from these (server/answer_buffers.h).
  // Declared before woken_pulls_, whose pulls take from it, so it outlives
  // them.
  const std::shared_ptr<AnswerBuffers> answer_buffers_ = AnswerBuffers::Create();
  // Every pull answer is admitted here before it is sent and holds its
  // admission until gRPC lets go of it.
  const std::shared_ptr<AnswersInFlight> answers_in_flight_;
  // Runs the pulls woken from their parking.
  CallExecutor woken_pulls_{2};
};

}  // namespace taups

#endif  // TAUPS_SERVER_GRPC_SERVICE_H_
