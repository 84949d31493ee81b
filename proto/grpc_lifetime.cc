#include "common/grpc_lifetime.h"

#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <future>
#include <memory>

#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"

namespace taups {

void KeepGrpcInitialized() {
  static const bool initialized = [] {
    grpc_init();
    return true;
  }();
  (void)initialized;
}

void KeepCallbackQueueAlive() {
  static const bool held = [] {
    KeepGrpcInitialized();
    // Never destroyed: this channel's reference to the process-wide callback
    // queue is what keeps the queue up. Held by a static, so that leak
    // checkers (LeakSanitizer) see it reachable rather than leaked.
    static auto* const channel =
        new std::shared_ptr<grpc::Channel>(
            *OpenChannel("127.0.0.1:1", ChannelSecurity{}));
    std::unique_ptr<v1::ParameterServer::Stub> stub =
        v1::ParameterServer::NewStub(*channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(1));
    v1::StatsRequest request;
    v1::StatsResponse response;
    std::promise<void> done;
    // The call's outcome does not matter (nothing listens on port 1): making
    // a callback call is what binds the channel to the queue.
    stub->async()->Stats(&context, &request, &response,
                         [&done](grpc::Status) { done.set_value(); });
    done.get_future().wait();
    return true;
  }();
  (void)held;
}

}  // namespace taups
