#include "worker/src/inprocess_transport.h"

#include <cstdint>

namespace taups {
namespace {

// The concrete messages of one call (the RPC names their types).
template <typename Request>
const Request& In(const google::protobuf::Message& request) {
  return static_cast<const Request&>(request);
}
template <typename Request>
ResponseOf<Request>* Out(google::protobuf::Message* response) {
  return static_cast<ResponseOf<Request>*>(response);
}

}  // namespace

void InProcessTransport::Send(Rpc rpc, absl::Duration timeout,
                              const google::protobuf::Message& request,
                              google::protobuf::Message* response, Done done) {
  done(Dispatch(rpc, absl::Now() + timeout, request, response));
}

void InProcessTransport::SendPushDense(absl::Duration,
                                       const v1::PushDenseRequest& header,
                                       absl::string_view gradient,
                                       v1::PushResponse* response, Done done) {
  done(shard_->PushDense(header, gradient, response));
}

void InProcessTransport::PullDenseInto(absl::Duration timeout,
                                       const v1::PullDenseRequest& request,
                                       v1::PullDenseResponse* response,
                                       absl::Span<char> values, bool* landed,
                                       Done done) {
  *landed = false;
  if (reinterpret_cast<uintptr_t>(values.data()) % alignof(float) != 0 ||
      values.size() % sizeof(float) != 0) {
    return ShardTransport::PullDenseInto(timeout, request, response, values,
                                         landed, std::move(done));
  }
  const absl::Span<float> floats(reinterpret_cast<float*>(values.data()),
                                 values.size() / sizeof(float));
  done(shard_->PullDenseInto(request, absl::Now() + timeout, floats, landed,
                             response));
}

absl::Status InProcessTransport::Dispatch(
    Rpc rpc, absl::Time deadline, const google::protobuf::Message& request,
    google::protobuf::Message* response) {
  switch (rpc) {
    case Rpc::kCreateTable:
      return shard_->CreateTable(In<v1::CreateTableRequest>(request),
                                 Out<v1::CreateTableRequest>(response));
    case Rpc::kGetTable:
      return shard_->GetTable(In<v1::GetTableRequest>(request),
                              Out<v1::GetTableRequest>(response));
    case Rpc::kPullDense:
      return shard_->PullDense(In<v1::PullDenseRequest>(request), deadline,
                               Out<v1::PullDenseRequest>(response));
    case Rpc::kPushDense:
      return shard_->PushDense(In<v1::PushDenseRequest>(request),
                               Out<v1::PushDenseRequest>(response));
    case Rpc::kPullSparse:
      return shard_->PullSparse(In<v1::PullSparseRequest>(request), deadline,
                                Out<v1::PullSparseRequest>(response));
    case Rpc::kPushSparse:
      return shard_->PushSparse(In<v1::PushSparseRequest>(request),
                                Out<v1::PushSparseRequest>(response));
    case Rpc::kRegister:
      return shard_->Register(In<v1::RegisterRequest>(request),
                              Out<v1::RegisterRequest>(response));
    case Rpc::kHeartbeat:
      return shard_->Heartbeat(In<v1::HeartbeatRequest>(request),
                               Out<v1::HeartbeatRequest>(response));
    case Rpc::kLeave:
      return shard_->Leave(In<v1::LeaveRequest>(request),
                           Out<v1::LeaveRequest>(response));
    case Rpc::kSetConsistency:
      return shard_->SetConsistency(In<v1::SetConsistencyRequest>(request),
                                    Out<v1::SetConsistencyRequest>(response));
    case Rpc::kStats:
      return shard_->Stats(In<v1::StatsRequest>(request),
                           Out<v1::StatsRequest>(response));
    case Rpc::kDropTable:
      return shard_->DropTable(In<v1::DropTableRequest>(request),
                               Out<v1::DropTableRequest>(response));
    case Rpc::kCheckpoint:
      return shard_->Checkpoint(In<v1::CheckpointRequest>(request),
                                Out<v1::CheckpointRequest>(response));
    case Rpc::kEvictWorker:
      return shard_->EvictWorker(In<v1::EvictWorkerRequest>(request),
                                 Out<v1::EvictWorkerRequest>(response));
    case Rpc::kShardStatus:
      return shard_->ShardStatus(In<v1::ShardStatusRequest>(request),
                                 Out<v1::ShardStatusRequest>(response));
    case Rpc::kRollback:
      return shard_->Rollback(In<v1::RollbackRequest>(request),
                              Out<v1::RollbackRequest>(response));
  }
  return absl::InternalError("unknown RPC");
}

std::vector<std::unique_ptr<ShardTransport>> InProcessTransports(
    absl::Span<ShardCalls* const> shards) {
  std::vector<std::unique_ptr<ShardTransport>> transports;
  for (ShardCalls* shard : shards) {
    transports.push_back(std::make_unique<InProcessTransport>(shard));
  }
  return transports;
}

}  // namespace taups
