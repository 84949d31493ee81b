#include "bench/raw_transfer_client.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "bench/raw_transfer_wire.h"
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

// Reads a message made of field 1 alone from `buffer`: for a RawSize its
// value; for a RawBlob its length, copying the payload into `payload` when
// given (which must hold exactly that many bytes). An empty buffer is the
// default message (0). False for anything else.
bool ReadFieldOne(const grpc::ByteBuffer& buffer, bool length_delimited,
                  uint64_t* value, absl::Span<char> payload = {}) {
  std::vector<grpc::Slice> slices;
  if (buffer.Length() > 0 && !buffer.Dump(&slices).ok()) return false;
  const std::optional<FieldOneFront> front = ReadFieldOneFront(
      slices, length_delimited ? kBytesFieldOne : kVarintFieldOne);
  if (!front.has_value()) return false;
  *value = front->value;
  if (!length_delimited) return true;
  if (*value != payload.size() ||
      buffer.Length() != front->prefix_bytes + payload.size()) {
    return false;
  }
  size_t skip = front->prefix_bytes, copied = 0;
  for (const grpc::Slice& slice : slices) {
    const size_t from = std::min(skip, slice.size());
    skip -= from;
    const size_t n = slice.size() - from;
    std::memcpy(payload.data() + copied, slice.begin() + from, n);
    copied += n;
  }
  return copied == payload.size();
}

constexpr char kUploadMethod[] = "/taups.bench.RawTransfer/Upload";
constexpr char kDownloadMethod[] = "/taups.bench.RawTransfer/Download";

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
  std::vector<std::unique_ptr<grpc::GenericStub>> generic;  // same channels
  size_t next = 0;
  RawTransfer::Stub* Pick() { return stubs[next++ % stubs.size()].get(); }
  grpc::GenericStub* PickGeneric() {
    return generic[next++ % generic.size()].get();
  }
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
    set->generic.push_back(std::make_unique<grpc::GenericStub>(channel));
  }
  return std::unique_ptr<RawTransferClient>(
      new RawTransferClient(std::move(set)));
}

RawTransferClient::RawTransferClient(std::unique_ptr<Channels> channels)
    : channels_(std::move(channels)) {}

RawTransferClient::~RawTransferClient() = default;

namespace {

// Starts one call per slice with start(begin, end, done); each call runs
// done(status, size_matched) once. Waits for them all; the first error, or
// INTERNAL naming `what` when a size did not match.
using SliceDone = std::function<void(const grpc::Status&, bool)>;
absl::Status FanOutSlices(
    const std::vector<std::pair<size_t, size_t>>& slices, absl::string_view what,
    const std::function<void(size_t, size_t, SliceDone)>& start) {
  Join join(static_cast<int>(slices.size()));
  std::atomic<bool> short_count{false};
  for (const auto& [begin, end] : slices) {
    start(begin, end, [&join, &short_count](const grpc::Status& status,
                                            bool size_matched) {
      if (status.ok() && !size_matched) short_count = true;
      join.Report(status);
    });
  }
  absl::Status status = join.Wait();
  if (status.ok() && short_count) {
    return absl::InternalError(
        absl::StrCat(what, ": the server's size differs from the request's"));
  }
  return status;
}

template <typename Request, typename Response>
struct SliceCall {
  SliceCall() {
    context.set_deadline(absl::ToChronoTime(absl::Now() + kCallTimeout));
  }
  grpc::ClientContext context;
  Request request;
  Response response;
};

}  // namespace

absl::Status RawTransferClient::Upload(absl::string_view data,
                                       size_t slice_bytes) {
  using Call = SliceCall<RawBlob, RawSize>;
  return FanOutSlices(
      PlanByteSlices(data.size(), slice_bytes), "Upload",
      [&](size_t begin, size_t end, SliceDone done) {
        auto call = std::make_shared<Call>();
        // assign(), not set_data(ptr, n): in protobuf 3.21 the latter builds
        // a temporary std::string and copies it again.
        call->request.mutable_data()->assign(data.data() + begin, end - begin);
        channels_->Pick()->async()->Upload(
            &call->context, &call->request, &call->response,
            [call, done, expected = end - begin](grpc::Status status) {
              done(status, call->response.size() == expected);
            });
      });
}

absl::Status RawTransferClient::Download(absl::Span<char> out,
                                         size_t slice_bytes) {
  using Call = SliceCall<RawSize, RawBlob>;
  return FanOutSlices(
      PlanByteSlices(out.size(), slice_bytes), "Download",
      [&](size_t begin, size_t end, SliceDone done) {
        auto call = std::make_shared<Call>();
        call->request.set_size(end - begin);
        const absl::Span<char> dst = out.subspan(begin, end - begin);
        channels_->Pick()->async()->Download(
            &call->context, &call->request, &call->response,
            [call, done, dst](grpc::Status status) {
              const bool matched = call->response.data().size() == dst.size();
              // Into the caller's buffer, as the tauPS client does.
              if (status.ok() && matched) {
                std::memcpy(dst.data(), call->response.data().data(), dst.size());
              }
              done(status, matched);
            });
      });
}

absl::Status RawTransferClient::UploadZeroCopy(absl::string_view data,
                                               size_t slice_bytes) {
  using Call = SliceCall<grpc::ByteBuffer, grpc::ByteBuffer>;
  return FanOutSlices(
      PlanByteSlices(data.size(), slice_bytes), "UploadZeroCopy",
      [&](size_t begin, size_t end, SliceDone done) {
        auto call = std::make_shared<Call>();
        const size_t expected = end - begin;
        const std::string prefix = FieldOnePrefix(kBytesFieldOne, expected);
        // The payload slice borrows `data`, which outlives the call (the
        // fan-out waits for it); the prefix slice holds its own copy.
        grpc::Slice parts[2] = {
            grpc::Slice(prefix.data(), prefix.size()),
            grpc::Slice(data.data() + begin, expected, grpc::Slice::STATIC_SLICE)};
        call->request = grpc::ByteBuffer(parts, 2);
        channels_->PickGeneric()->UnaryCall(
            &call->context, kUploadMethod, grpc::StubOptions(), &call->request,
            &call->response, [call, done, expected](grpc::Status status) {
              uint64_t size = 0;
              done(status, ReadFieldOne(call->response, false, &size) &&
                               size == expected);
            });
      });
}

absl::Status RawTransferClient::DownloadZeroCopy(absl::Span<char> out,
                                                 size_t slice_bytes) {
  using Call = SliceCall<grpc::ByteBuffer, grpc::ByteBuffer>;
  return FanOutSlices(
      PlanByteSlices(out.size(), slice_bytes), "DownloadZeroCopy",
      [&](size_t begin, size_t end, SliceDone done) {
        auto call = std::make_shared<Call>();
        const std::string size = FieldOnePrefix(kVarintFieldOne, end - begin);
        grpc::Slice part(size.data(), size.size());
        call->request = grpc::ByteBuffer(&part, 1);
        const absl::Span<char> dst = out.subspan(begin, end - begin);
        channels_->PickGeneric()->UnaryCall(
            &call->context, kDownloadMethod, grpc::StubOptions(), &call->request,
            &call->response, [call, done, dst](grpc::Status status) {
              uint64_t length = 0;
              done(status, ReadFieldOne(call->response, true, &length, dst));
            });
      });
}

}  // namespace taups::bench
