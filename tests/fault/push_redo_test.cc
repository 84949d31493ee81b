// A push part refused by a shard that had forgotten the worker is redone
// (ClientCore::SendPush): the client registers again and sends that shard's
// part once more with a fresh seq, once; the refused seq is never reused and
// the parts other shards accepted are not sent again. Real ps_server
// processes on 127.0.0.1:
//   - a shard told the worker left (what it does when a lease runs out under
//     load while the client still counts it as good): the next push is
//     refused, redone and applied exactly once, as one slice and as two;
//   - refusals the mechanism must leave alone: a second push for one sync
//     step, and a client that does not register;
//   - fault_driver workers under sync (the fault harness), one of two shards
//     killed -9 at a seeded random point and restarted from its checkpoint:
//     at least one push part is redone, every push is answered, the history
//     checker finds nothing applied twice;
//   - ps_worker (ctr) under sync through the same: no worker exits, every
//     step is done.
//
// Seeds: TAUPS_REDO_SEEDS=1,2,... (default 1,2,3); each kill run prints a
// "redo-figures:" line.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "taups/client.h"
#include "tests/fault/fault_cluster.h"
#include "tests/process_harness.h"
#include "worker/src/client_events.h"

namespace taups::fault {
namespace {

using testing::Shard;
using testing::StartShards;
using testing::TempDir;

constexpr uint64_t kIncarnation = 4242;
// What ClientCore::NoteRedo logs once per redone part.
constexpr const char* kRedoLine = "sending that shard's part once more";

std::vector<uint64_t> Seeds() {
  const char* text = std::getenv("TAUPS_REDO_SEEDS");
  std::vector<uint64_t> seeds;
  for (absl::string_view s :
       absl::StrSplit(text != nullptr ? text : "1,2,3", ',', absl::SkipEmpty())) {
    uint64_t seed = 0;
    if (absl::SimpleAtoi(s, &seed)) seeds.push_back(seed);
  }
  return seeds;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The client's redo counter, from fault_driver's last line ("... done,
// push redos N"); fails the test when the line is missing.
uint64_t DriverRedos(const std::string& log) {
  const std::string key = "done, push redos ";
  const size_t at = log.rfind(key);
  INFO(log);
  REQUIRE(at != std::string::npos);
  const size_t begin = at + key.size();
  uint64_t n = 0;
  REQUIRE(absl::SimpleAtoi(log.substr(begin, log.find('\n', begin) - begin), &n));
  return n;
}

std::unique_ptr<Client> ConnectWorker(int port, size_t slice_bytes, bool register_worker) {
  ClientOptions options;
  options.servers = {absl::StrCat("127.0.0.1:", port)};
  options.worker_id = 0;
  options.worker_incarnation = kIncarnation;
  options.slice_bytes = slice_bytes;
  options.call_timeout = absl::Seconds(10);
  options.register_worker = register_worker;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  return std::move(*client);
}

// A sync table of `size` zeros, SGD with learning rate 1: a step's update
// is minus the mean of its gradients.
TableConfig SyncTable(const std::string& name, uint64_t size, uint32_t workers) {
  TableConfig config = TableConfig::Dense(name, size);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kZeros;
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = workers;
  return config;
}

// Tells the shard at `port` that worker 0 (kIncarnation) left, over a raw
// stub: from then on it does not know the worker, as after a lease ran out.
void ForgetWorker(int port) {
  auto channel = OpenChannel(absl::StrCat("127.0.0.1:", port), ChannelSecurity{});
  REQUIRE(channel.ok());
  auto stub = v1::ParameterServer::NewStub(*channel);
  grpc::ClientContext context;
  v1::LeaveRequest request;
  request.set_worker_id(0);
  request.set_worker_incarnation(kIncarnation);
  v1::LeaveResponse response;
  REQUIRE(stub->Leave(&context, request, &response).ok());
  REQUIRE(response.known());
}

uint64_t Redos(const Client& client) {
  std::optional<ClientEvents> events = EventsOf(client);
  REQUIRE(events.has_value());
  return events->total_redos();
}

// One sync step of the only worker: pull, push `g` everywhere, clock.
PushResult Step(Client& client, const std::string& table, uint64_t size, float g) {
  std::vector<float> values(size);
  auto pulled = client.PullDense(table, absl::MakeSpan(values));
  REQUIRE(pulled.ok());
  auto pushed = client.PushDense(table, std::vector<float>(size, g), &*pulled);
  INFO(pushed.status().ToString());
  REQUIRE(pushed.ok());
  client.Clock();
  return *pushed;
}

TEST_CASE("a push refused by a shard that forgot the worker is redone once, applied once") {
  // 2048 floats: one slice, or two of 1024 (4 KiB slices, the smallest).
  constexpr uint64_t kSize = 2048;
  const size_t slice_bytes = GENERATE(size_t{1} << 20, size_t{4096});
  INFO("slice_bytes " << slice_bytes);
  TempDir run;
  std::vector<Shard> shards = StartShards(run.path(), 1, {"--stats_interval_s=0"});
  {
    auto client = ConnectWorker(shards[0].port, slice_bytes, true);
    REQUIRE(client->CreateTable(SyncTable("w", kSize, 1)).ok());

    REQUIRE(Step(*client, "w", kSize, -1.0f).all_accepted());  // values 1
    ForgetWorker(shards[0].port);
    // The client still counts its lease as good and pushes unregistered: the
    // shard refuses that seq, the client registers again and redoes it.
    const PushResult redone = Step(*client, "w", kSize, -2.0f);  // values 3
    REQUIRE(redone.all_accepted());
    REQUIRE_FALSE(redone.shards[0].duplicate);
    REQUIRE(Redos(*client) == 1);
    REQUIRE(Step(*client, "w", kSize, -4.0f).all_accepted());  // values 7, no redo
    REQUIRE(Redos(*client) == 1);

    std::vector<float> values(kSize);
    auto pulled = client->PullDense("w", absl::MakeSpan(values));
    REQUIRE(pulled.ok());
    // Three steps closed, each applied once: 1 + 2 + 4 (a second apply of
    // the redone push would show as 5 or a fourth version).
    REQUIRE(pulled->shard_versions[0] == 3);
    for (float v : values) REQUIRE(v == 7.0f);
  }
  REQUIRE(shards[0].process->Stop() == std::optional<int>(0));
}

TEST_CASE("refusals for other reasons are not redone") {
  TempDir run;
  std::vector<Shard> shards = StartShards(run.path(), 1, {"--stats_interval_s=0"});
  SECTION("a second push for one sync step") {
    std::unique_ptr<Client> client = ConnectWorker(shards[0].port, size_t{1} << 20, true);
    // Two workers expected: step 0 stays open with this worker's push in it.
    REQUIRE(client->CreateTable(SyncTable("v", 4, 2)).ok());
    REQUIRE(client->PushDense("v", std::vector<float>(4, -1.0f)).ok());
    auto again = client->PushDense("v", std::vector<float>(4, -1.0f));
    REQUIRE(again.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE(absl::StrContains(again.status().message(), "already pushed for step 0"));
    REQUIRE(Redos(*client) == 0);
  }
  SECTION("a client that does not register") {
    auto client = ConnectWorker(shards[0].port, size_t{1} << 20, false);
    REQUIRE(client->CreateTable(SyncTable("u", 4, 1)).ok());
    auto pushed = client->PushDense("u", std::vector<float>(4, -1.0f));
    REQUIRE(pushed.status().code() == absl::StatusCode::kFailedPrecondition);
    REQUIRE(absl::StrContains(pushed.status().message(), "is not registered"));
    REQUIRE(Redos(*client) == 0);
    // It did not register itself to get the push through.
    auto stats = client->Stats("u");
    REQUIRE(stats.ok());
    REQUIRE((*stats)[0].live_workers == 0);
  }
  REQUIRE(shards[0].process->Stop() == std::optional<int>(0));
}

// Waits up to 30 s for a complete checkpoint (ckpt-<seq>, no suffix) in `dir`.
void AwaitCheckpoint(const std::string& dir) {
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  auto complete = [](const std::filesystem::directory_entry& e) {
    const std::string name = e.path().filename().string();
    return name.rfind("ckpt-", 0) == 0 && name.find('.') == std::string::npos;
  };
  for (;;) {
    std::error_code ignored;
    std::filesystem::directory_iterator it(dir, ignored), end;
    if (std::any_of(it, end, complete)) return;
    REQUIRE(absl::Now() < deadline);
    absl::SleepFor(absl::Milliseconds(10));
  }
}

// Two shards, as fault_scenarios_test's kill -9 under sync: checkpoints
// every 10 versions. 60 s leases: heartbeats every 15 s, longer than a
// whole run, so the restored shard learns of a worker only from its next
// push, which it refuses (the worker is not registered there) and the
// client redoes. With 10 s leases (heartbeats every 2.5 s) a heartbeat
// could register the worker again before its next push, and then nothing
// was redone.
FaultClusterOptions SyncCluster() {
  FaultClusterOptions options;
  options.num_shards = 2;
  options.num_workers = 2;
  options.pushes = 150;
  options.shard_args = {"--checkpoint_every_versions=10", "--checkpoint_keep=3",
                        "--lease_s=60"};
  options.driver_args = {"--step_ms=2", "--think_ms=3", "--retry_budget_s=30",
                         "--consistency=sync"};
  options.mode = CheckOptions::Mode::kSync;
  return options;
}

// The version of `table` on shard s, read by a client that does not
// register; 0 while it cannot be read.
uint64_t ShardVersion(const FaultCluster& cluster, const std::string& table, uint32_t s) {
  ClientOptions options;
  options.servers = absl::StrSplit(cluster.Servers(), ',');
  options.register_worker = false;
  options.max_attempts = 1;
  auto admin = Client::Connect(options);
  if (!admin.ok()) return 0;
  auto stats = (*admin)->Stats(table);
  return stats.ok() && stats->size() > s ? (*stats)[s].version : 0;
}

// The bytes that sit unread in the receive queues of the connections
// accepted on 127.0.0.1:`port` (/proc/net/tcp and tcp6, established
// sockets only): requests a stopped shard has not read yet.
uint64_t UnreadBytesAt(int port) {
  uint64_t unread = 0;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      // "sl local_address rem_address st tx_queue:rx_queue ..."
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues;
      if (!(fields >> slot >> local >> remote >> state >> queues)) continue;
      const size_t colon = local.rfind(':');
      const size_t split = queues.find(':');
      if (colon == std::string::npos || split == std::string::npos || state != "01") continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) != static_cast<unsigned long>(port)) {
        continue;
      }
      unread += std::stoull(queues.substr(split + 1), nullptr, 16);
    }
  }
  return unread;
}

// SIGSTOPs `victim` for 20-100 ms (drawn) with a push on its way to it: at
// least one push part's worth of bytes (the table's slots on one shard, 4
// bytes each) waits unread in the stopped shard's sockets, so that push is
// unanswered at the kill, the restored shard refuses it and the worker
// redoes it. A worker stopped in a pull from the victim sends nothing (its
// next call after the restart is that pull, which registers it again
// first), and a push read before the stop may have been applied and
// answered: then the stop is lifted and tried again a few ms later. (The
// other shard's push count rising during the stop is not enough: the
// victim may have applied that push's part just before it stopped.)
void HangWithPushPending(FaultCluster& cluster, uint32_t victim, std::mt19937_64& rng) {
  const uint64_t part_bytes = cluster.slots() * sizeof(float);
  for (int attempt = 0; attempt < 100; ++attempt) {
    cluster.StopShard(victim);
    const absl::Time until =
        absl::Now() + absl::Milliseconds(std::uniform_int_distribution<int>(20, 100)(rng));
    bool pending = false;
    while (!pending && absl::Now() < until) {
      absl::SleepFor(absl::Milliseconds(2));
      pending = UnreadBytesAt(cluster.Port(victim)) >= part_bytes;
    }
    if (pending) {
      absl::SleepFor(until - absl::Now());
      return;
    }
    cluster.ContShard(victim);
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(2, 20)(rng)));
  }
  FAIL("no push part waited unread at shard " << victim << " while it was stopped");
}

