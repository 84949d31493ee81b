// Client membership against real in-process shards: Leave (explicit and by
// the destructor), heartbeats that do not wait on each other, and the clock
// a worker resumes at after its lease ran out.
#include <catch2/catch.hpp>

#include <algorithm>

#include <grpcpp/grpcpp.h>

#include <thread>

#include "absl/synchronization/mutex.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"
#include "taups/client.h"
#include "tests/inproc_cluster.h"
#include "worker/src/client_events.h"
#include "worker/src/grpc_client.h"

namespace taups {
namespace {

using Cluster = InProcessCluster;

// Every line logged in this process from the first call on (the default
// logger keeps its own sinks too).
std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> LogLines() {
  static auto* sink = [] {
    auto ring = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(4096);
    spdlog::default_logger()->sinks().push_back(ring);
    return new std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt>(ring);
  }();
  return *sink;
}

bool Logged(const std::string& needle) {
  for (const std::string& line : LogLines()->last_formatted()) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

ClientOptions Options(const Cluster& cluster, uint32_t worker,
                      absl::Duration lease) {
  ClientOptions options;
  options.servers = cluster.addresses;
  options.worker_id = worker;
  options.lease = lease;
  // A pull stuck behind a step that never closes fails fast.
  options.call_timeout = absl::Seconds(4);
  return options;
}

std::unique_ptr<Client> Connect(const ClientOptions& options) {
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

GrpcClient& Internal(Client& client) { return dynamic_cast<GrpcClient&>(client); }

TableConfig Table(ConsistencyKind kind, uint32_t num_workers) {
  TableConfig config = TableConfig::Dense("w", 4);
  config.optimizer.learning_rate = 1.0f;
  config.consistency.kind = kind;
  config.consistency.num_workers = num_workers;
  config.consistency.staleness_bound = 2;
  return config;
}

const WorkerShardStats* FindWorker(const TableShardStats& stats, uint32_t id) {
  for (const WorkerShardStats& w : stats.workers) {
    if (w.worker_id == id) return &w;
  }
  return nullptr;
}

// Waits (up to 5 s) until every shard counts `live` live workers.
void AwaitLive(Client& observer, uint32_t live) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (true) {
    auto stats = observer.Stats("w");
    REQUIRE(stats.ok());
    bool all = true;
    for (const TableShardStats& s : *stats) all = all && s.live_workers == live;
    if (all) return;
    REQUIRE(absl::Now() < deadline);
    absl::SleepFor(absl::Milliseconds(20));
  }
}

void Pull(Client& client) {
  std::vector<float> p(4);
  REQUIRE(client.PullDense("w", absl::MakeSpan(p)).ok());
}

void PushOnes(Client& client) {
  auto pushed = client.PushDense("w", std::vector<float>(4, 1.0f));
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
}

// One step of one worker: pull, push ones, Clock.
void Step(Client& client) {
  Pull(client);
  PushOnes(client);
  client.Clock();
}

// Two workers with 300 ms leases on table "w" of policy `kind`.
struct TwoWorkers {
  TwoWorkers(uint32_t shards, ConsistencyKind kind) : cluster(shards) {
    a = Connect(Options(cluster, 0, absl::Milliseconds(300)));
    b = Connect(Options(cluster, 1, absl::Milliseconds(300)));
    REQUIRE(a->CreateTable(Table(kind, 2)).ok());
  }
  // Worker 0 stops (no heartbeats either) until worker 1 sees it dead.
  void PauseA() {
    Internal(*a).PauseHeartbeatsForTest(true);
    AwaitLive(*b, 1);
  }
  void ResumeA() { Internal(*a).PauseHeartbeatsForTest(false); }
  // Shard 0's figures for "w".
  TableShardStats Stats() {
    auto stats = b->Stats("w");
    REQUIRE(stats.ok());
    return (*stats)[0];
  }
  Cluster cluster;
  std::unique_ptr<Client> a, b;
};

TEST_CASE("a worker that leaves is recorded as left, and sync goes on without it") {
  LogLines();
  Cluster cluster(2);
  const absl::Duration lease = absl::Milliseconds(1500);
  std::unique_ptr<Client> a = Connect(Options(cluster, 0, lease));
  std::unique_ptr<Client> b = Connect(Options(cluster, 1, lease));
  REQUIRE(a->CreateTable(Table(ConsistencyKind::kSync, 2)).ok());
  std::vector<float> p(4);
  REQUIRE(a->PullDense("w", absl::MakeSpan(p)).ok());
  REQUIRE(b->PullDense("w", absl::MakeSpan(p)).ok());
  REQUIRE(a->PushDense("w", std::vector<float>(4, 1.0f)).ok());
  REQUIRE(b->PushDense("w", std::vector<float>(4, 1.0f)).ok());
  a->Clock();
  b->Clock();

  REQUIRE(a->Leave().ok());
  REQUIRE(a->Leave().ok());  // again: nothing to do
  // Worker 1's steps close on its push alone, at once: nobody waits for
  // worker 0's lease to run out.
  const absl::Time start = absl::Now();
  for (int i = 0; i < 3; ++i) Step(*b);
  REQUIRE(absl::Now() - start < lease / 2);
  REQUIRE(b->PullDense("w", absl::MakeSpan(p)).ok());
  REQUIRE(p == std::vector<float>(4, -4.0f));  // mean 1 once, then 1 three times

  // A push for a sync step after leaving is refused, not counted.
  auto late = a->PushDense("w", std::vector<float>(4, 1.0f));
  REQUIRE(late.status().code() == absl::StatusCode::kFailedPrecondition);

  absl::SleepFor(lease * 1.5);  // past the lease it no longer renews
  auto stats = b->Stats("w");
  REQUIRE(stats.ok());
  for (const TableShardStats& s : *stats) {
    REQUIRE(s.live_workers == 1);
    REQUIRE(s.lease_expirations == 0);
    REQUIRE(s.steps_closed == 4);
    const WorkerShardStats* w0 = FindWorker(s, 0);
    REQUIRE(w0 != nullptr);
    REQUIRE_FALSE(w0->live);
  }
  REQUIRE(Logged("worker 0 (incarnation"));
  REQUIRE(Logged(") left"));
  REQUIRE_FALSE(Logged("worker 0 declared DEAD"));
}

TEST_CASE("destroying a client that did not leave leaves") {
  LogLines();
  Cluster cluster(1);
  const absl::Duration lease = absl::Milliseconds(600);
  std::unique_ptr<Client> a = Connect(Options(cluster, 7, lease));
  std::unique_ptr<Client> b = Connect(Options(cluster, 8, lease));
  REQUIRE(b->CreateTable(Table(ConsistencyKind::kSync, 2)).ok());
  a.reset();
  auto stats = b->Stats("w");
  REQUIRE(stats.ok());
  REQUIRE((*stats)[0].live_workers == 1);
  // Sync goes on without it, and its lease never "expires".
  Step(*b);
  Step(*b);
  absl::SleepFor(lease * 2);
  stats = b->Stats("w");
  REQUIRE(stats.ok());
  REQUIRE((*stats)[0].lease_expirations == 0);
  REQUIRE((*stats)[0].steps_closed == 2);
  REQUIRE_FALSE(Logged("worker 7 declared DEAD"));
}

// A stand-in shard: answers Register and Leave; Heartbeat either answers
// (and records when) or hangs until the caller gives up.
class FakeShard final : public v1::ParameterServer::Service {
 public:
  explicit FakeShard(bool hang) : hang_(hang) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0",
                             *MakeServerCredentials(ServerSecurity{}), &port_);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    REQUIRE(server_ != nullptr);
  }
  ~FakeShard() override {
    released_ = true;
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  grpc::Status Register(grpc::ServerContext*, const v1::RegisterRequest*,
                        v1::RegisterResponse* response) override {
    response->set_lease_s(5.0);
    response->set_heartbeat_every_s(0.1);
    response->set_server_incarnation(1);
    return grpc::Status::OK;
  }
  grpc::Status Leave(grpc::ServerContext*, const v1::LeaveRequest*,
                     v1::LeaveResponse* response) override {
    response->set_known(true);
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest*,
                         v1::HeartbeatResponse* response) override {
    {
      absl::MutexLock lock(&mu_);
      beats_.push_back(absl::Now());
    }
    while (hang_ && !released_ && !context->IsCancelled()) {
      absl::SleepFor(absl::Milliseconds(2));
    }
    response->set_known(true);
    response->set_server_incarnation(1);
    return grpc::Status::OK;
  }
  std::vector<absl::Time> beats() {
    absl::MutexLock lock(&mu_);
    return beats_;
  }

 private:
  const bool hang_;
  std::atomic<bool> released_{false};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  absl::Mutex mu_;
  std::vector<absl::Time> beats_ ABSL_GUARDED_BY(mu_);
};

TEST_CASE("a shard that never answers heartbeats delays none to the others") {
  FakeShard answering(false);
  FakeShard hanging(true);
  ClientOptions options;
  options.servers = {answering.address(), hanging.address()};
  options.worker_id = 3;
  options.call_timeout = absl::Seconds(5);
  std::unique_ptr<Client> client = Connect(options);
  absl::SleepFor(absl::Milliseconds(1500));
  const std::vector<absl::Time> beats = answering.beats();
  // Every 100 ms, whatever the other shard does; before, each round waited
  // for the hung shard's call to time out (its 100 ms deadline) first, so
  // every gap was 200 ms or more. The typical gap tells the two apart; one
  // late round on a loaded machine (212 ms seen under ASan on 2 cores) is
  // the scheduler's, so the widest gap gets a round of slack, not none.
  REQUIRE(beats.size() >= 10);
  std::vector<absl::Duration> gaps;
  for (size_t i = 1; i < beats.size(); ++i) gaps.push_back(beats[i] - beats[i - 1]);
  std::sort(gaps.begin(), gaps.end());
  const absl::Duration median = gaps[gaps.size() / 2];
  const absl::Duration widest = gaps.back();
  INFO("median gap between heartbeats " << absl::FormatDuration(median)
       << ", widest " << absl::FormatDuration(widest));
  REQUIRE(median < absl::Milliseconds(150));
  REQUIRE(widest < absl::Milliseconds(300));
  // The hung shard got heartbeats too, each cut off at its deadline, not one
  // piled on another.
  const size_t hung = hanging.beats().size();
  REQUIRE(hung >= 3);
  REQUIRE(hung <= beats.size() + 1);
  // Each of those was cut off at its deadline and counted as failed; the
  // answering shard's were (nearly all) not.
  const std::optional<ClientEvents> events = EventsOf(*client);
  REQUIRE(events.has_value());
  CHECK(events->heartbeat_failures[1] >= 2);
  CHECK(events->heartbeat_failures[0] < events->heartbeat_failures[1]);
  client.reset();
}

TEST_CASE("a worker paused past its lease resumes at the step being gathered (sync)") {
  TwoWorkers w(1, ConsistencyKind::kSync);
  Step(*w.a);  // step 0: a's push is gathered, b's closes it
  Step(*w.b);
  // Worker 0 stops between steps and is declared dead; worker 1 goes on
  // alone for 5 steps.
  w.PauseA();
  for (int i = 0; i < 5; ++i) Step(*w.b);
  REQUIRE(w.b->clock() == 6);
  w.ResumeA();

  // Its next pull registers it again and moves it to step 6: its push is
  // for the step the shard gathers, neither late (1) nor ahead (7).
  Pull(*w.a);
  REQUIRE(w.a->clock() == 6);
  PushOnes(*w.a);
  w.a->Clock();
  Step(*w.b);  // closes step 6 with both
  Pull(*w.a);  // step 7: not stuck
  REQUIRE(w.a->clock() == 7);
  const TableShardStats stats = w.Stats();
  REQUIRE(stats.late == 0);
  REQUIRE(stats.steps_closed == 7);
  REQUIRE(stats.lease_expirations == 1);
}

TEST_CASE("re-registering between a push and Clock() does not run one step ahead") {
  TwoWorkers w(1, ConsistencyKind::kSync);
  Pull(*w.a);
  PushOnes(*w.a);
  // Worker 0 stops after pushing step 0, before its Clock().
  Step(*w.b);  // closes step 0
  w.PauseA();
  for (int i = 0; i < 4; ++i) Step(*w.b);  // steps 1..4 alone
  // The heartbeat thread finds the lease gone and registers again while the
  // training thread is still before its Clock().
  w.ResumeA();
  AwaitLive(*w.b, 2);
  w.a->Clock();
  REQUIRE(w.a->clock() == 1);  // the join clock waits for the next step
  Pull(*w.a);
  REQUIRE(w.a->clock() == 5);  // the open step, not 6
  PushOnes(*w.a);
  w.a->Clock();
  Step(*w.b);  // step 5 closes with both
  Pull(*w.a);
  const TableShardStats stats = w.Stats();
  REQUIRE(stats.late == 0);
  REQUIRE(stats.steps_closed == 6);
}

TEST_CASE("a worker paused past its lease resumes at the slowest live clock (ssp)") {
  TwoWorkers w(2, ConsistencyKind::kSsp);
  Step(*w.a);
  Step(*w.b);
  w.PauseA();
  for (int i = 0; i < 10; ++i) Step(*w.b);  // unconstrained while 0 is dead
  REQUIRE(w.b->clock() == 11);
  w.ResumeA();
  Pull(*w.a);
  REQUIRE(w.a->clock() == 11);  // not 1: it would hold worker 1 back 8 steps
  PushOnes(*w.a);
  w.a->Clock();
  // Worker 1 is not held back by the one that came back.
  const absl::Time start = absl::Now();
  Step(*w.b);
  Step(*w.b);
  REQUIRE(absl::Now() - start < absl::Seconds(1));
  auto stats = w.b->Stats("w");
  REQUIRE(stats.ok());
  for (const TableShardStats& s : *stats) {
    const WorkerShardStats* w0 = FindWorker(s, 0);
    REQUIRE(w0 != nullptr);
    REQUIRE(w0->live);
    REQUIRE(w0->clock == 12);
  }
}

TEST_CASE("another table's clock does not move a new worker hundreds of steps") {
  Cluster cluster(1);
  std::unique_ptr<Client> old = Connect(Options(cluster, 0, absl::Seconds(10)));
  // An async table from an earlier job in which worker 0 reached clock 300.
  TableConfig earlier = Table(ConsistencyKind::kAsync, 1);
  earlier.name = "earlier";
  REQUIRE(old->CreateTable(earlier).ok());
  for (int i = 0; i < 300; ++i) old->Clock();
  REQUIRE(old->PushDense("earlier", std::vector<float>(4, 1.0f)).ok());
  REQUIRE(old->CreateTable(Table(ConsistencyKind::kSync, 1)).ok());
  REQUIRE(old->Leave().ok());
  old.reset();

  // A new process with the same worker id joins the sync table at step 0.
  std::unique_ptr<Client> a = Connect(Options(cluster, 0, absl::Seconds(10)));
  REQUIRE(a->clock() == 0);
  Step(*a);
  Step(*a);
  REQUIRE(a->clock() == 2);
  auto stats = a->Stats("w");
  REQUIRE(stats.ok());
  REQUIRE((*stats)[0].steps_closed == 2);
}

}  // namespace
}  // namespace taups
