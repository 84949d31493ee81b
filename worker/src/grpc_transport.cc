#include "worker/src/grpc_transport.h"

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "common/grpc_lifetime.h"
#include "grpc_status_convert.h"
#include "proto/raw_payload.h"

namespace taups {
namespace {

using Stub = GrpcTransport::Stub;
using Async = Stub::async_interface;

// One call through the stub's async interface: `method` is the interface's
// member for the RPC. The context lives until gRPC's callback has run.
template <typename Request, typename Response>
void Invoke(Stub* stub, absl::Duration timeout,
            void (Async::*method)(grpc::ClientContext*, const Request*,
                                  Response*, std::function<void(grpc::Status)>),
            const google::protobuf::Message& request,
            google::protobuf::Message* response, ShardTransport::Done done) {
  auto context = std::make_shared<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  (stub->async()->*method)(
      context.get(), static_cast<const Request*>(&request),
      static_cast<Response*>(response),
      [context, done = std::move(done)](grpc::Status status) {
        done(FromGrpcStatus(status));
      });
}

// Runs a raw call's `done` at the right time. An OK answer means the shard
// received the whole request (a unary handler runs only then), so every
// byte has left the borrowed memory and `done` runs at once; gRPC's later
// release only drops its reference. Any other end (a deadline, a cancel, a
// refusal sent before the request was read) may leave bytes queued, so
// `done` waits until gRPC has released them as well.
class ReleaseJoin {
 public:
  explicit ReleaseJoin(ShardTransport::Done done) : done_(std::move(done)) {}
  void Finished(absl::Status status) {
    bool run = false;
    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
      run = released_ || status.ok();
      if (run) ran_ = true;
      status_ = status;
    }
    if (run) done_(std::move(status));
  }
  void Released() {
    absl::Status status;
    bool run = false;
    {
      absl::MutexLock lock(&mu_);
      released_ = true;
      run = finished_ && !ran_;
      if (run) {
        ran_ = true;
        status = status_;
      }
    }
    if (run) done_(std::move(status));
  }

 private:
  ShardTransport::Done done_;
  absl::Mutex mu_;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  bool ran_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

constexpr char kPushDenseMethod[] = "/taups.v1.ParameterServer/PushDense";
constexpr char kPullDenseMethod[] = "/taups.v1.ParameterServer/PullDense";
constexpr char kPushSparseMethod[] = "/taups.v1.ParameterServer/PushSparse";
constexpr char kPullSparseMethod[] = "/taups.v1.ParameterServer/PullSparse";

}  // namespace

GrpcTransport::GrpcTransport(
    const std::vector<std::shared_ptr<grpc::Channel>>& channels) {
  // Callback calls on channels made outside Client::Connect (tests, tools)
  // need the same guard against the callback queue's shutdown race.
  KeepCallbackQueueAlive();
  for (const std::shared_ptr<grpc::Channel>& channel : channels) {
    channels_.push_back(
        {v1::ParameterServer::NewStub(channel),
         std::make_unique<grpc::GenericStub>(channel)});
  }
}

void GrpcTransport::SendRawPush(Channel& channel, const char* method,
                                absl::Duration timeout, EncodePush encode,
                                v1::PushResponse* response, Done done) {
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  auto join = std::make_shared<ReleaseJoin>(std::move(done));
  auto call = std::make_shared<Call>();
  // The release callback holds only the join, not the call (whose buffer
  // holds the slice): no cycle.
  absl::Status encoded = encode([join] { join->Released(); }, &call->request);
  if (!encoded.ok()) return join->Finished(encoded);
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  channel.generic->UnaryCall(
      &call->context, method, grpc::StubOptions(), &call->request,
      &call->response, [call, join, response](grpc::Status status) {
        absl::Status result = FromGrpcStatus(status);
        if (result.ok()) result = DecodeMessage(call->response, response);
        // Our reference to the payload goes now; gRPC's, when it is done.
        call->request.Clear();
        join->Finished(std::move(result));
      });
}

void GrpcTransport::SendPushDense(absl::Duration timeout,
                                  const v1::PushDenseRequest& header,
                                  absl::string_view gradient,
                                  v1::PushResponse* response, Done done) {
  SendRawPush(
      Pick(), kPushDenseMethod, timeout,
      [&](std::function<void()> on_release, grpc::ByteBuffer* out) {
        return EncodeWithPayload(header,
                                 v1::PushDenseRequest::kGradientFieldNumber,
                                 gradient, std::move(on_release), out);
      },
      response, std::move(done));
}

namespace {

// One raw pull through `channel`'s generic stub: `request` serialized by
// protobuf, the answer's field `field` left in the received slices and
// handed to `land(payload)`, which returns whether it took the values (else
// they are copied into the response's field, as protobuf would).
template <typename Request, typename Response, typename Land>
void RawPull(grpc::GenericStub* generic, const char* method,
             absl::Duration timeout, const Request& request,
             Response* response, uint32_t field, Land land,
             ShardTransport::Done done) {
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };
  auto call = std::make_shared<Call>();
  if (absl::Status encoded = EncodeMessage(request, &call->request);
      !encoded.ok()) {
    return done(encoded);
  }
  call->context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  generic->UnaryCall(
      &call->context, method, grpc::StubOptions(), &call->request,
      &call->response,
      [call, response, field, land = std::move(land),
       done = std::move(done)](grpc::Status status) {
        absl::Status result = FromGrpcStatus(status);
        if (result.ok()) {
          PayloadPieces payload;
          result = DecodeLeavingPayload(call->response, field, response,
                                        &payload);
          if (result.ok() && !land(payload)) {
            payload.AssignTo(response->mutable_values());
          }
        }
        call->response.Clear();
        done(std::move(result));
      });
}

}  // namespace