// Kills shard `victim` once it has a checkpoint and its `table` reached a
// random 15-60 % of `versions`, restarts it after 0.1-1 s (drawn from rng).
// With `hang_first` it is first hung with a push on its way to it
// (HangWithPushPending), as a hung shard a watchdog kills: that push is
// still unanswered when the new process serves.
void KillAndRestart(FaultCluster& cluster, uint32_t victim, const std::string& table,
                    uint64_t versions, std::mt19937_64& rng, bool hang_first) {
  AwaitCheckpoint(cluster.CheckpointDir(victim));
  const uint64_t target = static_cast<uint64_t>(
      std::uniform_real_distribution<double>(0.15, 0.6)(rng) * static_cast<double>(versions));
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (ShardVersion(cluster, table, victim) < target) {
    REQUIRE(absl::Now() < deadline);
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (hang_first) HangWithPushPending(cluster, victim, rng);
  cluster.KillShard(victim);
  std::this_thread::sleep_for(
      std::chrono::milliseconds(std::uniform_int_distribution<int>(100, 1000)(rng)));
  cluster.RestartShard(victim);
  const std::string log = cluster.ShardLog(victim);
  INFO(log);
  REQUIRE(log.find("restored table '") != std::string::npos);  // not started empty
}

TEST_CASE("sync drivers through a shard's kill -9: every push answered, none applied twice",
          "[sync_redo]") {
  for (uint64_t seed : Seeds()) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    TempDir run;
    const FaultClusterOptions options = SyncCluster();
    FaultCluster cluster(run.path(), options);
    cluster.StartWorker(0);
    cluster.StartWorker(1);
    const uint32_t victim = rng() % 2;
    // A 150-step run takes 2-4 s here: kill somewhere in its first part.
    // Under sync one step is one version.
    KillAndRestart(cluster, victim, "fault", options.pushes, rng, /*hang_first=*/true);
    for (int code : cluster.WaitWorkers(absl::Seconds(60))) {
      INFO(cluster.WorkerLog(0) << cluster.WorkerLog(1));
      REQUIRE(code == 0);
    }
    const History history = cluster.ReadHistories();
    size_t refused = 0, redos = 0;
    uint64_t counted = 0;
    std::string failures;
    for (const PushOp& push : history.pushes) {
      if (push.status == "OK") continue;
      if (++refused <= 3) absl::StrAppend(&failures, "w", push.worker, " seq ", push.seq, ": ", push.status, "; ");
    }
    for (uint32_t w = 0; w < 2; ++w) {
      redos += Count(cluster.WorkerLog(w), kRedoLine);
      counted += DriverRedos(cluster.WorkerLog(w));
    }
    INFO(failures << cluster.WorkerLog(0) << cluster.WorkerLog(1));
    // Every push was answered: none ended refused because the restored
    // shard had forgotten its worker ...
    REQUIRE(refused == 0);
    // ... because at least one was refused so and redone (the clients'
    // counters, each redo logged once).
    REQUIRE(counted >= 1);
    REQUIRE(counted == redos);
    const CheckReport report = cluster.Check();
    INFO(report.Summary());
    for (const std::string& v : report.violations) UNSCOPED_INFO(v);
    REQUIRE(report.violations.empty());
    REQUIRE(report.double_applies == 0);
    REQUIRE(report.restores == 1);
    std::cout << "redo-figures: scenario=drivers seed=" << seed << " victim=" << victim
              << " pushes=" << history.pushes.size() << " refused=" << refused
              << " redos=" << redos << " " << report.Summary() << std::endl;
  }
}

