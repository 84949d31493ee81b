#include "bench/raw_transfer_server.h"

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/grpc_credentials.h"
#include "bench/raw_transfer_wire.h"
#include "raw_transfer.grpc.pb.h"

namespace taups::bench {
namespace {

// The best gRPC does here: raw methods on the callback API (as ps_server),
// so an upload is measured in the received slices without being parsed or
// copied, and a download's bytes go out as a slice pointing at the buffer,
// also without a copy. The wire bytes are proto/raw_transfer.proto's, so
// the client's protobuf and hand-made calls both work. Stateless apart from
// the read-only Download buffer; thread-safe.
class RawTransferService final
    : public RawTransfer::WithRawCallbackMethod_Upload<
          RawTransfer::WithRawCallbackMethod_Download<
              RawTransfer::CallbackService>> {
 public:
  explicit RawTransferService(size_t max_download_bytes)
      : buffer_(max_download_bytes, '\x5a') {}

  grpc::ServerUnaryReactor* Upload(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    std::vector<grpc::Slice> slices;  // references, not copies
    std::optional<FieldOneFront> front;
    if (request->Length() == 0 || request->Dump(&slices).ok()) {
      front = ReadFieldOneFront(slices, kBytesFieldOne);
    }
    if (!front.has_value() ||
        front->value != request->Length() - front->prefix_bytes) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "Upload: not a RawBlob of field 1 alone"));
      return reactor;
    }
    const std::string size = FieldOnePrefix(kVarintFieldOne, front->value);
    grpc::Slice slice(size);
    *response = grpc::ByteBuffer(&slice, 1);
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* Download(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    std::vector<grpc::Slice> slices;
    std::optional<FieldOneFront> front;
    if (request->Length() == 0 || request->Dump(&slices).ok()) {
      front = ReadFieldOneFront(slices, kVarintFieldOne);
    }
    if (!front.has_value()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "Download: not a RawSize"));
      return reactor;
    }
    const uint64_t size = front->value;
    if (size > buffer_.size()) {
      reactor->Finish(grpc::Status(
          grpc::StatusCode::OUT_OF_RANGE,
          absl::StrCat("Download: ", size, " bytes asked; this server "
                       "preallocated ", buffer_.size())));
      return reactor;
    }
    if (size > 0) {
      // The buffer outlives the server, so the slice borrows it for good.
      const std::string prefix = FieldOnePrefix(kBytesFieldOne, size);
      grpc::Slice parts[2] = {
          grpc::Slice(prefix),
          grpc::Slice(buffer_.data(), size, grpc::Slice::STATIC_SLICE)};
      *response = grpc::ByteBuffer(parts, 2);
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
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
