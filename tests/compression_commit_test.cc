// The worker's error-feedback residual and accumulation buffer change only by
// what the shards accepted, through the client library and real shards over
// gRPC: a push the worker cannot encode, one a shard refuses as stale, one a
// shard answers INVALID_ARGUMENT, leaves them as they were (per shard: the
// parts of a shard that accepted commit), and an accumulated sum whose push
// failed reaches the shards with the next push.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <future>

#include "common/codec.h"
#include "common/error_feedback.h"
#include "common/shard_map.h"
#include "tests/dense_push_fixtures.h"
#include "tests/inproc_cluster.h"
#include "worker/src/grpc_client.h"

namespace taups {
namespace {

constexpr float kLr = kSgdRate;

// A table that refuses every push with tau > 0.
TableConfig StaleRefusingSgd(const std::string& name, uint64_t n) {
  TableConfig config = DenseSgd(name, n);
  config.staleness.reject_above_tau_max = true;
  config.staleness.tau_max = 0;
  return config;
}

std::vector<float> Residual(Client& client, const std::string& table) {
  return static_cast<GrpcClient&>(client).Compression(table)->residual();
}

bool SameBytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), 4 * a.size()) == 0;
}

CompressionConfig Int8WithFeedback() {
  CompressionConfig config;
  config.push.codec = CodecKind::kInt8;  // nearest rounding: no seeds
  config.push.bucket_size = 64;
  config.error_feedback = true;
  return config;
}

// The encoder's math for pushes travelling one slice per shard (the
// default 1 MiB slices): ErrorFeedback over the ranges of `shards`.
void OracleEncode(ErrorFeedback& oracle, const std::vector<float>& g,
                  uint32_t num_shards, std::initializer_list<uint32_t> shards) {
  for (uint32_t s : shards) {
    const Range r = DenseShardRange(g.size(), num_shards, s);
    std::string block;
    REQUIRE(oracle.EncodeRange(absl::MakeConstSpan(g).subspan(r.begin, r.size()),
                               r.begin, Int8WithFeedback().push, &block)
                .ok());
  }
}

TEST_CASE("a push the worker cannot encode leaves the residual as it was") {
  InProcessCluster cluster(2);
  // 4 KiB slices: each shard's half travels in several slices.
  auto client = cluster.Connect(0, /*slice_bytes=*/4096);
  const uint64_t n = 6000;
  REQUIRE(client->CreateTable(DenseSgd("w", n)).ok());
  REQUIRE(client->SetCompression("w", Int8WithFeedback()).ok());
  REQUIRE(client->PushDense("w", RandomGradient(n, 1)).ok());
  const std::vector<float> before = Residual(*client, "w");
  REQUIRE(std::any_of(before.begin(), before.end(),
                      [](float r) { return r != 0.0f; }));
  std::vector<float> params_before(n), params_after(n);
  REQUIRE(client->PullDense("w", absl::MakeSpan(params_before)).ok());

  std::vector<float> g = RandomGradient(n, 2);
  g[n - 1] = NAN;  // the last slice: every earlier slice encodes first
  auto pushed = client->PushDense("w", g);
  CHECK(absl::IsInvalidArgument(pushed.status()));
  CHECK(SameBytes(Residual(*client, "w"), before));
  auto info = client->PullDense("w", absl::MakeSpan(params_after));
  REQUIRE(info.ok());
  CHECK(info->shard_versions == std::vector<uint64_t>{1, 1});
  CHECK(params_after == params_before);

  // The table's turn was given back: the next push goes out and commits.
  g[n - 1] = 0.0f;
  auto next = client->PushDense("w", g);
  REQUIRE(next.ok());
  CHECK(next->all_accepted());
  CHECK_FALSE(SameBytes(Residual(*client, "w"), before));
}

