// A real gRPC server on a free 127.0.0.1 port serving one test's own
// service (typically a stock generated CallbackService), and the client's
// GrpcTransport connected to it, both taking messages up to 64 MiB either
// way. For tests of what the client's transport puts on the wire against
// stock protobuf/gRPC code. Fails the test if the server does not start.
// The service must outlive this object; the transport goes before the
// server does.
#ifndef TAUPS_TESTS_LOOPBACK_GRPC_H_
#define TAUPS_TESTS_LOOPBACK_GRPC_H_

#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/grpc_credentials.h"
#include "worker/src/grpc_transport.h"

namespace taups {

class LoopbackGrpc {
 public:
  static constexpr int kMaxMessage = 64 << 20;

  explicit LoopbackGrpc(grpc::Service* service) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    builder.SetMaxReceiveMessageSize(kMaxMessage);
    builder.SetMaxSendMessageSize(kMaxMessage);
    server_ = builder.BuildAndStart();
    REQUIRE(server_ != nullptr);
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(kMaxMessage);
    args.SetMaxReceiveMessageSize(kMaxMessage);
    auto channel = OpenChannel(absl::StrCat("127.0.0.1:", port), ChannelSecurity{}, args);
    REQUIRE(channel.ok());
    transport_ = std::make_unique<GrpcTransport>(
        std::vector<std::shared_ptr<grpc::Channel>>{*channel});
  }

  GrpcTransport& transport() { return *transport_; }
  // Stops the server (calls in flight end first); the destructor does it too.
  void Shutdown() { server_->Shutdown(); }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcTransport> transport_;  // declared last: destroyed first
};

}  // namespace taups

#endif  // TAUPS_TESTS_LOOPBACK_GRPC_H_
