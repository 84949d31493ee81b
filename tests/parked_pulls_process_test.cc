// Pulls that must wait for their policy, against a real ps_server process
// and stock gRPC stubs: 1,000 sync pulls with no deadline are parked
// without a server thread each (the process's thread count is measured),
// other callers are answered meanwhile, and the pulls are released by the
// step closing, by their callers cancelling (the shard's waiting-pull
// gauge goes back to 0), by --max_wait_s, and by SIGTERM (the process
// exits within 5 s); a semi-sync step closed by its timeout (a Tick) and a
// dropped table answer them too; parked pulls of a large table hold none
// of the shard's answer memory (taups_pull_answer_bytes).
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <csignal>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "httplib.h"
#include "ps.grpc.pb.h"
#include "tests/dense_pull_flood.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr int kPulls = 1000;
constexpr uint64_t kSize = 64;
constexpr float kLearningRate = 0.5f;

// "Threads:" of /proc/<pid>/status.
int ThreadsOf(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (absl::StartsWith(line, "Threads:")) return std::stoi(line.substr(8));
  }
  FAIL("no Threads line for pid " << pid);
  return 0;
}

// Sync over two workers: until both push for step 0, a pull at clock 1
// waits.
v1::ConsistencyConfig SyncOfTwo() {
  v1::ConsistencyConfig consistency;
  consistency.set_kind(v1::CONSISTENCY_SYNC);
  consistency.set_num_workers(2);
  return consistency;
}

// One ps_server with room for many waiting pulls, its metrics endpoint and
// a stock stub. The table "w" has `size` floats and `consistency`; workers
// 0 and 1 are registered.
struct Server {
  explicit Server(std::vector<std::string> flags = {},
                  const v1::ConsistencyConfig& consistency = SyncOfTwo(),
                  uint64_t size = kSize)
      : size(size) {
    flags.insert(flags.end(),
                 {"--max_waiting_calls=20000", "--max_waiting_per_worker=20000",
                  "--lease_s=60",
                  "--metrics_port=0", "--stats_interval_s=0",
                  "--metrics_port_file=" + dir.path() + "/metrics.port"});
    shards = StartShards(dir.path(), 1, flags);
    metrics_port = ReadPortFile(dir.path() + "/metrics.port");
    stub = v1::ParameterServer::NewStub(grpc::CreateChannel(
        shards[0].address(), grpc::InsecureChannelCredentials()));
    v1::CreateTableRequest create;
    v1::TableConfig* config = create.mutable_config();
    config->set_name("w");
    config->set_kind(v1::TABLE_KIND_DENSE);
    config->set_dense_size(size);
    config->mutable_optimizer()->set_learning_rate(kLearningRate);
    *config->mutable_consistency() = consistency;
    v1::CreateTableResponse created;
    grpc::ClientContext context;
    REQUIRE(stub->CreateTable(&context, create, &created).ok());
    for (uint32_t worker : {0u, 1u}) {
      const grpc::Status registered = Register(worker);
      INFO(registered.error_message());
      REQUIRE(registered.ok());
    }
  }

  pid_t pid() const { return shards[0].process->pid(); }

  grpc::Status Register(uint32_t worker) {
    v1::RegisterRequest request;
    request.set_worker_id(worker);
    request.set_worker_incarnation(1);
    v1::RegisterResponse response;  // the shard's lease, --lease_s
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    return stub->Register(&context, request, &response);
  }

  // Worker `worker`'s push of ones for step `clock` (its seq-th push).
  grpc::Status Push(uint32_t worker, uint64_t seq = 1, int64_t clock = 0) {
    v1::PushDenseRequest request;
    request.set_table("w");
    const std::vector<float> ones(size, 1.0f);
    request.set_gradient(ones.data(), ones.size() * sizeof(float));
    request.mutable_origin()->set_worker_id(worker);
    request.mutable_origin()->set_worker_incarnation(1);
    request.mutable_origin()->set_seq(seq);
    request.set_clock(clock);
    v1::PushResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    return stub->PushDense(&context, request, &response);
  }