TEST_CASE("a push a shard refuses as stale keeps that shard's residual") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 5003;
  REQUIRE(client->CreateTable(StaleRefusingSgd("w", n)).ok());
  REQUIRE(client->SetCompression("w", Int8WithFeedback()).ok());
  ErrorFeedback oracle(n);

  const std::vector<float> g1 = RandomGradient(n, 11);
  auto first = client->PushDense("w", g1);
  REQUIRE(first.ok());
  REQUIRE(first->all_accepted());
  OracleEncode(oracle, g1, 2, {0, 1});
  const std::vector<float> after_first = Residual(*client, "w");
  CHECK(SameBytes(after_first, std::vector<float>(oracle.residual().begin(),
                                                  oracle.residual().end())));

  // Both shards are at version 1; a basis of version 0 is stale on both.
  PullInfo stale;
  stale.shard_versions = {0, 0};
  const std::vector<float> g2 = RandomGradient(n, 12);
  auto refused = client->PushDense("w", g2, &stale);
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->shards[0].accepted);
  CHECK_FALSE(refused->shards[1].accepted);
  CHECK(SameBytes(Residual(*client, "w"), after_first));

  // Stale on shard 1 only: shard 0 takes its part and its residual range
  // commits; shard 1's stays as it was.
  PullInfo half;
  half.shard_versions = {1, 0};
  auto partial = client->PushDense("w", g2, &half);
  REQUIRE(partial.ok());
  CHECK(partial->shards[0].accepted);
  CHECK_FALSE(partial->shards[1].accepted);
  OracleEncode(oracle, g2, 2, {0});
  std::vector<float> expected(oracle.residual().begin(), oracle.residual().end());
  CHECK(SameBytes(Residual(*client, "w"), expected));
  const Range second = DenseShardRange(n, 2, 1);
  CHECK(std::memcmp(Residual(*client, "w").data() + second.begin,
                    after_first.data() + second.begin, 4 * second.size()) == 0);

  // An accepted push carries shard 1's kept residual.
  PullInfo fresh;
  fresh.shard_versions = {2, 1};
  const std::vector<float> g3 = RandomGradient(n, 13);
  auto accepted = client->PushDense("w", g3, &fresh);
  REQUIRE(accepted.ok());
  REQUIRE(accepted->all_accepted());
  OracleEncode(oracle, g3, 2, {0, 1});
  expected.assign(oracle.residual().begin(), oracle.residual().end());
  CHECK(SameBytes(Residual(*client, "w"), expected));
}

TEST_CASE("a push a shard answers INVALID_ARGUMENT keeps that shard's residual") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 4000;
  // A rate of 4: 4 x 1e38 is not a float.
  REQUIRE(client->CreateTable(DenseSgd("w", n, 4.0f)).ok());
  REQUIRE(client->SetCompression("w", Int8WithFeedback()).ok());
  ErrorFeedback oracle(n);
  const std::vector<float> g1 = RandomGradient(n, 21);
  REQUIRE(client->PushDense("w", g1).ok());
  OracleEncode(oracle, g1, 2, {0, 1});
  const std::vector<float> before = Residual(*client, "w");

  const Range second = DenseShardRange(n, 2, 1);
  std::vector<float> huge = RandomGradient(n, 22);
  huge[0] = 1e38f;  // both shards refuse: their updates would overflow
  huge[second.begin] = 1e38f;
  auto refused = client->PushDense("w", huge);
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK(SameBytes(Residual(*client, "w"), before));

  // Only shard 1 refuses: shard 0's range commits, shard 1's does not.
  huge[0] = 0.0f;
  auto partial = client->PushDense("w", huge);
  CHECK(absl::IsInvalidArgument(partial.status()));
  OracleEncode(oracle, huge, 2, {0});
  const std::vector<float> expected(oracle.residual().begin(),
                                    oracle.residual().end());
  CHECK(SameBytes(Residual(*client, "w"), expected));
  std::vector<float> params(n);
  auto info = client->PullDense("w", absl::MakeSpan(params));
  REQUIRE(info.ok());
  CHECK(info->shard_versions == std::vector<uint64_t>{2, 1});
}

