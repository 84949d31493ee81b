// RawTransferServer: the reference next to which bench/ prints tauPS's
// throughput. It serves taups.bench.RawTransfer (proto/raw_transfer.proto):
// Upload only reports the size it received; Download answers from one buffer
// filled once at start. No table, no validation beyond a size bound, so what
// it costs is gRPC + protobuf moving the bytes and nothing else.
//
//   auto server = taups::bench::RawTransferServer::Start(options);
//   ... connect a RawTransferClient to "127.0.0.1:" + (*server)->port() ...
//
// It serves on gRPC's callback API with the same message limits as
// ps_server, as raw methods: an upload is counted in the received slices
// and a download sent from the buffer, with no protobuf parse or copy on
// this side (the wire bytes are still raw_transfer.proto's). So it is the
// best gRPC itself does here, the reference tauPS is held to.
//
// Thread-safe: Shutdown() may be called from any thread; the destructor
// shuts down and waits.
#ifndef TAUPS_BENCH_RAW_TRANSFER_SERVER_H_
#define TAUPS_BENCH_RAW_TRANSFER_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace taups::bench {

struct RawTransferServerOptions {
  // Address to bind, "host:port"; port 0 picks a free port.
  std::string listen_address = "127.0.0.1:0";
  // Largest request/response accepted or sent, in bytes (as ps_server).
  int max_message_bytes = 256 << 20;
  // Size of the preallocated Download buffer; larger requests are refused
  // with OUT_OF_RANGE. At most max_message_bytes.
  size_t max_download_bytes = size_t{64} << 20;

  absl::Status Validate() const;
};

class RawTransferServer {
 public:
  // Binds and starts serving. UNAVAILABLE if the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<RawTransferServer>> Start(
      const RawTransferServerOptions& options);
  ~RawTransferServer();
  RawTransferServer(const RawTransferServer&) = delete;
  RawTransferServer& operator=(const RawTransferServer&) = delete;

  int port() const;
  // Blocks until the server has been shut down.
  void Wait();
  // Stops accepting calls and finishes in-flight ones. Idempotent.
  void Shutdown();

 private:
  struct State;
  explicit RawTransferServer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace taups::bench

#endif  // TAUPS_BENCH_RAW_TRANSFER_SERVER_H_
