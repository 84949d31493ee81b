// The "not registered" refusal is recognised by its structured reason
// (common/refusal.h), not by its words: the reason crosses the gRPC status
// conversion in the status details (and nothing else does), and the
// client's push redo (ClientCore::SettlePart) runs on the reason alone.
// The client runs against a real in-process shard (ParameterStore +
// ShardCalls) behind a transport that can rewrite the push answers.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "common/refusal.h"
#include "grpc_status_convert.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "worker/src/client_core.h"
#include "worker/src/client_events.h"
#include "worker/src/inprocess_transport.h"

namespace taups {
namespace {

constexpr char kWords[] =
    "worker 1 is not registered with this shard (or its lease expired); register "
    "before pushing";

TEST_CASE("a refusal's reason crosses the gRPC status conversion; words do not") {
  const absl::Status refused = WithRefusal(
      absl::FailedPreconditionError("refused, see the reason"), Refusal::kNotRegistered);
  const grpc::Status wire = ToGrpcStatus(refused);
  CHECK(wire.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
  CHECK(wire.error_message() == "refused, see the reason");
  CHECK_FALSE(wire.error_details().empty());
  const absl::Status back = FromGrpcStatus(wire);
  CHECK(back.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(back.message() == "refused, see the reason");
  CHECK(RefusalOf(back) == Refusal::kNotRegistered);

  // The words alone carry no reason, on either side.
  CHECK(ToGrpcStatus(absl::FailedPreconditionError(kWords)).error_details().empty());
  CHECK(RefusalOf(FromGrpcStatus(
            grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, kWords))) ==
        Refusal::kNone);
  // Details that are not ours, or not a message at all, are ignored.
  CHECK(RefusalOf(FromGrpcStatus(
            grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, kWords, "\xff\xff\x01"))) ==
        Refusal::kNone);
  CHECK(RefusalOf(absl::OkStatus()) == Refusal::kNone);
  CHECK(WithRefusal(absl::OkStatus(), Refusal::kNotRegistered).ok());
}

// Rewrites the status of the next push answer as `rewrite` says.
class RewritingTransport final : public ShardTransport {
 public:
  enum class Rewrite { kNone, kDropReason, kOtherWords };
  explicit RewritingTransport(std::unique_ptr<ShardTransport> inner)
      : inner_(std::move(inner)) {}
  void Arm(Rewrite rewrite) { next_ = rewrite; }

  void Send(Rpc rpc, absl::Duration timeout, const google::protobuf::Message& request,
            google::protobuf::Message* response, Done done) override {
    if (rpc == Rpc::kPushDense) done = Wrap(std::move(done));
    inner_->Send(rpc, timeout, request, response, std::move(done));
  }
  void SendPushDense(absl::Duration timeout, const v1::PushDenseRequest& header,
                     absl::string_view gradient, v1::PushResponse* response,
                     Done done) override {
    inner_->SendPushDense(timeout, header, gradient, response, Wrap(std::move(done)));
  }

 private:
  Done Wrap(Done done) {
    const Rewrite rewrite = next_.exchange(Rewrite::kNone);
    return [rewrite, done = std::move(done)](absl::Status status) {
      if (rewrite == Rewrite::kDropReason && !status.ok()) {
        status = absl::Status(status.code(), status.message());  // words kept
      } else if (rewrite == Rewrite::kOtherWords && !status.ok()) {
        status = WithRefusal(absl::Status(status.code(), "refused (see the reason)"),
                             RefusalOf(status));
      }
      done(status);
    };
  }
  const std::unique_ptr<ShardTransport> inner_;
  std::atomic<Rewrite> next_{Rewrite::kNone};
};

uint64_t Redos(const Client& client) { return EventsOf(client)->push_redos[0]; }

TEST_CASE("the client redoes a push on the structured reason, not on the words") {
  ParameterStore store(0, 1);
  ShardCalls calls(&store, 7);
  auto rewriting =
      std::make_unique<RewritingTransport>(std::make_unique<InProcessTransport>(&calls));
  RewritingTransport* transport = rewriting.get();
  std::vector<std::unique_ptr<ShardTransport>> transports;
  transports.push_back(std::move(rewriting));
  ClientOptions options;
  options.worker_id = 1;
  options.lease = absl::Seconds(30);
  auto opened = ClientCore::Open(options, std::move(transports));
  REQUIRE(opened.ok());
  std::unique_ptr<ClientCore> client = std::move(*opened);
  TableConfig config = TableConfig::Dense("w", 4);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 1;
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kZeros;
  REQUIRE(client->CreateTable(config).ok());
  std::vector<float> values(4);
  // One step: pull, push -g, next step.
  const auto step = [&](float g) {
    REQUIRE(client->PullDense("w", absl::MakeSpan(values)).ok());
    const std::vector<float> gradient(4, g);
    absl::StatusOr<PushResult> pushed = client->PushDense("w", gradient, nullptr);
    if (pushed.ok()) client->Clock();
    return pushed.status();
  };
  REQUIRE(step(-1.0f).ok());  // values 1
  REQUIRE(Redos(*client) == 0);

  SECTION("the shard's own refusal carries the reason: redone once, applied once") {
    REQUIRE(store.EvictWorker(1, false).ok());  // the shard forgets the worker
    REQUIRE(step(-2.0f).ok());                  // refused, registered, redone
    CHECK(Redos(*client) == 1);
    REQUIRE(client->PullDense("w", absl::MakeSpan(values)).ok());
    for (float v : values) CHECK(v == 3.0f);
  }
  SECTION("the same words without the reason: not redone, the refusal returned") {
    REQUIRE(store.EvictWorker(1, false).ok());
    transport->Arm(RewritingTransport::Rewrite::kDropReason);
    const absl::Status refused = step(-2.0f);
    CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(std::string(refused.message()).find("is not registered with this shard") !=
          std::string::npos);
    CHECK(Redos(*client) == 0);
    REQUIRE(client->PullDense("w", absl::MakeSpan(values)).ok());
    for (float v : values) CHECK(v == 1.0f);  // nothing applied
  }
  SECTION("the reason under other words: redone") {
    REQUIRE(store.EvictWorker(1, false).ok());
    transport->Arm(RewritingTransport::Rewrite::kOtherWords);
    REQUIRE(step(-2.0f).ok());
    CHECK(Redos(*client) == 1);
    REQUIRE(client->PullDense("w", absl::MakeSpan(values)).ok());
    for (float v : values) CHECK(v == 3.0f);
  }
}

}  // namespace
}  // namespace taups