TEST_CASE("an accumulated sum whose push failed goes out with the next push") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 1000;
  REQUIRE(client->CreateTable(StaleRefusingSgd("acc", n)).ok());
  CompressionConfig compression;
  compression.accumulate_steps = 2;
  REQUIRE(client->SetCompression("acc", compression).ok());
  std::vector<float> zero(n, 0.0f);
  // Version 1 on both shards (the sum of two zero gradients).
  REQUIRE(client->PushDense("acc", zero).ok());
  REQUIRE(client->PushDense("acc", zero).ok());

  std::vector<std::vector<float>> g;
  for (int i = 0; i < 4; ++i) g.push_back(RandomGradient(n, 30 + i));
  PullInfo stale;
  stale.shard_versions = {0, 0};
  auto deferred = client->PushDense("acc", g[0], &stale);
  REQUIRE(deferred.ok());
  CHECK(deferred->deferred);
  auto refused = client->PushDense("acc", g[1], &stale);
  REQUIRE(refused.ok());
  REQUIRE_FALSE(refused->deferred);
  CHECK_FALSE(refused->shards[0].accepted);
  CHECK_FALSE(refused->shards[1].accepted);

  // The next group (two more calls, as before) carries the refused sum.
  PullInfo fresh;
  fresh.shard_versions = {1, 1};
  REQUIRE(client->PushDense("acc", g[2], &fresh).ok());
  auto accepted = client->PushDense("acc", g[3], &fresh);
  REQUIRE(accepted.ok());
  REQUIRE(accepted->all_accepted());
  std::vector<float> params(n);
  auto info = client->PullDense("acc", absl::MakeSpan(params));
  REQUIRE(info.ok());
  CHECK(info->shard_versions == std::vector<uint64_t>{2, 2});
  for (uint64_t i = 0; i < n; ++i) {
    // The buffer's order: the sum given back, then the new gradients.
    const float refused_sum = (0.0f + g[0][i]) + g[1][i];
    const float sum = ((0.0f + refused_sum) + g[2][i]) + g[3][i];
    REQUIRE(params[i] == -kLr * sum);
  }

  // A sum the shards refuse as malformed (a NaN) is dropped, not kept to
  // poison every later push.
  // (Shard 1 takes its finite half; shard 0 refuses its half.)
  std::vector<float> bad = g[0];
  bad[3] = NAN;
  REQUIRE(client->PushDense("acc", bad).ok());  // deferred
  CHECK(absl::IsInvalidArgument(client->PushDense("acc", zero).status()));
  REQUIRE(client->PullDense("acc", absl::MakeSpan(params)).ok());
  const std::vector<float> before_clean = params;
  REQUIRE(client->PushDense("acc", g[1]).ok());
  auto clean = client->PushDense("acc", zero);
  REQUIRE(clean.ok());
  CHECK(clean->all_accepted());
  REQUIRE(client->PullDense("acc", absl::MakeSpan(params)).ok());
  const Range first = DenseShardRange(n, 2, 0);
  for (uint64_t i = first.begin; i < first.end; ++i) {
    REQUIRE(params[i] == before_clean[i] - kLr * (0.0f + g[1][i]));
  }
}

TEST_CASE("pushes of an error-feedback table in flight commit in order") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 50003;
  REQUIRE(client->CreateTable(DenseSgd("w", n)).ok());
  REQUIRE(client->SetCompression("w", Int8WithFeedback()).ok());
  std::vector<std::vector<float>> g;
  for (int i = 0; i < 6; ++i) g.push_back(RandomGradient(n, 40 + i));
  // Each call encodes once the previous push's answers are in, adding the
  // residual it left.
  std::vector<std::future<absl::StatusOr<PushResult>>> futures;
  for (const std::vector<float>& gradient : g) {
    futures.push_back(client->PushDenseAsync("w", gradient));
  }
  for (auto& future : futures) {
    absl::StatusOr<PushResult> result = future.get();
    REQUIRE(result.ok());
    CHECK(result->all_accepted());
  }
  ErrorFeedback oracle(n);
  for (const std::vector<float>& gradient : g) {
    OracleEncode(oracle, gradient, 2, {0, 1});
  }
  CHECK(SameBytes(Residual(*client, "w"),
                  std::vector<float>(oracle.residual().begin(),
                                     oracle.residual().end())));
}

}  // namespace
}  // namespace taups
