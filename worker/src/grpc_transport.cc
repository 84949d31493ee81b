#include "worker/src/grpc_transport.h"

#include <grpcpp/grpcpp.h>

#include "grpc_status_convert.h"

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

}  // namespace

void GrpcTransport::Send(Rpc rpc, absl::Duration timeout,
                         const google::protobuf::Message& request,
                         google::protobuf::Message* response, Done done) {
  Stub* stub = Pick();
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
      return Invoke(stub, timeout, &Async::PushDense, request, response,
                    std::move(done));
    case Rpc::kPullSparse:
      return Invoke(stub, timeout, &Async::PullSparse, request, response,
                    std::move(done));
    case Rpc::kPushSparse:
      return Invoke(stub, timeout, &Async::PushSparse, request, response,
                    std::move(done));
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
  }
  done(absl::InternalError("unknown RPC"));
}

}  // namespace taups
