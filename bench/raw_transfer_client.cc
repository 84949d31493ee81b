#include "bench/raw_transfer_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "proto/grpc_credentials.h"
#include "raw_transfer.grpc.pb.h"

namespace taups::bench {
namespace {

constexpr int kMaxMessageBytes = 256 << 20;  // as the tauPS client
constexpr absl::Duration kCallTimeout = absl::Seconds(60);

std::shared_ptr<grpc::Channel> OpenRawChannel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // One connection per channel, as the tauPS client does.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return *OpenChannel(address, ChannelSecurity{}, args);  // plaintext, loopback
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

// Collects the first error of a fan-out and lets the caller wait for all.
class Join {
 public:
  explicit Join(int calls) : counter_(calls) {}
  void Report(const grpc::Status& status) {
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok()) first_error_ = FromGrpc(status);
    }
    counter_.DecrementCount();
  }
  absl::Status Wait() {
    counter_.Wait();
    absl::MutexLock lock(&mu_);
    return first_error_;
  }

 private:
  absl::BlockingCounter counter_;
  absl::Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::vector<std::pair<size_t, size_t>> PlanByteSlices(size_t size,
                                                      size_t slice_bytes) {
  if (slice_bytes == 0 || slice_bytes >= size) return {{0, size}};
  const size_t pieces = (size + slice_bytes - 1) / slice_bytes;
  const size_t base = size / pieces;
  const size_t extra = size % pieces;
  std::vector<std::pair<size_t, size_t>> slices;
  size_t begin = 0;
  for (size_t p = 0; p < pieces; ++p) {
    const size_t end = begin + base + (p < extra ? 1 : 0);
    slices.emplace_back(begin, end);
    begin = end;
  }
  return slices;
}

struct RawTransferClient::Channels {
  std::vector<std::unique_ptr<RawTransfer::Stub>> stubs;
  size_t next = 0;
  RawTransfer::Stub* Pick() { return stubs[next++ % stubs.size()].get(); }
};

absl::StatusOr<std::unique_ptr<RawTransferClient>> RawTransferClient::Connect(
    const std::string& address, int channels, absl::Duration connect_timeout) {
  if (channels < 1) {
    return absl::InvalidArgumentError("channels must be >= 1");
  }
  const absl::Time deadline = absl::Now() + connect_timeout;
  auto set = std::make_unique<Channels>();
  for (int c = 0; c < channels; ++c) {
    std::shared_ptr<grpc::Channel> channel = OpenRawChannel(address);
    if (!channel->WaitForConnected(absl::ToChronoTime(deadline))) {
      return absl::UnavailableError(
          absl::StrCat("raw transfer server at ", address, " did not answer"));
    }
    set->stubs.push_back(RawTransfer::NewStub(channel));
  }
  return std::unique_ptr<RawTransferClient>(
      new RawTransferClient(std::move(set)));
}

RawTransferClient::RawTransferClient(std::unique_ptr<Channels> channels)
    : channels_(std::move(channels)) {}

RawTransferClient::~RawTransferClient() = default;

absl::Status RawTransferClient::Upload(absl::string_view data,
                                       size_t slice_bytes) {
  struct Call {
    grpc::ClientContext context;
    RawBlob request;
    RawSize response;
  };
  const auto slices = PlanByteSlices(data.size(), slice_bytes);
  std::vector<std::unique_ptr<Call>> calls;
  Join join(static_cast<int>(slices.size()));
  std::atomic<bool> short_count{false};
  for (const auto& [begin, end] : slices) {
    calls.push_back(std::make_unique<Call>());
    Call* call = calls.back().get();
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
    // assign(), not set_data(ptr, n): in protobuf 3.21 the latter builds a
    // temporary std::string and copies it again.
    call->request.mutable_data()->assign(data.data() + begin, end - begin);
    const size_t expected = end - begin;
    channels_->Pick()->async()->Upload(
        &call->context, &call->request, &call->response,
        [&join, &short_count, call, expected](grpc::Status status) {
          if (status.ok() && call->response.size() != expected) {
            short_count = true;
          }
          join.Report(status);
        });
  }
  absl::Status status = join.Wait();
  if (status.ok() && short_count) {
    return absl::InternalError("Upload: server reported a different size");
  }
  return status;
}

absl::Status RawTransferClient::Download(absl::Span<char> out,
                                         size_t slice_bytes) {
  struct Call {
    grpc::ClientContext context;
    RawSize request;
    RawBlob response;
  };
  const auto slices = PlanByteSlices(out.size(), slice_bytes);
  std::vector<std::unique_ptr<Call>> calls;
  Join join(static_cast<int>(slices.size()));
  std::atomic<bool> short_count{false};
  for (const auto& [begin, end] : slices) {
    calls.push_back(std::make_unique<Call>());
    Call* call = calls.back().get();
    call->context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
    call->request.set_size(end - begin);
    char* dst = out.data() + begin;
    const size_t expected = end - begin;
    channels_->Pick()->async()->Download(
        &call->context, &call->request, &call->response,
        [&join, &short_count, call, dst, expected](grpc::Status status) {
          if (status.ok()) {
            if (call->response.data().size() != expected) {
              short_count = true;
            } else {
              // Into the caller's buffer, as the tauPS client does.
              std::memcpy(dst, call->response.data().data(), expected);
            }
          }
          join.Report(status);
        });
  }
  absl::Status status = join.Wait();
  if (status.ok() && short_count) {
    return absl::InternalError("Download: server returned a different size");
  }
  return status;
}

}  // namespace taups::bench
