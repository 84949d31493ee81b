// The client library against real shards served over gRPC on 127.0.0.1 (in
// this process, so the test can also look at the shards directly).
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "server/shard_server.h"
#include "taups/client.h"
#include "tests/inproc_cluster.h"
#include "worker/src/grpc_client.h"

namespace taups {
namespace {

using Cluster = InProcessCluster;

TableConfig Sgd(TableConfig config, float lr) {
  config.optimizer.learning_rate = lr;
  return config;
}

TEST_CASE("dense pull/push round trip across two shards in many slices") {
  Cluster cluster(2);
  // 4 KiB slices: a 10,001-float table travels as ~10 slices.
  auto client = cluster.Connect(0, 4096);
  const uint64_t n = 10001;
  REQUIRE(client->CreateTable(Sgd(TableConfig::Dense("w", n), 0.5f)).ok());
  std::vector<float> params(n, 1.0f);
  auto pulled = client->PullDense("w", absl::MakeSpan(params));
  REQUIRE(pulled.ok());
  REQUIRE(params == std::vector<float>(n, 0.0f));
  std::vector<float> grad(n);
  std::iota(grad.begin(), grad.end(), 0.0f);
  auto pushed = client->PushDense("w", grad);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
  for (const ShardPushResult& s : pushed->shards) {
    REQUIRE(s.touched);
    REQUIRE(s.tau == 0);
    REQUIRE(s.new_version == 1);  // one version per push, not per slice
  }
  REQUIRE(client->PullDense("w", absl::MakeSpan(params)).ok());
  for (uint64_t i = 0; i < n; i += 997) REQUIRE(params[i] == -0.5f * i);
  REQUIRE(params[n - 1] == -0.5f * (n - 1));
}

TEST_CASE("controlled interleavings of two workers give exact tau") {
  Cluster cluster(2);
  auto a = cluster.Connect(1);
  auto b = cluster.Connect(2);
  const uint64_t n = 64;
  REQUIRE(a->CreateTable(TableConfig::Dense("w", n)).ok());
  REQUIRE(b->CreateTable(TableConfig::Dense("w", n)).ok());
  std::vector<float> pa(n), pb(n);
  const std::vector<float> g(n, 0.01f);
  auto tau_of = [](const absl::StatusOr<PushResult>& r) {
    REQUIRE(r.ok());
    REQUIRE(r->shards[0].tau == r->shards[1].tau);
    return r->shards[0].tau;
  };

  REQUIRE(a->PullDense("w", absl::MakeSpan(pa)).ok());  // A reads v0
  REQUIRE(b->PullDense("w", absl::MakeSpan(pb)).ok());  // B reads v0
  REQUIRE(tau_of(a->PushDense("w", g)) == 0);           // v0 -> v1
  REQUIRE(tau_of(b->PushDense("w", g)) == 1);           // B's v0 is 1 behind
  REQUIRE(a->PullDense("w", absl::MakeSpan(pa)).ok());  // A reads v2
  REQUIRE(tau_of(b->PushDense("w", g)) == 2);           // B still on v0
  REQUIRE(tau_of(b->PushDense("w", g)) == 3);
  REQUIRE(tau_of(a->PushDense("w", g)) == 2);           // A on v2, now v4
  REQUIRE(b->PullDense("w", absl::MakeSpan(pb)).ok());  // B reads v5
  REQUIRE(tau_of(b->PushDense("w", g)) == 0);

  // An explicit basis overrides the last pull.
  PullInfo old;
  old.shard_versions = {1, 1};
  old.shard_touched = {true, true};
  REQUIRE(tau_of(a->PushDense("w", g, &old)) == 5);  // version 6 - 1
}

TEST_CASE("sparse rows route to shards, duplicates are merged") {
  Cluster cluster(2);
  auto client = cluster.Connect(0);
  TableConfig config = Sgd(TableConfig::Sparse("emb", 4), 1.0f);
  config.initializer.kind = InitializerKind::kNormal;
  config.initializer.scale = 0.01f;
  REQUIRE(client->CreateTable(config).ok());
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 1000; ++k) keys.push_back(k * 7919);
  keys.push_back(keys[3]);  // a duplicate
  std::vector<float> rows(keys.size() * 4);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  const std::vector<float> row3(rows.begin() + 12, rows.begin() + 16);
  REQUIRE(std::vector<float>(rows.end() - 4, rows.end()) == row3);

