// The whole system as a user runs it: 2 ps_server processes and 2 ps_worker
// processes on 127.0.0.1, training real models (asynchronously, and under
// sync with and without the DLRM's embedding prefetch).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "taups/client.h"
#include "tests/process_harness.h"
#include "tests/test_skip.h"
#include "worker/trainer/ctr_schema.h"
#include "worker/trainer/ctr_trainer.h"

namespace taups::testing {
namespace {

constexpr char kFashionMnist[] = "/usr/share/datasets/fashion-mnist";

// The MLP cases need Debian's dataset-fashion-mnist; without it they skip
// (their CTest entry is cluster_training_test_dataset).
#define REQUIRE_FASHION_MNIST()                                              \
  if (!std::filesystem::exists(                                              \
          absl::StrCat(kFashionMnist, "/train-images-idx3-ubyte.gz"))) {     \
    TAUPS_SKIP(kFashionMnist << " not present (install dataset-fashion-mnist)"); \
  }

TEST_CASE("two shards, two async workers train the Fashion-MNIST MLP to 80%",
          "[dataset]") {
  REQUIRE_FASHION_MNIST();
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  const auto runs = RunWorkers(dir, shards, 2,
                               {"--model=mlp", "--steps=600", "--batch_size=64",
                                "--log_every=200", "--seed=7"});
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const auto accuracy = JsonNumber(run.json, "test_accuracy");
    REQUIRE(accuracy.has_value());
    CHECK(*accuracy >= 0.80);
    // Asynchronous workers see each other's updates: over 600 steps some of
    // a worker's pushes met versions the other worker had added since its
    // pull, and the shards said so (tau > 0).
    CHECK(JsonNumber(run.json, "tau_max") >= 1.0);
    CHECK(JsonNumber(run.json, "tau_mean") > 0.0);
  }
  for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
}

TEST_CASE("real processes train with int2 gradients and error feedback",
          "[dataset]") {
  REQUIRE_FASHION_MNIST();
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  const auto runs = RunWorkers(
      dir, shards, 2,
      {"--model=mlp", "--steps=600", "--batch_size=64", "--log_every=200",
       "--seed=7", "--push_codec=int2", "--error_feedback", "--pull_codec=bf16"});
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    CHECK(*JsonNumber(run.json, "test_accuracy") >= 0.78);
    // 2 bits per value plus a scale per 512: about 1/16 of float32.
    const double raw = *JsonNumber(run.json, "push_raw_bytes");
    const double wire = *JsonNumber(run.json, "push_wire_bytes");
    CHECK(raw == 600.0 * 101770 * 4);
    CHECK(wire / raw < 0.07);
  }
  for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
}

TEST_CASE("sync across real processes: one model, no staleness, straggler named",
          "[dataset]") {
  REQUIRE_FASHION_MNIST();
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2, {"--stats_interval_s=1"});
  const auto runs = RunWorkers(
      dir, shards, 2,
      {"--model=mlp", "--steps=250", "--log_every=50", "--seed=3",
       "--consistency=sync"},
      {{}, {"--slowdown=3"}});
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    REQUIRE(JsonNumber(run.json, "tau_max") == 0.0);
    CHECK(*JsonNumber(run.json, "test_accuracy") >= 0.78);
  }
  // Both workers evaluated the same parameters.
  REQUIRE(JsonNumber(runs[0].json, "test_accuracy") ==
          JsonNumber(runs[1].json, "test_accuracy"));
  // The fast worker waited for the slow one; the slow one hardly waited.
  REQUIRE(*JsonNumber(runs[0].json, "pull_wait_ms") >
          2 * *JsonNumber(runs[1].json, "pull_wait_ms"));
  for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
  const std::string log = shards[0].process->Output();
  INFO(log);
  REQUIRE(log.find("sync version=250") != std::string::npos);
  REQUIRE(log.find("straggler=worker1") != std::string::npos);
}

// The values of `key` inside the summary's "evals" array, in order.
std::vector<double> EvalValues(const std::string& json, const std::string& key) {
  std::vector<double> values;
  size_t at = json.find("\"evals\":[");
  const std::string needle = "\"" + key + "\":";
  while (at != std::string::npos &&
         (at = json.find(needle, at)) != std::string::npos) {
    at += needle.size();
    values.push_back(std::stod(json.substr(at, 32)));
  }
  return values;
}

