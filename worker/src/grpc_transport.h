// GrpcTransport: ShardTransport over gRPC's callback API. Several channels
// (each its own TCP connection) to one shard; calls are spread round-robin,
// each with a deadline of `timeout` from when it is sent.
//
// PushDense and PushSparse go out through gRPC's generic API with hand-made
// bytes (proto/raw_payload.h): the request's other fields serialized by
// protobuf, its gradient(s) as a slice borrowing the request's own bytes
// (Send), or the caller's memory beside the header (SendPushDense), so the
// tensor is not copied into gRPC's buffers. The bytes are ps.proto's
// PushDenseRequest / PushSparseRequest; any shard parses them. The caller may free the request
// as soon as `done` has run (the Send contract): an OK answer means every
// byte reached the shard; a call that ended otherwise (a deadline, a
// cancel) runs `done` only once gRPC has let go of the borrowed bytes.
//
// Thread-safe. The client core must let every call's `done` run before it
// destroys the transport (ClientCore waits for its calls in flight).
#ifndef TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_
#define TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_

#include <grpcpp/generic/generic_stub.h>

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "ps.grpc.pb.h"
#include "worker/src/shard_transport.h"

namespace taups {

class GrpcTransport final : public ShardTransport {
 public:
  using Stub = v1::ParameterServer::Stub;

  // One stub per channel; at least one channel.
  explicit GrpcTransport(
      const std::vector<std::shared_ptr<grpc::Channel>>& channels);

  void Send(Rpc rpc, absl::Duration timeout,
            const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override;
  // The gradient borrowed from the caller (a second slice beside the
  // header's bytes): no copy on this side.
  void SendPushDense(absl::Duration timeout, const v1::PushDenseRequest& header,
                     absl::string_view gradient, v1::PushResponse* response,
                     Done done) override;
  // Through the generic API too: the answer's values are copied once, from
  // gRPC's received slices into `values` (a raw answer of the right size)
  // or into response->values() (anything else).
  void PullDenseInto(absl::Duration timeout,
                     const v1::PullDenseRequest& request,
                     v1::PullDenseResponse* response, absl::Span<char> values,
                     bool* landed, Done done) override;
  // The same for PullSparse: `land` reads the rows straight from gRPC's
  // received slices (one copy, into the caller's rows).
  void PullSparseInto(absl::Duration timeout,
                      const v1::PullSparseRequest& request,
                      v1::PullSparseResponse* response, size_t values_size,
                      const std::function<void(SparsePullCall::Pieces)>& land,
                      bool* landed, Done done) override;

 private:
  struct Channel {
    std::unique_ptr<Stub> stub;
    std::unique_ptr<grpc::GenericStub> generic;  // the same channel
  };
  Channel& Pick() { return channels_[next_.fetch_add(1) % channels_.size()]; }
  // Encodes a PushDense into `out`, its payload borrowed until the
  // release callback runs (proto/raw_payload.h).
  using EncodePush = std::function<absl::Status(std::function<void()>,
                                                grpc::ByteBuffer* out)>;
  // A push (`method`: PushDense's or PushSparse's full name) with its
  // tensor borrowed (see the header comment); `encode` runs before this
  // returns.
  void SendRawPush(Channel& channel, const char* method,
                   absl::Duration timeout, EncodePush encode,
                   v1::PushResponse* response, Done done);

  std::vector<Channel> channels_;
  std::atomic<uint32_t> next_{0};
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_GRPC_TRANSPORT_H_
