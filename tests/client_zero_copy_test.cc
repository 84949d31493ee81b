// The client's dense payloads travel beside their messages (issue 14 part
// 2, client side):
// - a blocking PushDense sends every slice from the caller's own memory
//   (the transport is handed views into the caller's gradient, no copy),
//   while PushDenseAsync copies once, so a caller may overwrite its buffer
//   as soon as the call returns; both apply exactly the caller's values;
// - over gRPC, SendPushDense's bytes are ps.proto's PushDenseRequest (a
//   stock typed server parses the header and the gradient), and
//   PullDenseInto lands a raw answer in the caller's buffer and leaves
//   anything else (an encoded block, a raw block of the wrong size) in the
//   response, as a stock stub would have it;
// - in process, PullDenseInto has the shard read its table straight into
//   the caller's buffer (raw answers of the right size only), and a refused
//   pull leaves the buffer as it was.
#include <catch2/catch.hpp>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstring>
#include <future>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/wire_tensor.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "tests/loopback_grpc.h"
#include "worker/src/client_core.h"
#include "worker/src/grpc_transport.h"
#include "worker/src/inprocess_transport.h"
#include "worker/src/shard_router.h"

namespace taups {
namespace {

using google::protobuf::util::MessageDifferencer;

// Holds every SendPushDense back until Release(), noting where its
// gradient lies; everything else goes straight through.
class HoldingTransport final : public ShardTransport {
 public:
  explicit HoldingTransport(std::unique_ptr<ShardTransport> inner)
      : inner_(std::move(inner)) {}