// The number after `key` (e.g. " rows=") in the last line of `log` that
// contains `marker`; nullopt when there is none.
std::optional<double> LastNumberAfter(const std::string& log,
                                      const std::string& marker,
                                      const std::string& key) {
  const size_t line_at = log.rfind(marker);
  if (line_at == std::string::npos) return std::nullopt;
  const size_t end = log.find('\n', line_at);
  const std::string line = log.substr(line_at, end - line_at);
  const size_t at = line.find(key);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(line.substr(at + key.size()));
}

TEST_CASE("two shards, two async workers train the DLRM CTR model") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  const auto runs = RunWorkers(
      dir, shards, 2,
      {"--model=ctr", "--steps=200", "--eval_every=100", "--eval_examples=5000",
       "--log_every=100", "--seed=4", "--prefetch=true"});
  for (const WorkerRun& run : runs) {
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
    const auto excess = JsonNumber(run.json, "excess_logloss");
    const auto auc = JsonNumber(run.json, "auc");
    const auto planted = JsonNumber(run.json, "planted_logloss");
    const auto constant = JsonNumber(run.json, "constant_logloss");
    REQUIRE(excess.has_value());
    REQUIRE(auc.has_value());
    // The planted model is far better than a constant (log-loss 0.435 vs
    // 0.560); training closes part of the gap. Measured over 11 runs (22
    // worker evaluations, with and without the default warm-up): AUC
    // 0.704-0.712 at step 100 and 0.717-0.729 at step 200 (planted 0.81), a
    // rise in every run. The log-loss of a snapshot taken while the other
    // worker keeps pushing is far noisier: excess 0.063-0.085 at step 200,
    // once 0.113, and in 2 of 22 it fell by less than 0.003 from step 100 or
    // rose (the best constant's excess is 0.125). One clean-clone CI run
    // (2026-12-01) saw a worker at 0.121 after step 100 and 0.137 after step
    // 200 with its AUC at 0.711 and 0.718, as in every other run; 20 local
    // runs then gave 0.066-0.096 at step 200. So the test requires that the
    // model ranks (AUC well above a stalled model's 0.64) and improves its
    // ranking, and that the better of its two snapshots beats the best
    // constant's log-loss. A run caught in the async DLRM's early stall
    // (AUC about 0.655 after 200 steps) fails the AUC bound, and should:
    // the stall is seen with 16 workers (2 of 5 runs of one binary and
    // seed), not at 2 (docs/BENCHMARKS.md, "The 16-worker DLRM's AUC of
    // 0.655").
    CHECK(*planted < *constant - 0.08);
    CHECK(*auc > 0.70);
    // An evaluation at steps 100 and 200; AUC rises between.
    const std::vector<double> steps = EvalValues(run.json, "step");
    const std::vector<double> excesses = EvalValues(run.json, "excess_logloss");
    const std::vector<double> aucs = EvalValues(run.json, "auc");
    REQUIRE(steps == std::vector<double>{100, 200});
    REQUIRE(excesses.size() == 2);
    REQUIRE(aucs.size() == 2);
    CHECK(aucs[1] > aucs[0] + 0.002);
    CHECK(excesses[1] == Approx(*excess));
    CHECK(std::min(excesses[0], excesses[1]) < *constant - *planted);
    CHECK(JsonNumber(run.json, "tau_max") >= 1.0);  // async: the other's pushes
    // It learned with the embedding rows prefetched (--prefetch).
    CHECK(run.output.find("embedding prefetch with the step before (async)") !=
          std::string::npos);
  }
  for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
  // Every step of each worker pushes embedding rows to both shards (a batch
  // touches thousands of ids), and async applies each push: 2 x 200 versions
  // of the one shared table on each shard (the stats line at shutdown).
  for (Shard& shard : shards) {
    const std::string log = shard.process->Output();
    INFO(log);
    const std::string marker = "table=ctr_embeddings async";
    CHECK(LastNumberAfter(log, marker, " version=") == 400.0);
    CHECK(LastNumberAfter(log, marker, " pushes=") == 400.0);
  }
}