TEST_CASE("ps_worker under sync rides through a shard's kill -9", "[sync_redo]") {
  constexpr uint64_t kSteps = 200;
  // The first seed only by default: two ctr workers take 10-40 s here, and
  // about 110 s under ASan on a loaded 2-core machine (hence 240 s below).
  const std::vector<uint64_t> seeds = Seeds();
  for (uint64_t seed : std::getenv("TAUPS_REDO_SEEDS") != nullptr
                           ? seeds
                           : std::vector<uint64_t>{seeds.front()}) {
    INFO("seed " << seed);
    std::mt19937_64 rng(seed);
    TempDir run;
    FaultClusterOptions options = SyncCluster();
    options.shard_args = {"--checkpoint_every_versions=10", "--checkpoint_keep=3"};
    FaultCluster cluster(run.path(), options);
    std::vector<Shard> shards(2);
    for (uint32_t s = 0; s < 2; ++s) shards[s].port = cluster.Port(s);
    auto workers = testing::StartWorkers(
        run, shards, 2,
        {"--model=ctr", "--consistency=sync", absl::StrCat("--steps=", kSteps), "--eval_every=0",
         "--eval_examples=500", "--log_every=100", "--retry_budget_s=60"});
    const uint32_t victim = rng() % 2;
    KillAndRestart(cluster, victim, "ctr_mlp", kSteps, rng, /*hang_first=*/false);
    size_t redos = 0;
    for (const testing::WorkerRun& r : testing::WaitForWorkers(workers, absl::Seconds(240))) {
      INFO(r.output);
      REQUIRE(r.exit_code == 0);
      CHECK(r.output.find(absl::StrCat("step ", kSteps, "/", kSteps)) != std::string::npos);
      CHECK(testing::JsonNumber(r.json, "shard_restarts") == 1.0);
      redos += Count(r.output, kRedoLine);
    }
    std::cout << "redo-figures: scenario=ps_worker seed=" << seed << " victim=" << victim
              << " redos=" << redos << std::endl;
  }
}

}  // namespace
}  // namespace taups::fault
