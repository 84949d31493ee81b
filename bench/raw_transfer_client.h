// RawTransferClient: moves bytes to and from a RawTransferServer the way the
// tauPS client moves a dense tensor, minus everything tauPS adds (tables,
// versions, retries). It is the "raw gRPC" column of the benchmark tables.
//
//   auto raw = RawTransferClient::Connect("127.0.0.1:7100", /*channels=*/2);
//   (*raw)->Upload(bytes, /*slice_bytes=*/1 << 20);   // a push's shape
//   (*raw)->Download(absl::MakeSpan(out), 1 << 20);   // a pull's shape
//
// Like the tauPS client it uses gRPC's callback API, the same channel
// arguments (256 MiB messages, one TCP connection per channel), copies the
// caller's bytes once into each request and each response's bytes into the
// caller's buffer, and keeps all slices of one transfer in flight at once,
// spread round-robin over the channels.
//
// Thread-compatible: one transfer at a time per client.
#ifndef TAUPS_BENCH_RAW_TRANSFER_CLIENT_H_
#define TAUPS_BENCH_RAW_TRANSFER_CLIENT_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace taups::bench {

class RawTransferClient {
 public:
  // Opens `channels` channels to `address` and waits (up to
  // connect_timeout) until each is connected.
  static absl::StatusOr<std::unique_ptr<RawTransferClient>> Connect(
      const std::string& address, int channels,
      absl::Duration connect_timeout = absl::Seconds(30));
  ~RawTransferClient();
  RawTransferClient(const RawTransferClient&) = delete;
  RawTransferClient& operator=(const RawTransferClient&) = delete;

  // Sends `data` cut into pieces of at most `slice_bytes` (0: one call for
  // all of it), all in flight at once; OK once the server has acknowledged
  // every piece with its size.
  absl::Status Upload(absl::string_view data, size_t slice_bytes);

  // Fills `out` with out.size() bytes fetched in pieces of at most
  // `slice_bytes` (0: one call), all in flight at once.
  absl::Status Download(absl::Span<char> out, size_t slice_bytes);

  // The same transfers through gRPC's generic API with hand-made wire bytes:
  // an upload's payload goes out as a grpc::Slice pointing at `data` (no
  // copy in this process; the server counts it in its received slices), and a
  // download's bytes are copied once, from the received slices straight into
  // `out`. The best raw gRPC does here, the reference tauPS is held to.
  absl::Status UploadZeroCopy(absl::string_view data, size_t slice_bytes);
  absl::Status DownloadZeroCopy(absl::Span<char> out, size_t slice_bytes);

 private:
  struct Channels;
  explicit RawTransferClient(std::unique_ptr<Channels> channels);
  std::unique_ptr<Channels> channels_;
};

// [begin, end) byte ranges cutting `size` into pieces of at most
// `slice_bytes` (0 = one piece), as even as possible: the same plan the
// tauPS client uses for a dense table on one shard.
std::vector<std::pair<size_t, size_t>> PlanByteSlices(size_t size,
                                                      size_t slice_bytes);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_RAW_TRANSFER_CLIENT_H_