TEST_CASE("ps_worker's --sparse_* flags bound the DLRM's embedding table") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  // 60 steps x 256 examples x 26 fields touch far more than 2 x 3000 ids.
  const auto runs = RunWorkers(
      dir, shards, 1,
      {"--model=ctr", "--steps=60", "--eval_examples=2000", "--log_every=0",
       "--seed=5", "--sparse_max_rows=3000", "--sparse_eviction=lfu"});
  REQUIRE(runs.size() == 1);
  INFO(runs[0].output);
  REQUIRE(runs[0].exit_code == 0);
  // It still learns with its rows bounded and evicted: AUC 0.651 with seed 5
  // (chance is 0.5).
  CHECK(JsonNumber(runs[0].json, "auc") > 0.6);
  for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
  for (Shard& shard : shards) {
    const std::string log = shard.process->Output();
    INFO(log);
    const std::string marker = "table=ctr_embeddings";
    const auto rows = LastNumberAfter(log, marker, " rows=");
    const auto evicted = LastNumberAfter(log, marker, " evicted=");
    REQUIRE(rows.has_value());
    REQUIRE(evicted.has_value());
    CHECK(*rows > 1000);
    CHECK(*rows <= 3000);
    CHECK(*evicted > 0);
  }
}

// What a DLRM run left on its shards: the whole dense table and the rows of
// the 40 most frequent ids of every field, as pulled by an outside client.
struct CtrTables {
  std::vector<float> dense;
  std::vector<float> rows;
};

CtrTables PullCtrTables(const std::vector<Shard>& shards) {
  ClientOptions options;
  options.servers = absl::StrSplit(JoinAddresses(shards), ',');
  options.worker_id = 99;
  options.register_worker = false;
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  auto dense_config = (*client)->OpenTable(trainer::kCtrDenseTableName);
  auto sparse_config = (*client)->OpenTable(trainer::kCtrEmbeddingTableName);
  REQUIRE(dense_config.ok());
  REQUIRE(sparse_config.ok());
  CtrTables tables;
  tables.dense.resize(dense_config->dense_size);
  REQUIRE((*client)->PullDense(trainer::kCtrDenseTableName,
                               absl::MakeSpan(tables.dense)).ok());
  std::vector<uint64_t> keys;
  for (int field = 0; field < trainer::kCriteoCategoricalFields; ++field) {
    for (uint64_t id = 0; id < 40; ++id) {
      keys.push_back(trainer::EmbeddingKey(field, id));
    }
  }
  tables.rows.resize(keys.size() * sparse_config->dim);
  REQUIRE((*client)->PullSparse(trainer::kCtrEmbeddingTableName, keys,
                                absl::MakeSpan(tables.rows)).ok());
  return tables;
}

// Under sync a prefetched pull for step t+1 is answered only once step t
// closed, which needs the other worker's push: the run must not stall, and
// it must read exactly what the plain pull reads. Two workers (a sum of two
// gradients is the same in either order of arrival), so the two runs end at
// bit-identical tables.
TEST_CASE("under sync, DLRM runs with and without embedding prefetch end alike") {
  struct Run {
    CtrTables tables;
    std::vector<WorkerRun> workers;
  };
  const auto train = [](bool prefetch) {
    TempDir dir;
    std::vector<Shard> shards = StartShards(dir.path(), 2);
    Run run;
    run.workers = RunWorkers(
        dir, shards, 2,
        {"--model=ctr", "--consistency=sync", "--steps=40", "--batch_size=128",
         "--eval_examples=2000", "--log_every=0", "--seed=6",
         absl::StrCat("--prefetch=", prefetch ? "true" : "false")});
    for (const WorkerRun& worker : run.workers) {
      INFO(worker.output);
      REQUIRE(worker.exit_code == 0);
      const std::string expected = prefetch ? "embedding prefetch once the step before is pushed"
                                            : "embedding prefetch off";
      CHECK(worker.output.find(expected) != std::string::npos);
    }
    run.tables = PullCtrTables(shards);
    for (Shard& shard : shards) REQUIRE(shard.process->Stop() == 0);
    return run;
  };
  const Run plain = train(false);
  const Run prefetched = train(true);
  REQUIRE(prefetched.tables.dense.size() == plain.tables.dense.size());
  CHECK(prefetched.tables.dense == plain.tables.dense);
  CHECK(prefetched.tables.rows == plain.tables.rows);
  // The runs trained (their tables are not two untouched initialisations):
  // both beat the best constant on the eval set.
  for (int w = 0; w < 2; ++w) {
    INFO(prefetched.workers[w].json << "\n" << plain.workers[w].json);
    for (const char* key : {"test_logloss", "auc", "final_loss", "tau_max"}) {
      CHECK(JsonNumber(prefetched.workers[w].json, key) ==
            JsonNumber(plain.workers[w].json, key));
    }
    CHECK(JsonNumber(plain.workers[w].json, "tau_max") == 0.0);
    CHECK(*JsonNumber(plain.workers[w].json, "test_logloss") <
          *JsonNumber(plain.workers[w].json, "constant_logloss"));
  }
}

}  // namespace
}  // namespace taups::testing
