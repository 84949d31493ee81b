#include "bench/raw_transfer_server.h"

#include <grpcpp/grpcpp.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "proto/grpc_credentials.h"
#include "raw_transfer.grpc.pb.h"

namespace taups::bench {
namespace {

// Stateless apart from the read-only Download buffer; thread-safe.
class RawTransferService final : public RawTransfer::Service {
 public:
  explicit RawTransferService(size_t max_download_bytes)
      : buffer_(max_download_bytes, '\x5a') {}

  grpc::Status Upload(grpc::ServerContext*, const RawBlob* request,
                      RawSize* response) override {
    response->set_size(request->data().size());
    return grpc::Status::OK;
  }

  grpc::Status Download(grpc::ServerContext*, const RawSize* request,
                        RawBlob* response) override {
    if (request->size() > buffer_.size()) {
      return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                          absl::StrCat("Download: ", request->size(),
                                       " bytes asked; this "
                                       "server preallocated ",
                                       buffer_.size()));
    }
    // One copy out of the preallocated buffer into the response: the same
    // copy ps_server makes from a table into its response. (assign(), not
    // set_data(ptr, n), which copies twice in protobuf 3.21.)
    response->mutable_data()->assign(buffer_.data(), request->size());
    return grpc::Status::OK;
  }

 private:
  const std::string buffer_;
};

}  // namespace

absl::Status RawTransferServerOptions::Validate() const {
  if (listen_address.empty()) {
    return absl::InvalidArgumentError("listen address is empty");
  }
  if (max_message_bytes < (1 << 20)) {
    return absl::InvalidArgumentError("max_message_bytes must be >= 1 MiB");
  }
  if (max_download_bytes > static_cast<size_t>(max_message_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_download_bytes ", max_download_bytes,
                     " exceeds max_message_bytes ", max_message_bytes));
  }
  return absl::OkStatus();
}

struct RawTransferServer::State {
  std::unique_ptr<RawTransferService> service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
  std::once_flag shutdown_once;
};

absl::StatusOr<std::unique_ptr<RawTransferServer>> RawTransferServer::Start(
    const RawTransferServerOptions& options) {
  absl::Status valid = options.Validate();
  if (!valid.ok()) return valid;
  auto state = std::make_unique<State>();
  state->service =
      std::make_unique<RawTransferService>(options.max_download_bytes);
  grpc::ServerBuilder builder;
  // A loopback reference: plaintext, as the shards serve without TLS.
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(ServerSecurity{});
  if (!credentials.ok()) return credentials.status();
  builder.AddListeningPort(options.listen_address, *credentials, &state->port);
  builder.RegisterService(state->service.get());
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  state->server = builder.BuildAndStart();
  if (state->server == nullptr || state->port == 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", options.listen_address));
  }
  return std::unique_ptr<RawTransferServer>(
      new RawTransferServer(std::move(state)));
}

RawTransferServer::RawTransferServer(std::unique_ptr<State> state)
    : state_(std::move(state)) {}

RawTransferServer::~RawTransferServer() { Shutdown(); }

int RawTransferServer::port() const { return state_->port; }

void RawTransferServer::Wait() { state_->server->Wait(); }

void RawTransferServer::Shutdown() {
  std::call_once(state_->shutdown_once, [this] {
    state_->server->Shutdown(std::chrono::system_clock::now() +
                             std::chrono::seconds(5));
    state_->server->Wait();
  });
}

}  // namespace taups::bench