  // The sample `series` (a name with its labels, as exported) from /metrics.
  double Sample(const std::string& series) {
    httplib::Client http("127.0.0.1", metrics_port);
    auto res = http.Get("/metrics");
    REQUIRE(res);
    const std::string& text = res->body;
    const std::string line = "\n" + series + " ";
    const size_t at = text.find(line);
    INFO(series << " in /metrics");
    REQUIRE(at != std::string::npos);
    const size_t begin = at + line.size();
    double value = -1;
    REQUIRE(absl::SimpleAtod(text.substr(begin, text.find('\n', begin) - begin), &value));
    return value;
  }
  double Waiting() { return Sample("taups_waiting_pulls"); }

  // Polls the gauge until it reads `want` (true) or `timeout` passes.
  bool WaitingReaches(double want, absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (absl::Now() < deadline) {
      if (Waiting() == want) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return Waiting() == want;
  }

  const uint64_t size;
  TempDir dir;
  std::vector<Shard> shards;
  int metrics_port = 0;
  std::unique_ptr<v1::ParameterServer::Stub> stub;
};

// `n` pulls of "w" by worker 0 at clock 1 with no deadline.
class PullFlood : public DensePullFlood {
 public:
  PullFlood(v1::ParameterServer::Stub* stub, int n)
      : DensePullFlood(stub, "w", kSize, /*worker=*/0, /*clock=*/1, n) {}
  bool AllAnswered(uint64_t step, float value) {
    return DensePullFlood::AllAnswered(step, value, kSize);
  }
};

TEST_CASE("1,000 waiting sync pulls hold no server thread each; cancelling frees them") {
  Server server;
  const int threads_before = ThreadsOf(server.pid());
  PullFlood flood(server.stub.get(), kPulls);
  REQUIRE(server.WaitingReaches(kPulls, absl::Seconds(20)));
  const int threads_parked = ThreadsOf(server.pid());
  INFO("server threads: " << threads_before << " before, " << threads_parked
                          << " with " << kPulls << " pulls waiting");
  // A thread per waiting call would add 1,000.
  CHECK(threads_parked <= threads_before + 16);

  // Other callers are answered at once.
  const absl::Time start = absl::Now();
  v1::StatsRequest stats_request;
  v1::StatsResponse stats;
  grpc::ClientContext stats_context;
  stats_context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  CHECK(server.stub->Stats(&stats_context, stats_request, &stats).ok());
  CHECK(server.Register(7).ok());
  CHECK(server.Push(0).ok());  // worker 1 has not pushed: the step stays open
  CHECK(absl::Now() - start < absl::Seconds(1));
  CHECK(flood.Done() == 0);
  CHECK(server.Waiting() == kPulls);

  flood.CancelAll();
  REQUIRE(flood.AllDone(absl::Seconds(10)));
  CHECK(flood.Count(grpc::StatusCode::CANCELLED) == kPulls);
  CHECK(server.WaitingReaches(0, absl::Seconds(5)));
}

TEST_CASE("closing the step answers every parked pull with the step's values") {
  Server server;
  PullFlood flood(server.stub.get(), kPulls);
  REQUIRE(server.WaitingReaches(kPulls, absl::Seconds(20)));
  REQUIRE(server.Push(0).ok());
  REQUIRE(server.Push(1).ok());  // the second push closes step 0
  REQUIRE(flood.AllDone(absl::Seconds(10)));
  // The step's mean gradient is 1: sgd moves every value from 0 by -lr.
  CHECK(flood.AllAnswered(/*step=*/1, -kLearningRate));
  CHECK(server.WaitingReaches(0, absl::Seconds(5)));
}

// Dense answers of 64 KiB or more are sent from the table's own memory
// (DenseTable::Lend), so neither a parked pull nor an answered one takes an
// answer buffer (server/answer_buffers.h): 200 waiting pulls hold none, and
// after they are answered no buffer is kept either. A push that raced the
// sends may have left blocks only the answers held; those go when gRPC lets
// go of the answers.
TEST_CASE("waiting pulls of a large table hold no answer memory") {
  constexpr uint64_t kLarge = 65536;  // 256 KiB an answer
  constexpr int kLargePulls = 200;
  Server server({}, SyncOfTwo(), kLarge);
  const std::string in_flight = "taups_pull_answer_bytes{state=\"in_flight\"}";
  const std::string kept = "taups_pull_answer_bytes{state=\"kept\"}";
  const std::string lent = "taups_pull_answer_bytes{state=\"lent\"}";
  CHECK(server.Sample(in_flight) == 0);
  CHECK(server.Sample(kept) == 0);
  CHECK(server.Sample(lent) == 0);
  DensePullFlood flood(server.stub.get(), "w", kLarge, /*worker=*/0, /*clock=*/1,
                       kLargePulls);
  REQUIRE(server.WaitingReaches(kLargePulls, absl::Seconds(20)));
  CHECK(server.Sample(in_flight) == 0);
  REQUIRE(server.Push(0).ok());
  REQUIRE(server.Push(1).ok());
  REQUIRE(flood.AllDone(absl::Seconds(10)));
  CHECK(flood.AllAnswered(/*step=*/1, -kLearningRate, kLarge));
  // The step's next push writes the blocks the answers may still be sending.
  REQUIRE(server.Push(0, /*seq=*/2, /*clock=*/1).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (server.Sample(lent) != 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  CHECK(server.Sample(lent) == 0);
  CHECK(server.Sample(in_flight) == 0);
  CHECK(server.Sample(kept) == 0);
}

TEST_CASE("--max_wait_s ends a pull that has no deadline of its own") {
  Server server({"--max_wait_s=0.5"});
  v1::PullDenseRequest request;
  request.set_table("w");
  request.set_count(kSize);
  request.set_worker_id(0);
  request.set_clock(1);
  v1::PullDenseResponse response;
  grpc::ClientContext context;
  const absl::Time start = absl::Now();
  const grpc::Status status = server.stub->PullDense(&context, request, &response);
  const absl::Duration waited = absl::Now() - start;
  CHECK(status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  CHECK(absl::StrContains(status.error_message(), "--max_wait_s"));
  CHECK(absl::StrContains(status.error_message(), "step 0"));
  CHECK(waited >= absl::Milliseconds(490));
  CHECK(waited < absl::Seconds(2));
  CHECK(server.WaitingReaches(0, absl::Seconds(2)));
}

TEST_CASE("a semi-sync step closed by its timeout (a Tick) answers the parked pulls") {
  v1::ConsistencyConfig semi_sync = SyncOfTwo();
  semi_sync.set_kind(v1::CONSISTENCY_SEMI_SYNC);
  semi_sync.set_quorum(1.0f);
  semi_sync.set_step_timeout_s(0.5);
  Server server({}, semi_sync);
  PullFlood flood(server.stub.get(), 100);
  REQUIRE(server.WaitingReaches(100, absl::Seconds(10)));
  // Worker 1 never pushes and the quorum is both: only the timeout, checked
  // on the shard's Tick, can close the step.
  REQUIRE(server.Push(0).ok());
  REQUIRE(flood.AllDone(absl::Seconds(5)));
  CHECK(flood.AllAnswered(/*step=*/1, -kLearningRate));  // worker 0's gradient alone
  CHECK(server.WaitingReaches(0, absl::Seconds(2)));
}

TEST_CASE("dropping the table answers its parked pulls NOT_FOUND") {
  Server server;
  PullFlood flood(server.stub.get(), 100);
  REQUIRE(server.WaitingReaches(100, absl::Seconds(10)));
  v1::DropTableRequest drop;
  drop.set_name("w");
  v1::DropTableResponse dropped;
  grpc::ClientContext context;
  REQUIRE(server.stub->DropTable(&context, drop, &dropped).ok());
  REQUIRE(flood.AllDone(absl::Seconds(5)));
  CHECK(flood.Count(grpc::StatusCode::NOT_FOUND) == 100);
  CHECK(server.WaitingReaches(0, absl::Seconds(2)));
}

TEST_CASE("SIGTERM with 1,000 parked pulls exits within 5 s") {
  Server server;
  PullFlood flood(server.stub.get(), kPulls);
  REQUIRE(server.WaitingReaches(kPulls, absl::Seconds(20)));
  const absl::Time start = absl::Now();
  REQUIRE(kill(server.pid(), SIGTERM) == 0);
  const std::optional<int> exit_code =
      server.shards[0].process->Wait(absl::Seconds(10));
  const absl::Duration took = absl::Now() - start;
  INFO("exited after " << absl::FormatDuration(took));
  REQUIRE(exit_code.has_value());
  CHECK(*exit_code == 0);
  CHECK(took < absl::Seconds(5));
  REQUIRE(flood.AllDone(absl::Seconds(5)));
  CHECK(flood.Count(grpc::StatusCode::UNAVAILABLE) == kPulls);
}

}  // namespace
}  // namespace taups::testing