  void Send(Rpc rpc, absl::Duration timeout,
            const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override {
    inner_->Send(rpc, timeout, request, response, std::move(done));
  }
  void SendPushDense(absl::Duration timeout, const v1::PushDenseRequest& header,
                     absl::string_view gradient, v1::PushResponse* response,
                     Done done) override {
    absl::MutexLock lock(&mu_);
    held_.push_back({timeout, &header, gradient, response, std::move(done)});
  }

  // Waits until `n` pushes are held; where their gradients lie.
  std::vector<absl::string_view> AwaitHeld(size_t n) {
    absl::MutexLock lock(&mu_);
    want_ = n;
    mu_.Await(absl::Condition(this, &HoldingTransport::Enough));
    std::vector<absl::string_view> out;
    for (const Held& h : held_) out.push_back(h.gradient);
    return out;
  }
  // Sends what is held, its gradients read only now.
  void Release() {
    std::vector<Held> held;
    {
      absl::MutexLock lock(&mu_);
      held.swap(held_);
    }
    for (Held& h : held) {
      inner_->SendPushDense(h.timeout, *h.header, h.gradient, h.response,
                            std::move(h.done));
    }
  }

 private:
  struct Held {
    absl::Duration timeout;
    const v1::PushDenseRequest* header;
    absl::string_view gradient;
    v1::PushResponse* response;
    Done done;
  };
  bool Enough() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return held_.size() >= want_;
  }
  const std::unique_ptr<ShardTransport> inner_;
  absl::Mutex mu_;
  std::vector<Held> held_ ABSL_GUARDED_BY(mu_);
  size_t want_ ABSL_GUARDED_BY(mu_) = 0;
};

constexpr uint64_t kSize = 5000;
constexpr uint64_t kSliceFloats = 1024;  // 4 KiB slices

// A client core (worker 1, 4 KiB slices) over `transports`, with dense
// table "w" of kSize zeros under SGD at learning rate 1.
std::unique_ptr<ClientCore> OpenWithTable(
    std::vector<std::unique_ptr<ShardTransport>> transports) {
  ClientOptions options;
  options.worker_id = 1;
  options.slice_bytes = kSliceFloats * sizeof(float);
  options.register_worker = false;
  auto opened = ClientCore::Open(options, std::move(transports));
  REQUIRE(opened.ok());
  TableConfig config = TableConfig::Dense("w", kSize);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kZeros;
  REQUIRE((*opened)->CreateTable(config).ok());
  return std::move(*opened);
}

// A client core over two in-process shards, each behind a HoldingTransport.
struct Rig {
  Rig() {
    std::vector<std::unique_ptr<ShardTransport>> transports;
    for (uint32_t s = 0; s < 2; ++s) {
      stores.push_back(std::make_unique<ParameterStore>(s, 2));
      calls.push_back(std::make_unique<ShardCalls>(stores.back().get(), 7 + s));
      auto holding = std::make_unique<HoldingTransport>(
          std::make_unique<InProcessTransport>(calls.back().get()));
      holders.push_back(holding.get());
      transports.push_back(std::move(holding));
    }
    client = OpenWithTable(std::move(transports));
    for (const DenseSlice& slice : PlanDenseSlices(kSize, 2, kSliceFloats)) {
      ++slices_of[slice.shard];
    }
  }
  // Every slice of one push, held.
  std::vector<absl::string_view> AwaitPush() {
    std::vector<absl::string_view> all;
    for (uint32_t s = 0; s < 2; ++s) {
      std::vector<absl::string_view> some = holders[s]->AwaitHeld(slices_of[s]);
      all.insert(all.end(), some.begin(), some.end());
    }
    return all;
  }
  void Release() {
    for (HoldingTransport* h : holders) h->Release();
  }
  std::vector<std::unique_ptr<ParameterStore>> stores;
  std::vector<std::unique_ptr<ShardCalls>> calls;
  std::vector<HoldingTransport*> holders;
  size_t slices_of[2] = {0, 0};
  std::unique_ptr<ClientCore> client;
};

std::vector<float> Gradient(float scale) {
  std::vector<float> g(kSize);
  for (uint64_t i = 0; i < kSize; ++i) g[i] = scale * static_cast<float>(i % 17);
  return g;
}

bool Within(absl::string_view piece, const std::vector<float>& buffer) {
  const char* begin = reinterpret_cast<const char*>(buffer.data());
  return piece.data() >= begin &&
         piece.data() + piece.size() <= begin + buffer.size() * sizeof(float);
}

TEST_CASE("PushDense sends from the caller's memory; PushDenseAsync from its own copy",
          "[zero_copy]") {
  Rig rig;
  Client& client = *rig.client;
  // Several slices per shard (2500 floats each, 1024 per slice).
  REQUIRE(rig.slices_of[0] == 3);
  REQUIRE(rig.slices_of[1] == 3);

  // Blocking: every slice's bytes are the caller's own.
  std::vector<float> g1 = Gradient(1.0f);
  auto pushed = std::async(std::launch::async,
                           [&] { return client.PushDense("w", g1); });
  for (absl::string_view v : rig.AwaitPush()) {
    CHECK(v.size() > 0);
    CHECK(Within(v, g1));
  }
  rig.Release();
  absl::StatusOr<PushResult> first = pushed.get();
  REQUIRE(first.ok());
  CHECK(first->all_accepted());

  // Asynchronous: the caller may overwrite its buffer once the call returns.
  std::vector<float> g2 = Gradient(2.0f);
  std::future<absl::StatusOr<PushResult>> second =
      client.PushDenseAsync("w", g2);
  for (absl::string_view v : rig.AwaitPush()) CHECK_FALSE(Within(v, g2));
  std::fill(g2.begin(), g2.end(), std::numeric_limits<float>::quiet_NaN());
  rig.Release();
  absl::StatusOr<PushResult> result = second.get();
  REQUIRE(result.ok());
  CHECK(result->all_accepted());

  // Zeros minus both gradients (learning rate 1), computed here.
  std::vector<float> expected(kSize);
  for (uint64_t i = 0; i < kSize; ++i) {
    expected[i] = 0.0f - static_cast<float>(i % 17) - 2.0f * static_cast<float>(i % 17);
  }
  std::vector<float> pulled(kSize);
  REQUIRE(client.PullDense("w", absl::MakeSpan(pulled)).ok());
  CHECK(pulled == expected);
}

// A stock typed server (generated code, protobuf parsing and serializing).
class StockServer final : public v1::ParameterServer::CallbackService {
 public:
  grpc::ServerUnaryReactor* PushDense(grpc::CallbackServerContext* context,
                                      const v1::PushDenseRequest* request,
                                      v1::PushResponse* response) override {
    {
      absl::MutexLock lock(&mu);
      pushed = *request;
    }
    response->set_new_version(request->gradient().size());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* PullDense(grpc::CallbackServerContext* context,
                                      const v1::PullDenseRequest* request,
                                      v1::PullDenseResponse* response) override {
    {
      absl::MutexLock lock(&mu);
      *response = answer;
    }
    response->set_step(request->count());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  absl::Mutex mu;
  v1::PushDenseRequest pushed;
  v1::PullDenseResponse answer;
};

std::string Bytes(size_t n, uint32_t seed) {
  std::string out(n, '\0');
  uint32_t x = seed;
  for (char& c : out) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return out;
}

absl::Status Wait(const std::function<void(ShardTransport::Done)>& start) {
  std::promise<absl::Status> done;
  start([&](absl::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

TEST_CASE("over gRPC, payloads beside the message are stock ps.proto messages",
          "[zero_copy]") {
  StockServer service;
  LoopbackGrpc loop(&service);
  GrpcTransport& transport = loop.transport();

  SECTION("a push's gradient beside its header") {
    v1::PushDenseRequest header;
    header.set_table("w");
    header.set_offset(4096);
    header.mutable_origin()->set_worker_id(3);
    header.mutable_origin()->set_seq(11);
    header.set_slices_in_push(2);
    header.set_slice_index(1);
    const std::string gradient = Bytes(3 << 20, 5);  // many HTTP/2 frames
    v1::PushResponse response;
    REQUIRE(Wait([&](ShardTransport::Done done) {
              transport.SendPushDense(absl::Seconds(30), header, gradient,
                                      &response, std::move(done));
            }).ok());
    CHECK(response.new_version() == gradient.size());
    v1::PushDenseRequest expected = header;
    expected.set_gradient(gradient);
    absl::MutexLock lock(&service.mu);
    CHECK(MessageDifferencer::Equals(service.pushed, expected));
  }

  SECTION("a pull's answer lands in the caller's buffer only when raw and whole") {
    constexpr size_t kBytes = (2 << 20) + 12;
    const std::string raw = Bytes(kBytes, 9);
    struct Case {
      std::string values;
      bool encoded;
      bool lands;
    };
    const std::vector<Case> cases = {
        {raw, false, true},                      // raw, the right size
        {raw.substr(0, kBytes - 4), false, false},  // raw, one float short
        {raw, true, false},                      // an encoded block
    };
    for (const Case& c : cases) {
      {
        absl::MutexLock lock(&service.mu);
        service.answer.Clear();
        service.answer.set_values(c.values);
        service.answer.set_encoded(c.encoded);
        service.answer.set_version(77);
        service.answer.set_server_incarnation(5);
      }
      v1::PullDenseRequest request;
      request.set_table("w");
      request.set_count(kBytes / sizeof(float));
      std::string out(kBytes, '\x55');
      v1::PullDenseResponse response;
      bool landed = !c.lands;  // must be overwritten either way
      REQUIRE(Wait([&](ShardTransport::Done done) {
                transport.PullDenseInto(absl::Seconds(30), request, &response,
                                        absl::MakeSpan(out), &landed,
                                        std::move(done));
              }).ok());
      CHECK(landed == c.lands);
      CHECK(response.version() == 77);
      CHECK(response.server_incarnation() == 5);
      CHECK(response.step() == request.count());
      CHECK(response.encoded() == c.encoded);
      if (c.lands) {
        CHECK(out == raw);
        CHECK(response.values().empty());
      } else {
        CHECK(out == std::string(kBytes, '\x55'));
        CHECK(response.values() == c.values);
      }
    }
  }
  loop.Shutdown();
}

TEST_CASE("in process, a raw dense pull is read from the table into the caller's buffer",
          "[zero_copy]") {
  ParameterStore store(0, 1);
  ShardCalls calls(&store, 3);
  InProcessTransport transport(&calls);
  std::vector<std::unique_ptr<ShardTransport>> transports;
  transports.push_back(std::make_unique<InProcessTransport>(&calls));
  std::unique_ptr<ClientCore> core = OpenWithTable(std::move(transports));
  Client& client = *core;
  // No zero in g, so no signed zero in the table: the bytes compare too.
  std::vector<float> g(kSize);
  std::vector<float> expected(kSize);  // zeros less 1.0 * g
  for (uint64_t i = 0; i < kSize; ++i) {
    g[i] = static_cast<float>(1 + i % 17);
    expected[i] = -g[i];
  }
  REQUIRE(client.PushDense("w", g).ok());

  SECTION("the client core's pull, sliced, lands every slice") {
    std::vector<float> pulled(kSize, 99.0f);
    REQUIRE(client.PullDense("w", absl::MakeSpan(pulled)).ok());
    CHECK(pulled == expected);
  }

  constexpr uint64_t kOffset = 1000;
  constexpr uint64_t kCount = 2000;
  v1::PullDenseRequest request;
  request.set_table("w");
  request.set_offset(kOffset);
  request.set_count(kCount);
  request.set_worker_id(1);
  const std::vector<float> want(expected.begin() + kOffset,
                                expected.begin() + kOffset + kCount);
  auto bytes_of = [](std::vector<float>& v) {
    return absl::MakeSpan(reinterpret_cast<char*>(v.data()),
                          v.size() * sizeof(float));
  };
  auto pull = [&](absl::Span<char> out, v1::PullDenseResponse* response,
                  bool* landed) {
    *landed = true;  // must be overwritten when it does not land
    return Wait([&](ShardTransport::Done done) {
      transport.PullDenseInto(absl::Seconds(30), request, response, out, landed,
                              std::move(done));
    });
  };

  SECTION("raw and the right size: in the buffer, not in the response") {
    std::vector<float> out(kCount, 99.0f);
    v1::PullDenseResponse response;
    bool landed = false;
    REQUIRE(pull(bytes_of(out), &response, &landed).ok());
    CHECK(landed);
    CHECK(std::memcmp(out.data(), want.data(), kCount * sizeof(float)) == 0);
    CHECK(response.values().empty());
    // No payload-sized bytes were ever made in the response (a copy through
    // it, cleared afterwards, would leave its capacity behind).
    CHECK(response.values().capacity() < kCount * sizeof(float));
    CHECK_FALSE(response.encoded());
    CHECK(response.version() == 1);
    CHECK(response.server_incarnation() == 3);
  }

  SECTION("a buffer not aligned for floats still gets the same bytes") {
    std::string out(kCount * sizeof(float) + 1, '\x55');
    v1::PullDenseResponse response;
    bool landed = false;
    REQUIRE(pull(absl::MakeSpan(out.data() + 1, kCount * sizeof(float)),
                 &response, &landed)
                .ok());
    CHECK(landed);
    CHECK(std::memcmp(out.data() + 1, want.data(), kCount * sizeof(float)) ==
          0);
    CHECK(response.values().empty());
  }

  SECTION("a buffer of another size: the answer stays in the response") {
    std::vector<float> out(kCount - 1, 99.0f);
    v1::PullDenseResponse response;
    bool landed = true;
    REQUIRE(pull(bytes_of(out), &response, &landed).ok());
    CHECK_FALSE(landed);
    CHECK(out == std::vector<float>(kCount - 1, 99.0f));
    REQUIRE(response.values().size() == kCount * sizeof(float));
    CHECK(std::memcmp(response.values().data(), want.data(),
                      kCount * sizeof(float)) == 0);
  }

  SECTION("an encoded pull: the block stays in the response") {
    request.set_pull_codec(static_cast<v1::Codec>(CodecKind::kFp16));
    std::vector<float> out(kCount, 99.0f);
    v1::PullDenseResponse response;
    bool landed = true;
    REQUIRE(pull(bytes_of(out), &response, &landed).ok());
    CHECK_FALSE(landed);
    CHECK(response.encoded());
    CHECK(out == std::vector<float>(kCount, 99.0f));
    std::vector<float> decoded(kCount);
    REQUIRE(DecodePulled(response.values(), absl::MakeSpan(decoded)).ok());
    CHECK(decoded == want);  // small integers are exact in fp16
  }

  SECTION("a refused pull changes nothing in the buffer") {
    request.set_offset(kSize - kCount + 1);  // one past the table's end
    std::vector<float> out(kCount, 99.0f);
    v1::PullDenseResponse response;
    bool landed = true;
    const absl::Status status = pull(bytes_of(out), &response, &landed);
    CHECK(status.code() == absl::StatusCode::kOutOfRange);
    CHECK_FALSE(landed);
    CHECK(out == std::vector<float>(kCount, 99.0f));
    CHECK(response.values().empty());
  }
}

}  // namespace
}  // namespace taups
