// The gRPC face of one shard: decodes requests, calls the ParameterStore,
// encodes responses. No logic of its own beyond byte <-> float views.
// With an AuthGate, every handler first checks its caller (one line; the
// decision is server/authorization.h's).
//
// Thread-safe (the store is).
#ifndef TAUPS_SERVER_GRPC_SERVICE_H_
#define TAUPS_SERVER_GRPC_SERVICE_H_

#include <cstdint>

#include <optional>

#include "ps.grpc.pb.h"
#include "server/authorization.h"
#include "server/parameter_store.h"
#include "server/wire_traffic.h"

namespace taups {

class ParameterServerService final : public v1::ParameterServer::Service {
 public:
  // `store` must outlive the service. `incarnation` identifies this run of
  // the shard; it is sent with every response. `auth`, when not null, must
  // outlive the service; null lets every caller call everything.
  ParameterServerService(ParameterStore* store, uint64_t incarnation,
                         const class AuthGate* auth = nullptr);

  grpc::Status CreateTable(grpc::ServerContext*, const v1::CreateTableRequest*,
                           v1::CreateTableResponse*) override;
  grpc::Status GetTable(grpc::ServerContext*, const v1::GetTableRequest*,
                        v1::GetTableResponse*) override;
  grpc::Status PullDense(grpc::ServerContext*, const v1::PullDenseRequest*,
                         v1::PullDenseResponse*) override;
  grpc::Status PushDense(grpc::ServerContext*, const v1::PushDenseRequest*,
                         v1::PushResponse*) override;
  grpc::Status PullSparse(grpc::ServerContext*, const v1::PullSparseRequest*,
                          v1::PullSparseResponse*) override;
  grpc::Status PushSparse(grpc::ServerContext*, const v1::PushSparseRequest*,
                          v1::PushResponse*) override;
  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest*,
                        v1::RegisterResponse*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse*) override;
  grpc::Status Leave(grpc::ServerContext*, const v1::LeaveRequest*,
                     v1::LeaveResponse*) override;
  grpc::Status SetConsistency(grpc::ServerContext*,
                              const v1::SetConsistencyRequest*,
                              v1::SetConsistencyResponse*) override;
  grpc::Status Stats(grpc::ServerContext*, const v1::StatsRequest*,
                     v1::StatsResponse*) override;
  // Admin: drops this shard's part of a table (ParameterStore::DropTable).
  grpc::Status DropTable(grpc::ServerContext*, const v1::DropTableRequest*,
                         v1::DropTableResponse*) override;

  // What the tensors took on the wire, per table (for /metrics).
  const WireTraffic& traffic() const { return traffic_; }

 private:
  // OK without a gate; else the gate's answer for the caller of `context`.
  grpc::Status Allow(const grpc::ServerContext* context, Rpc method,
                     std::optional<uint32_t> worker_id = std::nullopt) const;

  ParameterStore* const store_;
  const uint64_t incarnation_;
  const AuthGate* const auth_;
  WireTraffic traffic_;
};

}  // namespace taups

#endif  // TAUPS_SERVER_GRPC_SERVICE_H_
