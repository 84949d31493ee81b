// GrpcTransport: ShardTransport over gRPC's callback API. Several channels
// (each its own TCP connection) to one shard; calls are spread round-robin,
// each with a deadline of `timeout` from when it is sent.
//
// Thread-safe. The client core must let every call's `done` run before it
// destroys the transport (ClientCore waits for its calls in flight).
#ifndef TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_
#define TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <vector>

#include "ps.grpc.pb.h"
#include "worker/src/shard_transport.h"

namespace taups {

class GrpcTransport final : public ShardTransport {
 public:
  using Stub = v1::ParameterServer::Stub;

  explicit GrpcTransport(std::vector<std::unique_ptr<Stub>> stubs)
      : stubs_(std::move(stubs)) {}

  void Send(Rpc rpc, absl::Duration timeout,
            const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override;

 private:
  Stub* Pick() { return stubs_[next_.fetch_add(1) % stubs_.size()].get(); }

  std::vector<std::unique_ptr<Stub>> stubs_;
  std::atomic<uint32_t> next_{0};
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_