  // Push 1.0 for every position: key 3 appears twice, so gets 2.0.
  std::vector<float> grads(keys.size() * 4, 1.0f);
  auto pushed = client->PushSparse("emb", keys, grads);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
  std::vector<float> after(keys.size() * 4);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(after)).ok());
  REQUIRE(after[12] == Approx(row3[0] - 2.0f));
  REQUIRE(after[0] == Approx(rows[0] - 1.0f));
  REQUIRE(after[40] == Approx(rows[40] - 1.0f));
}

TEST_CASE("a large sparse call builds its shards' parts at once, exactly") {
  // 30,000 keys over 3 shards take the client's path that groups, merges and
  // sends each shard's part on a task of its own (worker/src/sparse_ops.cc,
  // kAtOnceMinKeys); to 1 shard, the push's rows are merged on a second
  // thread while its keys are grouped (MergesWhileGrouping). The expected
  // rows come from pulls of a few keys at a time (the one-after-another
  // path) and sums made here.
  const uint32_t shards = GENERATE(1u, 3u);
  INFO(shards << " shards");
  Cluster cluster(shards);
  auto client = cluster.Connect(0);
  constexpr uint32_t kDim = 8;
  constexpr float kLr = 0.5f;
  TableConfig config = Sgd(TableConfig::Sparse("emb", kDim), kLr);
  config.initializer.kind = InitializerKind::kNormal;
  config.initializer.scale = 0.01f;
  REQUIRE(client->CreateTable(config).ok());
  std::mt19937_64 rng(3);
  std::vector<uint64_t> keys(30000);
  for (uint64_t& k : keys) k = rng() % 12000;  // many duplicates
  std::vector<float> rows(keys.size() * kDim);
  SparsePullOptions with_versions;
  with_versions.row_versions = true;
  auto basis = client->PullSparse("emb", keys, absl::MakeSpan(rows),
                                  with_versions);
  REQUIRE(basis.ok());

  // Each position holds its key's row, as read 100 keys at a time.
  std::map<uint64_t, std::vector<float>> row_of;
  for (size_t begin = 0; begin < keys.size(); begin += 100) {
    const absl::Span<const uint64_t> few =
        absl::MakeConstSpan(keys).subspan(begin, 100);
    std::vector<float> got(few.size() * kDim);
    REQUIRE(client->PullSparse("emb", few, absl::MakeSpan(got)).ok());
    for (size_t i = 0; i < few.size(); ++i) {
      row_of[few[i]].assign(got.begin() + i * kDim, got.begin() + (i + 1) * kDim);
    }
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    REQUIRE(std::vector<float>(rows.begin() + i * kDim,
                               rows.begin() + (i + 1) * kDim) == row_of[keys[i]]);
  }

  // Gradients that differ by position; each key moves by lr times their sum.
  std::vector<float> grads(keys.size() * kDim);
  std::map<uint64_t, std::vector<double>> sum_of;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::vector<double>& sum = sum_of[keys[i]];
    sum.resize(kDim);
    for (uint32_t j = 0; j < kDim; ++j) {
      grads[i * kDim + j] = static_cast<float>((i % 13) + j) / 64.0f;
      sum[j] += grads[i * kDim + j];
    }
  }
  auto pushed = client->PushSparse("emb", keys, grads, &*basis);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
  for (const ShardPushResult& shard : pushed->shards) REQUIRE(shard.touched);
  REQUIRE(pushed->row_taus.size() == keys.size());
  for (uint64_t tau : pushed->row_taus) REQUIRE(tau == 0);
  std::vector<float> after(keys.size() * kDim);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(after)).ok());
  for (size_t i = 0; i < keys.size(); ++i) {
    for (uint32_t j = 0; j < kDim; ++j) {
      const double want = row_of[keys[i]][j] - kLr * sum_of[keys[i]][j];
      REQUIRE(after[i * kDim + j] == Approx(want).margin(1e-4));
    }
  }
  // The same basis again: every row has moved once since it was read.
  pushed = client->PushSparse("emb", keys, grads, &*basis);
  REQUIRE(pushed.ok());
  for (uint64_t tau : pushed->row_taus) REQUIRE(tau == 1);
}

