// Client::Connect: the client core (ClientCore) over gRPC channels, one
// GrpcTransport per shard.
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_lifetime.h"
#include "common/status_macros.h"
#include "proto/grpc_credentials.h"
#include "worker/src/client_core.h"
#include "worker/src/client_security.h"
#include "worker/src/grpc_transport.h"

namespace taups {

namespace {

constexpr int kMaxMessageBytes = 256 << 20;

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenShardChannel(
    const std::string& address, const ClientOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Each channel gets its own connection; otherwise channels with equal
  // arguments share one and concurrent slices queue behind each other.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return OpenChannel(address, ChannelSecurityOf(options), args);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(
    const ClientOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  KeepCallbackQueueAlive();
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  std::vector<std::unique_ptr<ShardTransport>> shards;
  for (const std::string& address : options.servers) {
    std::vector<std::shared_ptr<grpc::Channel>> channels;
    for (int c = 0; c < options.channels_per_shard; ++c) {
      ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                       OpenShardChannel(address, options));
      if (!channel->WaitForConnected(absl::ToChronoTime(deadline))) {
        return absl::UnavailableError(absl::StrCat(
            "shard at ", address, " did not answer within ",
            absl::FormatDuration(options.connect_timeout)));
      }
      channels.push_back(std::move(channel));
    }
    shards.push_back(std::make_unique<GrpcTransport>(channels));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ClientCore> client,
                   ClientCore::Open(options, std::move(shards)));
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace taups
