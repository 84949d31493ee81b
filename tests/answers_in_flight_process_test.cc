// The shard's bound on pull answers in flight (--max_pull_in_flight_mb,
// server/answers_in_flight.h), against a real ps_server process: a caller
// whose connection stops reading (a StallingProxy holding the answers back)
// pulls a 16 MiB dense table four times. Two answers fit under a 40 MiB
// bound and stay stuck in the shard; the others, and every pull that would
// pass the bound, are refused UNAVAILABLE naming the flag, while pulls that
// fit still go. A push meanwhile moves the table off the blocks the stuck
// answers hold, and that copy is the only table memory they cost. The
// client library rides it out: its 1 MiB slices fit in the room left, and a
// pull sent as one message is retried until the reader catches up.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "ps.grpc.pb.h"
#include "taups/client.h"
#include "tests/dense_pull_flood.h"
#include "tests/process_harness.h"
#include "tests/prometheus_text.h"
#include "tests/stalling_proxy.h"

namespace taups::testing {
namespace {

constexpr uint64_t kSize = uint64_t{4} << 20;   // 16 MiB of floats
constexpr uint64_t kAnswer = kSize * sizeof(float);
constexpr uint64_t kMiB = uint64_t{1} << 20;

std::unique_ptr<v1::ParameterServer::Stub> StubTo(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  return v1::ParameterServer::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
}

grpc::Status Pull(v1::ParameterServer::Stub& stub, uint64_t count,
                  v1::PullDenseResponse* response) {
  v1::PullDenseRequest request;
  request.set_table("w");
  request.set_count(count);
  request.set_worker_id(2);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub.PullDense(&context, request, response);
}

struct Shard1 {
  Shard1() {
    shards = StartShards(
        dir.path(), 1,
        {"--stats_interval_s=0", "--lease_s=60", "--max_pull_mb=20",
         "--max_pull_in_flight_mb=40", "--metrics_port=0",
         "--metrics_port_file=" + dir.path() + "/metrics.port"});
    metrics_port = ReadPortFile(dir.path() + "/metrics.port");
    stub = StubTo(shards[0].address());
    v1::CreateTableRequest create;
    v1::TableConfig* config = create.mutable_config();
    config->set_name("w");
    config->set_kind(v1::TABLE_KIND_DENSE);
    config->set_dense_size(kSize);
    config->mutable_optimizer()->set_kind(v1::OPTIMIZER_SGD);
    config->mutable_optimizer()->set_learning_rate(1.0f);
    config->mutable_initializer()->set_kind(v1::INIT_ZEROS);
    v1::CreateTableResponse created;
    grpc::ClientContext context;
    REQUIRE(stub->CreateTable(&context, create, &created).ok());
  }

  std::map<std::string, double> Metrics() {
    httplib::Client http("127.0.0.1", metrics_port);
    auto res = http.Get("/metrics");
    REQUIRE(res);
    return PrometheusSamples(res->body);
  }
  double Sample(const std::string& series) {
    const auto samples = Metrics();
    const auto it = samples.find(series);
    INFO(series << " in /metrics");
    REQUIRE(it != samples.end());
    return it->second;
  }
  // Polls `series` until `ok(value)` or 20 s pass; the last value read.
  template <typename Ok>
  double SampleUntil(const std::string& series, Ok ok) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    double value = Sample(series);
    while (!ok(value) && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
      value = Sample(series);
    }
    return value;
  }