TEST_CASE("a clipped sparse push is scaled by its whole norm on every shard") {
  // Each shard sees only its own rows, so the client must send the norm of
  // the whole push to both; a shard that clipped by its own rows' norm
  // would move them about sqrt(2) times too far.
  Cluster cluster(2);
  auto client = cluster.Connect(0);
  TableConfig config = Sgd(TableConfig::Sparse("emb", 4), 1.0f);
  config.staleness.clip_norm = 1.0f;
  REQUIRE(client->CreateTable(config).ok());
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 1000; ++k) keys.push_back(k * 7919);
  std::vector<float> before(keys.size() * 4);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(before)).ok());
  const std::vector<float> grads(keys.size() * 4, 1.0f);
  auto pushed = client->PushSparse("emb", keys, grads);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
  for (const ShardPushResult& shard : pushed->shards) REQUIRE(shard.touched);
  std::vector<float> after(keys.size() * 4);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(after)).ok());
  const double step = 1.0 / std::sqrt(static_cast<double>(grads.size()));
  for (size_t i = 0; i < after.size(); ++i) {
    REQUIRE(after[i] == Approx(before[i] - step).epsilon(1e-5));
  }
}

TEST_CASE("the client routes by its ownership map; a new epoch is visible") {
  Cluster cluster(2);
  auto client = cluster.Connect(0);
  GrpcClient& grpc = dynamic_cast<GrpcClient&>(*client);
  REQUIRE(grpc.Ownership()->epoch() == 1);
  REQUIRE(*grpc.Ownership() == OwnershipMap::Initial(2));
  REQUIRE(client->CreateTable(Sgd(TableConfig::Sparse("emb", 2), 1.0f)).ok());
  REQUIRE(client->CreateTable(Sgd(TableConfig::Dense("d", 1001), 1.0f)).ok());
  uint64_t key = 1;
  while (grpc.Ownership()->SparseOwnerOf(key) != 0) ++key;
  std::vector<float> row(2), dense(1001);
  REQUIRE(client->PullSparse("emb", {key}, absl::MakeSpan(row)).ok());

  // Epoch 2 moves the key's bucket to shard 1. The shards are still at
  // epoch 1, and every request says the epoch it was routed by, so shard 1
  // refuses the key's pull for its epoch (not for the key): the client did
  // route by the new map. Dense tables are planned again, by epoch 2 too.
  const OwnershipMap two =
      grpc.Ownership()->WithBucketMoved(grpc.Ownership()->BucketOf(key), 1);
  REQUIRE(grpc.AdoptOwnership(two).ok());
  REQUIRE(grpc.Ownership()->epoch() == 2);
  auto refused = client->PullSparse("emb", {key}, absl::MakeSpan(row));
  REQUIRE(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(refused.status().message().find(
              "routed by ownership map epoch 2, but shard 1 is at ownership epoch 1") !=
          std::string::npos);
  REQUIRE(client->PullDense("d", absl::MakeSpan(dense)).status().code() ==
          absl::StatusCode::kFailedPrecondition);

  // Older maps, another map at the same epoch, or another shard count: no.
  auto code = [&](const OwnershipMap& map) {
    return grpc.AdoptOwnership(map).code();
  };
  REQUIRE(code(OwnershipMap::Initial(2)) == absl::StatusCode::kFailedPrecondition);
  const uint32_t other = two.BucketOf(key) == 0 ? 2 : 0;  // on shard 0
  REQUIRE(code(OwnershipMap::Initial(2).WithBucketMoved(other, 1)) ==
          absl::StatusCode::kFailedPrecondition);
  REQUIRE(code(OwnershipMap::Initial(3).WithBucketMoved(0, 1)) ==
          absl::StatusCode::kFailedPrecondition);
  REQUIRE(code(two) == absl::StatusCode::kOk);  // the same map again is fine
}

TEST_CASE("wrong sizes and unknown tables fail before anything is sent") {
  Cluster cluster(1);
  auto client = cluster.Connect(0);
  REQUIRE(client->CreateTable(TableConfig::Dense("w", 8)).ok());
  std::vector<float> wrong(7);
  REQUIRE(client->PullDense("w", absl::MakeSpan(wrong)).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(client->PushDense("w", wrong).status().code() ==
          absl::StatusCode::kInvalidArgument);
  REQUIRE(client->PullDense("missing", absl::MakeSpan(wrong)).status().code() ==
          absl::StatusCode::kNotFound);
  REQUIRE(client->CreateTable(TableConfig::Dense("w", 9)).code() ==
          absl::StatusCode::kAlreadyExists);
}

TEST_CASE("a large sparse push with a NaN or Inf anywhere is refused whole") {
  // 20,000 rows x 16 floats arrive in many HTTP/2 frames, so the shard
  // gathers them and measures max |g| in the copy's loop; the bad value sits
  // in a later frame than the first, and nothing may be applied.
  Cluster cluster(1);
  auto client = cluster.Connect(0);
  constexpr uint32_t kDim = 16;
  REQUIRE(client->CreateTable(Sgd(TableConfig::Sparse("emb", kDim), 1.0f)).ok());
  std::vector<uint64_t> keys(20000);
  std::iota(keys.begin(), keys.end(), uint64_t{1});
  std::vector<float> before(keys.size() * kDim);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(before)).ok());
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(),
                          std::numeric_limits<float>::infinity()}) {
    std::vector<float> grads(keys.size() * kDim, 0.25f);
    grads[grads.size() - 3] = bad;
    auto pushed = client->PushSparse("emb", keys, grads);
    REQUIRE_FALSE(pushed.ok());
    REQUIRE(pushed.status().code() == absl::StatusCode::kInvalidArgument);
    std::vector<float> after(keys.size() * kDim);
    REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(after)).ok());
    REQUIRE(after == before);
  }
  // The same push without the bad value applies.
  const std::vector<float> grads(keys.size() * kDim, 0.25f);
  REQUIRE(client->PushSparse("emb", keys, grads).ok());
  std::vector<float> after(keys.size() * kDim);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(after)).ok());
  REQUIRE(after[0] == before[0] - 0.25f);
}

