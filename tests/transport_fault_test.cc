// Exactly-once through a misbehaving network: the real client core
// (ClientCore) pushes to two real shards (ParameterStore behind ShardCalls)
// through FaultInjectingTransport over InProcessTransport, which duplicates
// calls, holds them back so they overtake each other (slices of one push
// arrive in any order, a copy before its original) and loses answers (so
// the client resends pushes with the same seq). Afterwards each push must
// have been applied exactly once: the values equal the sum of the
// gradients, computed here on the side, and each shard's version equals the
// number of pushes it accepted.
//
// The gradients are small integers and the learning rate is 1, so every
// partial sum is exact in float and any order of application gives the same
// bits: a value off by one gradient is a push applied twice or never. The
// same gradients also go, fp16-encoded, to a second dense table ("wc"):
// small integers are exact in fp16, so it must end equal to the first.
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "worker/src/client_core.h"
#include "worker/src/fault_injecting_transport.h"
#include "worker/src/inprocess_transport.h"

namespace taups {
namespace {

constexpr uint32_t kShards = 2;
constexpr uint32_t kWorkers = 4;
constexpr int kPushesPerWorker = 12;
// 2 x 2500 floats with 4 KiB slices: three slices per shard and push.
constexpr uint64_t kDenseSize = 5000;
constexpr uint32_t kDim = 4;
constexpr uint64_t kKeySpace = 40;
constexpr int kKeysPerPush = 12;  // drawn with repeats: the client sums them

// Two shards in this process, each with its own store and incarnation.
struct Shards {
  Shards() {
    for (uint32_t s = 0; s < kShards; ++s) {
      stores.push_back(std::make_unique<ParameterStore>(s, kShards));
      calls.push_back(std::make_unique<ShardCalls>(stores.back().get(), 100 + s));
      raw.push_back(calls.back().get());
    }
  }
  std::vector<std::unique_ptr<ParameterStore>> stores;
  std::vector<std::unique_ptr<ShardCalls>> calls;
  std::vector<ShardCalls*> raw;
};

ClientOptions Options(uint32_t worker, bool register_worker) {
  ClientOptions options;
  options.worker_id = worker;
  options.slice_bytes = 4096;
  options.call_timeout = absl::Seconds(10);
  // Enough attempts that a call whose answer is lost again and again still
  // gets through (0.25^40 per call).
  options.max_attempts = 40;
  options.retry_budget = absl::ZeroDuration();
  options.initial_backoff = absl::Microseconds(200);
  options.max_backoff = absl::Milliseconds(2);
  options.register_worker = register_worker;
  return options;
}

std::unique_ptr<ClientCore> Open(const ClientOptions& options,
                                 std::vector<std::unique_ptr<ShardTransport>> t) {
  auto client = ClientCore::Open(options, std::move(t));
  REQUIRE(client.ok());
  return std::move(*client);
}

TableConfig WithPlainSgd(TableConfig config) {
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 1.0f;
  config.consistency.kind = ConsistencyKind::kAsync;
  return config;
}

// One worker's pushes, drawn from (seed, worker): what it sends, and, kept
// beside it, what the shards must end up with.
struct WorkerPlan {
  std::vector<std::vector<float>> dense;  // per push
  std::vector<std::vector<uint64_t>> keys;
  std::vector<std::vector<float>> rows;   // keys.size() * kDim per push
};

WorkerPlan PlanFor(uint64_t seed, uint32_t worker) {
  std::mt19937_64 rng(seed * 1000 + worker);
  std::uniform_int_distribution<int> value(-3, 3);
  std::uniform_int_distribution<uint64_t> key(0, kKeySpace - 1);
  WorkerPlan plan;
  for (int p = 0; p < kPushesPerWorker; ++p) {
    std::vector<float>& g = plan.dense.emplace_back(kDenseSize);
    for (float& x : g) x = static_cast<float>(value(rng));
    std::vector<uint64_t>& k = plan.keys.emplace_back(kKeysPerPush);
    for (uint64_t& x : k) x = key(rng);
    std::vector<float>& r = plan.rows.emplace_back(kKeysPerPush * kDim);
    for (float& x : r) x = static_cast<float>(value(rng));
  }
  return plan;
}

// What one worker saw come back.
struct WorkerTally {
  std::vector<uint64_t> dense_accepted = std::vector<uint64_t>(kShards, 0);
  std::vector<uint64_t> sparse_accepted = std::vector<uint64_t>(kShards, 0);
  std::vector<uint64_t> encoded_accepted = std::vector<uint64_t>(kShards, 0);
  uint64_t duplicates_answered = 0;
  std::vector<std::string> errors;
};

void RunWorker(Client& client, const WorkerPlan& plan, WorkerTally* tally) {
  std::vector<float> params(kDenseSize);
  std::vector<float> rows(kKeysPerPush * kDim);
  const auto note = [tally](const PushResult& result,
                            std::vector<uint64_t>& accepted) {
    for (uint32_t s = 0; s < kShards; ++s) {
      const ShardPushResult& r = result.shards[s];
      if (!r.touched) continue;
      if (r.accepted) {
        ++accepted[s];
      } else {
        tally->errors.push_back(absl::StrCat("shard ", s, " refused: ",
                                             r.reject_reason));
      }
      tally->duplicates_answered += r.duplicate;
    }
  };
  for (int p = 0; p < kPushesPerWorker; ++p) {
    absl::StatusOr<PullInfo> pulled = client.PullDense("w", absl::MakeSpan(params));
    if (!pulled.ok()) tally->errors.push_back(pulled.status().ToString());
    absl::StatusOr<PushResult> pushed = client.PushDense("w", plan.dense[p]);
    if (pushed.ok()) {
      note(*pushed, tally->dense_accepted);
    } else {
      tally->errors.push_back(pushed.status().ToString());
    }
    pushed = client.PushDense("wc", plan.dense[p]);
    if (pushed.ok()) {
      note(*pushed, tally->encoded_accepted);
    } else {
      tally->errors.push_back(pushed.status().ToString());
    }
    pulled = client.PullSparse("emb", plan.keys[p], absl::MakeSpan(rows));
    if (!pulled.ok()) tally->errors.push_back(pulled.status().ToString());
    pushed = client.PushSparse("emb", plan.keys[p], plan.rows[p]);
    if (pushed.ok()) {
      note(*pushed, tally->sparse_accepted);
    } else {
      tally->errors.push_back(pushed.status().ToString());
    }
    client.Clock();
  }
}

TEST_CASE("every push duplicated, reordered and resent is applied exactly once",
          "[transport]") {
  uint64_t duplicates_answered = 0;
  FaultCounts faults_seen;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    CAPTURE(seed);
    Shards shards;
    // A clean client creates the tables and reads the result at the end.
    auto admin = Open(Options(1000, false), InProcessTransports(shards.raw));
    REQUIRE(admin->CreateTable(WithPlainSgd(TableConfig::Dense("w", kDenseSize))).ok());
    REQUIRE(admin->CreateTable(WithPlainSgd(TableConfig::Dense("wc", kDenseSize))).ok());
    REQUIRE(admin->CreateTable(WithPlainSgd(TableConfig::Sparse("emb", kDim))).ok());
    CompressionConfig fp16;
    fp16.push.codec = CodecKind::kFp16;

    std::vector<WorkerPlan> plans;
    std::vector<WorkerTally> tallies(kWorkers);
    std::vector<FaultInjectingTransport*> injectors;
    std::vector<std::unique_ptr<ClientCore>> workers;
    for (uint32_t w = 0; w < kWorkers; ++w) {
      plans.push_back(PlanFor(seed, w));
      std::vector<std::unique_ptr<ShardTransport>> transports;
      for (auto& inner : InProcessTransports(shards.raw)) {
        TransportFaults faults;
        faults.seed = seed * 7919 + w * 31 + transports.size();
        faults.duplicate = 0.5;
        faults.delay = 0.5;
        faults.lose_answer = 0.25;
        auto injector =
            std::make_unique<FaultInjectingTransport>(std::move(inner), faults);
        injectors.push_back(injector.get());
        transports.push_back(std::move(injector));
      }
      workers.push_back(Open(Options(w, true), std::move(transports)));
      REQUIRE(workers.back()->SetCompression("wc", fp16).ok());
    }
    std::vector<std::thread> threads;
    for (uint32_t w = 0; w < kWorkers; ++w) {
      threads.emplace_back(
          [&, w] { RunWorker(*workers[w], plans[w], &tallies[w]); });
    }
    for (std::thread& t : threads) t.join();
    for (const FaultInjectingTransport* injector : injectors) {
      const FaultCounts c = injector->counts();
      faults_seen.calls += c.calls;
      faults_seen.duplicated += c.duplicated;
      faults_seen.delayed += c.delayed;
      faults_seen.answers_lost += c.answers_lost;
    }
    workers.clear();  // waits for every copy still on its way

    // The expected state, summed here: every push applied once.
    std::vector<float> dense_expected(kDenseSize, 0.0f);
    std::vector<std::vector<float>> rows_expected(
        kKeySpace, std::vector<float>(kDim, 0.0f));
    std::vector<uint64_t> dense_accepted(kShards, 0), sparse_accepted(kShards, 0),
        encoded_accepted(kShards, 0);
    for (uint32_t w = 0; w < kWorkers; ++w) {
      CAPTURE(w);
      INFO(absl::StrJoin(tallies[w].errors, "; "));
      CHECK(tallies[w].errors.empty());
      for (uint32_t s = 0; s < kShards; ++s) {
        dense_accepted[s] += tallies[w].dense_accepted[s];
        sparse_accepted[s] += tallies[w].sparse_accepted[s];
        encoded_accepted[s] += tallies[w].encoded_accepted[s];
      }
      duplicates_answered += tallies[w].duplicates_answered;
      for (int p = 0; p < kPushesPerWorker; ++p) {
        for (uint64_t i = 0; i < kDenseSize; ++i) {
          dense_expected[i] -= plans[w].dense[p][i];
        }
        for (int k = 0; k < kKeysPerPush; ++k) {
          for (uint32_t d = 0; d < kDim; ++d) {
            rows_expected[plans[w].keys[p][k]][d] -= plans[w].rows[p][k * kDim + d];
          }
        }
      }
    }
    // Every push reached both shards (dense) and was accepted once.
    for (uint32_t s = 0; s < kShards; ++s) {
      CHECK(dense_accepted[s] == kWorkers * kPushesPerWorker);
      CHECK(encoded_accepted[s] == kWorkers * kPushesPerWorker);
    }

    std::vector<float> dense(kDenseSize);
    absl::StatusOr<PullInfo> pulled = admin->PullDense("w", absl::MakeSpan(dense));
    REQUIRE(pulled.ok());
    for (uint32_t s = 0; s < kShards; ++s) {
      CHECK(pulled->shard_versions[s] == dense_accepted[s]);
    }
    uint64_t dense_wrong = 0;
    for (uint64_t i = 0; i < kDenseSize; ++i) dense_wrong += dense[i] != dense_expected[i];
    CHECK(dense_wrong == 0);
    pulled = admin->PullDense("wc", absl::MakeSpan(dense));
    REQUIRE(pulled.ok());
    for (uint32_t s = 0; s < kShards; ++s) {
      CHECK(pulled->shard_versions[s] == encoded_accepted[s]);
    }
    dense_wrong = 0;
    for (uint64_t i = 0; i < kDenseSize; ++i) dense_wrong += dense[i] != dense_expected[i];
    CHECK(dense_wrong == 0);

    std::vector<uint64_t> all_keys(kKeySpace);
    for (uint64_t k = 0; k < kKeySpace; ++k) all_keys[k] = k;
    std::vector<float> rows(kKeySpace * kDim);
    pulled = admin->PullSparse("emb", all_keys, absl::MakeSpan(rows));
    REQUIRE(pulled.ok());
    for (uint32_t s = 0; s < kShards; ++s) {
      CHECK(pulled->shard_versions[s] == sparse_accepted[s]);
    }
    uint64_t rows_wrong = 0;
    for (uint64_t k = 0; k < kKeySpace; ++k) {
      for (uint32_t d = 0; d < kDim; ++d) {
        rows_wrong += rows[k * kDim + d] != rows_expected[k][d];
      }
    }
    CHECK(rows_wrong == 0);
  }
  // The faults really happened, and shards answered resent pushes as
  // duplicates.
  INFO("calls " << faults_seen.calls << ", duplicated " << faults_seen.duplicated
                << ", delayed " << faults_seen.delayed << ", answers lost "
                << faults_seen.answers_lost << ", duplicate answers "
                << duplicates_answered);
  CHECK(faults_seen.duplicated > faults_seen.calls / 4);
  CHECK(faults_seen.delayed > faults_seen.calls / 4);
  CHECK(faults_seen.answers_lost > faults_seen.calls / 8);
  CHECK(duplicates_answered > 0);
}

}  // namespace
}  // namespace taups