  TempDir dir;
  std::vector<Shard> shards;
  int metrics_port = 0;
  std::unique_ptr<v1::ParameterServer::Stub> stub;
};

std::unique_ptr<Client> ConnectClient(const Shard& shard, uint32_t worker,
                                      size_t slice_bytes) {
  ClientOptions options;
  options.servers = {shard.address()};
  options.worker_id = worker;
  options.register_worker = false;
  options.slice_bytes = slice_bytes;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

// Two answers' values and their messages' few other bytes.
bool Holds2(double in_flight) {
  return in_flight >= 2 * kAnswer && in_flight <= 2 * kAnswer + 1024;
}

bool AllEqual(const std::vector<float>& values, float value) {
  for (float v : values) {
    if (v != value) return false;
  }
  return true;
}

TEST_CASE("answers a stalled reader has not read are bounded; pulls past the bound are refused UNAVAILABLE") {
  Shard1 shard;
  const std::string in_flight = "taups_pull_answers_in_flight_bytes";
  const std::string refused = "taups_pull_answers_refused_total";
  const std::string lent = "taups_pull_answer_bytes{state=\"lent\"}";
  CHECK(shard.Sample("taups_pull_answers_in_flight_limit_bytes") == 40 * kMiB);

  StallingProxy proxy(shard.shards[0].port);
  auto stalled = StubTo(proxy.address());
  {  // the connection is up (and its settings exchanged) before the stall
    v1::PullDenseResponse small;
    REQUIRE(Pull(*stalled, 16, &small).ok());
  }
  proxy.HoldAnswers();
  DensePullFlood flood(stalled.get(), "w", kSize, /*worker=*/1, /*clock=*/0, 4);

  // Two answers fit under 40 MiB and stay in the shard, unread; the other
  // two are refused.
  CHECK(shard.SampleUntil(refused, [](double v) { return v >= 2; }) == 2);
  CHECK(Holds2(shard.Sample(in_flight)));
  CHECK(flood.Done() == 0);  // even the refusals are held by the proxy

  // A pull that would pass the bound is refused, precisely ...
  v1::PullDenseResponse whole;
  const grpc::Status over = Pull(*shard.stub, kSize, &whole);
  CHECK(over.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(absl::StrContains(over.error_message(), "--max_pull_in_flight_mb"));
  CHECK(absl::StrContains(over.error_message(), "32.0 MiB"));
  CHECK(shard.Sample(refused) == 3);
  // ... and one that fits goes.
  v1::PullDenseResponse part;
  REQUIRE(Pull(*shard.stub, 1 << 20, &part).ok());  // 4 MiB
  CHECK(part.values().size() == 4 * kMiB);
  CHECK(Holds2(shard.SampleUntil(in_flight, Holds2)));  // back once sent

  // A push moves the table to new blocks; the stuck answers keep the old
  // ones, and that is all the table memory they hold.
  {
    v1::PushDenseRequest push;
    push.set_table("w");
    const std::vector<float> ones(kSize, 1.0f);
    push.set_gradient(ones.data(), kAnswer);
    push.mutable_origin()->set_worker_id(0);
    push.mutable_origin()->set_worker_incarnation(1);
    push.mutable_origin()->set_seq(1);
    v1::PushResponse pushed;
    grpc::ClientContext context;
    REQUIRE(shard.stub->PushDense(&context, push, &pushed).ok());
  }
  CHECK(shard.Sample(lent) == kAnswer);

  // The client library's sliced pull fits in the 8 MiB left, slice by
  // slice, and lands the pushed values.
  {
    auto client = ConnectClient(shard.shards[0], 3, size_t{1} << 20);
    std::vector<float> values(kSize, 7.0f);
    const absl::StatusOr<PullInfo> pulled =
        client->PullDense("w", absl::MakeSpan(values));
    INFO(pulled.status());
    REQUIRE(pulled.ok());
    CHECK(AllEqual(values, -1.0f));
  }
  // One sent as a single 16 MiB message cannot fit: it is retried with
  // backoff until the stalled reader reads.
  auto whole_client = ConnectClient(shard.shards[0], 4, size_t{32} << 20);
  std::vector<float> whole_values(kSize, 7.0f);
  std::future<absl::StatusOr<PullInfo>> waiting =
      whole_client->PullDenseAsync("w", absl::MakeSpan(whole_values));
  CHECK(waiting.wait_for(std::chrono::milliseconds(800)) ==
        std::future_status::timeout);
  const double refused_while_held = shard.Sample(refused);
  CHECK(refused_while_held > 3);

  proxy.ReleaseAnswers();
  REQUIRE(flood.AllDone(absl::Seconds(20)));
  CHECK(flood.Count(grpc::StatusCode::UNAVAILABLE) == 2);
  // The stuck answers show the table as it was when they were made.
  CHECK(flood.AnsweredWith(0.0f, kSize) == 2);
  REQUIRE(waiting.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  const absl::StatusOr<PullInfo> late = waiting.get();
  INFO(late.status());
  REQUIRE(late.ok());
  CHECK(AllEqual(whole_values, -1.0f));

  CHECK(shard.SampleUntil(in_flight, [](double v) { return v == 0; }) == 0);
  CHECK(shard.SampleUntil(lent, [](double v) { return v == 0; }) == 0);
}

TEST_CASE("a bound on answers in flight below one pull's answer is refused at start") {
  TempDir dir;
  Process shard(BinDir() + "/ps_server",
                {"--port=0", "--max_pull_mb=64", "--max_pull_in_flight_mb=32"},
                dir.path() + "/shard.log");
  const std::optional<int> code = shard.Wait(absl::Seconds(20));
  REQUIRE(code.has_value());
  CHECK(*code != 0);
  INFO(shard.Output());
  CHECK(absl::StrContains(shard.Output(), "--max_pull_in_flight_mb"));
  CHECK(absl::StrContains(shard.Output(), "--max_pull_mb"));
}

}  // namespace
}  // namespace taups::testing