TEST_CASE("the server maps bad bytes to INVALID_ARGUMENT and changes nothing") {
  Cluster cluster(1);
  auto client = cluster.Connect(0);
  REQUIRE(client->CreateTable(TableConfig::Dense("w", 4)).ok());
  auto channel = *OpenChannel(cluster.addresses[0], ChannelSecurity{});
  auto stub = v1::ParameterServer::NewStub(channel);
  auto push = [&](const std::string& bytes) {
    grpc::ClientContext context;
    v1::PushDenseRequest request;
    request.set_table("w");
    request.set_gradient(bytes);
    v1::PushResponse response;
    return stub->PushDense(&context, request, &response).error_code();
  };
  REQUIRE(push(std::string(7, '\0')) == grpc::StatusCode::INVALID_ARGUMENT);
  const float nan[4] = {0, std::numeric_limits<float>::quiet_NaN(), 0, 0};
  REQUIRE(push(std::string(reinterpret_cast<const char*>(nan), 16)) ==
          grpc::StatusCode::INVALID_ARGUMENT);
  REQUIRE(push(std::string(20, '\0')) == grpc::StatusCode::OUT_OF_RANGE);

  grpc::ClientContext context;
  v1::PullDenseRequest pull;
  pull.set_table("w");
  pull.set_count(uint64_t{1} << 40);
  v1::PullDenseResponse pulled;
  REQUIRE(stub->PullDense(&context, pull, &pulled).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);

  std::vector<float> params(4, 9.0f);
  auto info = client->PullDense("w", absl::MakeSpan(params));
  REQUIRE(info.ok());
  REQUIRE(info->shard_versions[0] == 0);
  REQUIRE(params == std::vector<float>(4, 0.0f));
}

}  // namespace
}  // namespace taups