void GrpcTransport::PullDenseInto(absl::Duration timeout,
                                  const v1::PullDenseRequest& request,
                                  v1::PullDenseResponse* response,
                                  absl::Span<char> values, bool* landed,
                                  Done done) {
  *landed = false;
  RawPull(Pick().generic.get(), kPullDenseMethod, timeout, request, response,
          v1::PullDenseResponse::kValuesFieldNumber,
          [response, values, landed](const PayloadPieces& payload) {
            if (response->encoded() || payload.size() != values.size()) {
              return false;
            }
            // The one copy: from gRPC's received slices to the caller.
            payload.CopyTo(values.data());
            *landed = true;
            return true;
          },
          std::move(done));
}

void GrpcTransport::PullSparseInto(
    absl::Duration timeout, const v1::PullSparseRequest& request,
    v1::PullSparseResponse* response, size_t values_size,
    const std::function<void(SparsePullCall::Pieces)>& land, bool* landed,
    Done done) {
  *landed = false;
  RawPull(Pick().generic.get(), kPullSparseMethod, timeout, request, response,
          v1::PullSparseResponse::kValuesFieldNumber,
          [response, values_size, &land, landed](const PayloadPieces& payload) {
            if (response->encoded() || payload.size() != values_size) {
              return false;
            }
            // The one copy: each row from gRPC's received slices to the
            // caller's rows.
            land(payload.pieces());
            *landed = true;
            return true;
          },
          std::move(done));
}

void GrpcTransport::Send(Rpc rpc, absl::Duration timeout,
                         const google::protobuf::Message& request,
                         google::protobuf::Message* response, Done done) {
  Channel& channel = Pick();
  Stub* stub = channel.stub.get();
  switch (rpc) {
    case Rpc::kCreateTable:
      return Invoke(stub, timeout, &Async::CreateTable, request, response,
                    std::move(done));
    case Rpc::kGetTable:
      return Invoke(stub, timeout, &Async::GetTable, request, response,
                    std::move(done));
    case Rpc::kPullDense:
      return Invoke(stub, timeout, &Async::PullDense, request, response,
                    std::move(done));
    case Rpc::kPushDense:
      return SendRawPush(
          channel, kPushDenseMethod, timeout,
          [&](std::function<void()> on_release, grpc::ByteBuffer* out) {
            return EncodeBorrowingField(
                request, v1::PushDenseRequest::kGradientFieldNumber,
                std::move(on_release), out);
          },
          static_cast<v1::PushResponse*>(response), std::move(done));
    case Rpc::kPullSparse:
      return Invoke(stub, timeout, &Async::PullSparse, request, response,
                    std::move(done));
    case Rpc::kPushSparse:
      // The merged rows are the request's own bytes: borrowed, not copied.
      return SendRawPush(
          channel, kPushSparseMethod, timeout,
          [&](std::function<void()> on_release, grpc::ByteBuffer* out) {
            return EncodeBorrowingField(
                request, v1::PushSparseRequest::kGradientsFieldNumber,
                std::move(on_release), out);
          },
          static_cast<v1::PushResponse*>(response), std::move(done));
    case Rpc::kRegister:
      return Invoke(stub, timeout, &Async::Register, request, response,
                    std::move(done));
    case Rpc::kHeartbeat:
      return Invoke(stub, timeout, &Async::Heartbeat, request, response,
                    std::move(done));
    case Rpc::kLeave:
      return Invoke(stub, timeout, &Async::Leave, request, response,
                    std::move(done));
    case Rpc::kSetConsistency:
      return Invoke(stub, timeout, &Async::SetConsistency, request, response,
                    std::move(done));
    case Rpc::kStats:
      return Invoke(stub, timeout, &Async::Stats, request, response,
                    std::move(done));
    case Rpc::kDropTable:
      return Invoke(stub, timeout, &Async::DropTable, request, response,
                    std::move(done));
    case Rpc::kCheckpoint:
      return Invoke(stub, timeout, &Async::Checkpoint, request, response,
                    std::move(done));
    case Rpc::kEvictWorker:
      return Invoke(stub, timeout, &Async::EvictWorker, request, response,
                    std::move(done));
    case Rpc::kShardStatus:
      return Invoke(stub, timeout, &Async::ShardStatus, request, response,
                    std::move(done));
    case Rpc::kRollback:
      return Invoke(stub, timeout, &Async::Rollback, request, response,
                    std::move(done));
  }
  done(absl::InternalError("unknown RPC"));
}

}  // namespace taups
