// ShardTransport: how the client core reaches one shard. One object per
// shard; each call is one attempt of one unary RPC, asynchronous, taking the
// wire request message and filling the wire response message.
//
// The client core (ClientCore: slicing, routing, base versions, compression,
// push seqs, retries, membership) talks only to this interface. Over a
// network it is GrpcTransport (grpc_transport.h); in one process it is
// InProcessTransport (inprocess_transport.h), which calls a shard's core
// directly; tests wrap either in FaultInjectingTransport.
//
// Contract of Send:
// - `request` and `response` belong to the caller and stay valid until
//   `done` has run; the transport reads the request and writes the response
//   only until then (a transport that keeps working on a call after
//   answering it, a duplicate say, uses its own copies).
// - `done` runs exactly once, on any thread, possibly before Send returns.
//   The response is meaningful only when the status is OK.
// - UNAVAILABLE means the request may not have arrived; DEADLINE_EXCEEDED
//   (after `timeout`) that it may or may not have been applied. The caller
//   decides what may be resent (RetryingCall).
//
// Two calls carry a dense tensor beside the message rather than in it, so
// the client core makes no copy of its own (the bytes on the wire are the
// same; see SendPushDense and PullDenseInto). Every transport has them: the
// defaults here go through Send with a whole message (one copy each way),
// GrpcTransport and InProcessTransport override them.
//
// Implementations are thread-safe: many calls may be in flight at once.
// No gRPC types here: the messages are protobuf (ps.pb.h).
#ifndef TAUPS_WORKER_SRC_SHARD_TRANSPORT_H_
#define TAUPS_WORKER_SRC_SHARD_TRANSPORT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/rpc.h"
#include "ps.pb.h"

namespace taups {

// Which RPC a request message is for, and its response message.
template <typename Request>
struct RpcOf;
#define TAUPS_RPC_OF(request, response, rpc) \
  template <>                                \
  struct RpcOf<v1::request> {                \
    static constexpr Rpc kRpc = Rpc::rpc;    \
    using Response = v1::response;           \
  }
TAUPS_RPC_OF(CreateTableRequest, CreateTableResponse, kCreateTable);
TAUPS_RPC_OF(GetTableRequest, GetTableResponse, kGetTable);
TAUPS_RPC_OF(PullDenseRequest, PullDenseResponse, kPullDense);
TAUPS_RPC_OF(PushDenseRequest, PushResponse, kPushDense);
TAUPS_RPC_OF(PullSparseRequest, PullSparseResponse, kPullSparse);
TAUPS_RPC_OF(PushSparseRequest, PushResponse, kPushSparse);
TAUPS_RPC_OF(RegisterRequest, RegisterResponse, kRegister);
TAUPS_RPC_OF(HeartbeatRequest, HeartbeatResponse, kHeartbeat);
TAUPS_RPC_OF(LeaveRequest, LeaveResponse, kLeave);
TAUPS_RPC_OF(SetConsistencyRequest, SetConsistencyResponse, kSetConsistency);
TAUPS_RPC_OF(StatsRequest, StatsResponse, kStats);
TAUPS_RPC_OF(DropTableRequest, DropTableResponse, kDropTable);
TAUPS_RPC_OF(CheckpointRequest, CheckpointResponse, kCheckpoint);
TAUPS_RPC_OF(EvictWorkerRequest, EvictWorkerResponse, kEvictWorker);
TAUPS_RPC_OF(ShardStatusRequest, ShardStatusResponse, kShardStatus);
TAUPS_RPC_OF(RollbackRequest, RollbackResponse, kRollback);
#undef TAUPS_RPC_OF

// A PushDense whose gradient stays in memory the client does not own
// (the caller's tensor, or an encoded block the push owns) until the call's
// last attempt is done. `header` is the request without its gradient.
// table(), origin() and mutable_origin() are what the push plumbing reads
// and changes (ClientCore::SendPush: a redo's fresh seq).
struct DensePushCall {
  v1::PushDenseRequest header;
  absl::string_view gradient;

  const std::string& table() const { return header.table(); }
  const v1::PushOrigin& origin() const { return header.origin(); }
  v1::PushOrigin* mutable_origin() { return header.mutable_origin(); }
};

// A PullDense whose raw answer lands in `values` (the caller's floats for
// this slice, as bytes); `landed` says whether the last attempt's did.
struct DensePullCall {
  v1::PullDenseRequest header;
  absl::Span<char> values;
  bool landed = false;
};

// A PullSparse whose raw answer is scattered by `land` straight from the
// received bytes: `land(pieces)` runs once for an answer that is raw (not
// `encoded`) and exactly `values_size` bytes, `pieces` being those bytes as
// consecutive views (one for a contiguous answer, else gRPC's received
// slices; valid only during `land`, read them with PieceReader,
// proto/raw_payload.h); `landed` says whether the last attempt's answer
// did so.
struct SparsePullCall {
  using Pieces = absl::Span<const absl::string_view>;
  v1::PullSparseRequest header;
  size_t values_size = 0;
  std::function<void(Pieces)> land;
  bool landed = false;
};

template <>
struct RpcOf<DensePushCall> {
  static constexpr Rpc kRpc = Rpc::kPushDense;
  using Response = v1::PushResponse;
};
template <>
struct RpcOf<DensePullCall> {
  static constexpr Rpc kRpc = Rpc::kPullDense;
  using Response = v1::PullDenseResponse;
};

template <>
struct RpcOf<SparsePullCall> {
  static constexpr Rpc kRpc = Rpc::kPullSparse;
  using Response = v1::PullSparseResponse;
};

template <typename Request>
using ResponseOf = typename RpcOf<Request>::Response;

class ShardTransport {
 public:
  using Done = std::function<void(absl::Status)>;

  virtual ~ShardTransport() = default;

  // One attempt of `rpc` (see the contract above). `request` and `response`
  // are the message types RpcOf names for `rpc`.
  virtual void Send(Rpc rpc, absl::Duration timeout,
                    const google::protobuf::Message& request,
                    google::protobuf::Message* response, Done done) = 0;

  // PushDense of `header` (its own gradient empty) carrying `gradient`,
  // which stays valid and unchanged until `done` has run; the rest is
  // Send's contract. The default sends a copy of the whole message.
  virtual void SendPushDense(absl::Duration timeout,
                             const v1::PushDenseRequest& header,
                             absl::string_view gradient,
                             v1::PushResponse* response, Done done);

  // PullDense whose answer, when it is raw (not `encoded`) and exactly
  // values.size() bytes, is written into `values` and left out of
  // response->values(), with *landed set true before `done` runs; any
  // other answer is in `response` as Send leaves it (*landed false).
  // `values` and `landed` stay valid until `done` has run. The default
  // copies from the whole response.
  virtual void PullDenseInto(absl::Duration timeout,
                             const v1::PullDenseRequest& request,
                             v1::PullDenseResponse* response,
                             absl::Span<char> values, bool* landed, Done done);

  // PullSparse whose answer, when it is raw and exactly `values_size`
  // bytes, is handed to `land` (SparsePullCall) and left out of
  // response->values(), with *landed set true before `done` runs; any other
  // answer is in `response` as Send leaves it. `land` and `landed` stay
  // valid until `done` has run. The default reads from the whole response.
  virtual void PullSparseInto(
      absl::Duration timeout, const v1::PullSparseRequest& request,
      v1::PullSparseResponse* response, size_t values_size,
      const std::function<void(SparsePullCall::Pieces)>& land, bool* landed,
      Done done);
};

}  // namespace taups

#endif  // TAUPS_WORKER_SRC_SHARD_TRANSPORT_H_