namespace taups {
namespace {

TEST_CASE("calls retry with backoff while a shard restarts, then re-pull") {
  Cluster cluster(1);
  ClientOptions options;
  options.servers = cluster.addresses;
  options.initial_backoff = absl::Milliseconds(50);
  options.max_attempts = 30;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  const TableConfig config = TableConfig::Dense("w", 16);
  REQUIRE((*client)->CreateTable(config).ok());
  std::vector<float> params(16);
  const std::vector<float> g(16, 1.0f);
  REQUIRE((*client)->PullDense("w", absl::MakeSpan(params)).ok());
  REQUIRE((*client)->PushDense("w", g).ok());
  REQUIRE((*client)->PullDense("w", absl::MakeSpan(params)).ok());  // reads v1

  // The shard goes away; a new incarnation comes back on the same port
  // while the client is retrying.
  const int port = cluster.shards[0]->port();
  cluster.shards[0]->Shutdown();
  cluster.shards[0].reset();
  absl::StatusOr<std::unique_ptr<ShardServer>> restarted;
  std::thread restarter([&] {  // no REQUIRE here: Catch2 is single-threaded
    absl::SleepFor(absl::Milliseconds(400));
    ShardServerOptions shard;
    shard.listen_address = absl::StrCat("127.0.0.1:", port);
    shard.stats_interval = absl::ZeroDuration();
    restarted = ShardServer::Start(shard);
  });
  const absl::Time start = absl::Now();
  REQUIRE((*client)->CreateTable(config).ok());  // retried until it is back
  restarter.join();
  REQUIRE(restarted.ok());
  REQUIRE(absl::Now() - start >= absl::Milliseconds(300));

  // The client's last pull read version 1 of the old incarnation; the new
  // shard is at version 0, so the push is dropped (accepted = false, not an
  // error the worker would stop on) until the worker re-pulls.
  auto dropped = (*client)->PushDense("w", g);
  REQUIRE(dropped.ok());
  REQUIRE(!dropped->shards[0].accepted);
  REQUIRE(dropped->shards[0].reject_reason.find("restarted from a checkpoint") !=
          std::string::npos);
  REQUIRE((*client)->PullDense("w", absl::MakeSpan(params)).ok());
  auto pushed = (*client)->PushDense("w", g);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->shards[0].new_version == 1);
}

TEST_CASE("a call to a shard that never comes back fails with UNAVAILABLE") {
  Cluster cluster(1);
  ClientOptions options;
  options.servers = cluster.addresses;
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(20);
  options.max_attempts = 3;
  options.retry_budget = absl::ZeroDuration();
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  cluster.shards[0]->Shutdown();
  REQUIRE((*client)->CreateTable(TableConfig::Dense("w", 4)).code() ==
          absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace taups

namespace taups {
namespace {

TEST_CASE("sync over gRPC: a pull for the next step waits for every worker") {
  Cluster cluster(2);
  auto a = cluster.Connect(0);
  auto b = cluster.Connect(1);
  TableConfig config = Sgd(TableConfig::Dense("w", 10), 1.0f);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 2;
  REQUIRE(a->CreateTable(config).ok());
  REQUIRE(b->CreateTable(config).ok());
  std::vector<float> pa(10), pb(10);
  REQUIRE(a->PullDense("w", absl::MakeSpan(pa)).ok());
  REQUIRE(b->PullDense("w", absl::MakeSpan(pb)).ok());
  REQUIRE(a->PushDense("w", std::vector<float>(10, 2.0f)).ok());
  a->Clock();
  REQUIRE(a->clock() == 1);
  auto waiting = a->PullDenseAsync("w", absl::MakeSpan(pa));
  REQUIRE(waiting.wait_for(std::chrono::milliseconds(300)) ==
          std::future_status::timeout);
  REQUIRE(b->PushDense("w", std::vector<float>(10, 4.0f)).ok());
  b->Clock();
  auto info = waiting.get();
  REQUIRE(info.ok());
  REQUIRE(info->elapsed >= absl::Milliseconds(250));
  REQUIRE(pa == std::vector<float>(10, -3.0f));  // mean of 2 and 4
  REQUIRE(info->shard_versions == std::vector<uint64_t>{1, 1});

  auto stats = a->Stats("w");
  REQUIRE(stats.ok());
  for (const TableShardStats& s : *stats) {
    REQUIRE(s.steps_closed == 1);
    REQUIRE(s.last_straggler == 1);  // worker 1 arrived last
    REQUIRE(s.step_wait_max_s >= 0.25);
    REQUIRE(s.live_workers == 2);
  }
}

TEST_CASE("a worker whose heartbeats stop is declared dead and sync goes on") {
  Cluster cluster(1);
  ClientOptions options;
  options.servers = cluster.addresses;
  options.lease = absl::Milliseconds(300);
  options.worker_id = 0;
  auto a = Client::Connect(options);
  REQUIRE(a.ok());
  options.worker_id = 1;
  auto b = Client::Connect(options);
  REQUIRE(b.ok());
  TableConfig config = Sgd(TableConfig::Dense("w", 4), 1.0f);
  config.consistency.kind = ConsistencyKind::kSync;
  config.consistency.num_workers = 2;
  REQUIRE((*a)->CreateTable(config).ok());
  std::vector<float> p(4);
  REQUIRE((*a)->PullDense("w", absl::MakeSpan(p)).ok());
  REQUIRE((*a)->PushDense("w", std::vector<float>(4, 1.0f)).ok());
  (*a)->Clock();
  // Worker 1 dies without pushing: its heartbeats stop. (Destroying the
  // client would leave instead, see client_server_membership_test.)
  dynamic_cast<GrpcClient&>(**b).PauseHeartbeatsForTest(true);
  const absl::Time start = absl::Now();
  REQUIRE((*a)->PullDense("w", absl::MakeSpan(p)).ok());  // not stuck forever
  REQUIRE(absl::Now() - start < absl::Seconds(5));
  REQUIRE(p == std::vector<float>(4, -1.0f));
  auto stats = (*a)->Stats("w");
  REQUIRE(stats.ok());
  REQUIRE((*stats)[0].dead_workers == 1);
  REQUIRE((*stats)[0].lease_expirations == 1);
}

}  // namespace
}  // namespace taups
