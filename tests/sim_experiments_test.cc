// The deterministic experiment harness (bench/sim): same seed, same result;
// 256 simulated workers; a dead worker does not hang a sync run; compressed
// pushes count their bytes exactly; and the short version of every
// experiment of docs/EXPERIMENTS.md shows its expected shape.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "bench/sim/experiment.h"
#include "bench/sim/experiment_report.h"
#include "common/codec.h"
#include "spdlog/spdlog.h"
#include "tests/test_skip.h"

namespace taups::sim {
namespace {

// Fashion-MNIST, loaded once per process; nullptr when not installed.
const SimData* Data() {
  static const std::unique_ptr<SimData> data = [] {
    spdlog::set_level(spdlog::level::err);
    auto loaded = LoadSimData(trainer::kDefaultFashionMnistDir);
    return loaded.ok() ? std::make_unique<SimData>(std::move(*loaded)) : nullptr;
  }();
  return data.get();
}

#define REQUIRE_DATA()                                                   \
  if (Data() == nullptr) {                                               \
    TAUPS_SKIP(trainer::kDefaultFashionMnistDir                          \
               << " not present (install dataset-fashion-mnist)");       \
  }

SimResult Run(const SimConfig& config) {
  auto result = RunSimulation(config, Data()->train, Data()->test);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

// Bit-identical, NaN included (the first point has no training loss yet).
bool Same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

void RequireIdentical(const SimResult& a, const SimResult& b) {
  REQUIRE(a.curve.size() == b.curve.size());
  for (size_t i = 0; i < a.curve.size(); ++i) {
    CHECK(a.curve[i].time_s == b.curve[i].time_s);
    CHECK(a.curve[i].pushes == b.curve[i].pushes);
    CHECK(a.curve[i].version == b.curve[i].version);
    CHECK(a.curve[i].test_accuracy == b.curve[i].test_accuracy);
    CHECK(a.curve[i].test_loss == b.curve[i].test_loss);
    CHECK(Same(a.curve[i].train_loss, b.curve[i].train_loss));
  }
  CHECK(a.sim_time_s == b.sim_time_s);
  CHECK(a.pushes == b.pushes);
  CHECK(a.not_applied == b.not_applied);
  CHECK(a.tau.counts() == b.tau.counts());
  CHECK(a.step_durations_s == b.step_durations_s);
  REQUIRE(a.workers.size() == b.workers.size());
  for (size_t i = 0; i < a.workers.size(); ++i) {
    CHECK(a.workers[i].pushes == b.workers[i].pushes);
    CHECK(a.workers[i].wait_s == b.workers[i].wait_s);
  }
}

SimConfig Small(std::string label, ModelKind model, ConsistencyKind kind,
                uint32_t workers, int64_t budget) {
  SimConfig c;
  c.label = std::move(label);
  c.model = model;
  c.num_workers = workers;
  c.num_shards = 2;
  c.batch_size = 16;
  c.budget_gradients = budget;
  c.eval_examples = 500;
  c.eval_points = 4;
  c.learning_rate = 0.1f;
  c.consistency = Policy(kind, workers);
  c.compute.spike_probability = 0.02;
  c.compute.spike_delay_s = 5.0;
  return c;
}

TEST_CASE("same seed, same result; another seed, another result",
          "[sim][determinism]") {
  REQUIRE_DATA();
  SimConfig async = Small("async_mlp", ModelKind::kMlp, ConsistencyKind::kAsync,
                          16, 400);
  async.staleness.downweight = DownweightKind::kInverse;
  async.staleness.reject_above_tau_max = true;
  async.staleness.tau_max = 40;
  SimConfig semi = Small("semi_softmax", ModelKind::kSoftmax,
                         ConsistencyKind::kSemiSync, 16, 16 * 40);
  semi.consistency.quorum = 0.75f;
  semi.consistency.late = LatePolicy::kDrop;
  semi.consistency.step_timeout_s = 1.5;
  semi.compute.slow_workers = {3, 7};
  semi.compute.slow_factor = 3.0;
  for (const SimConfig& config : {async, semi}) {
    SECTION(config.label) {
      const SimResult first = Run(config);
      const SimResult second = Run(config);
      RequireIdentical(first, second);
      CHECK(first.pushes >= config.budget_gradients / 2);
      SimConfig other = config;
      other.seed = 2;
      const SimResult third = Run(other);
      CHECK(third.curve.back().test_loss != first.curve.back().test_loss);
    }
  }
}

TEST_CASE("two shards give the same result as one", "[sim][determinism]") {
  REQUIRE_DATA();
  for (ConsistencyKind kind : {ConsistencyKind::kAsync, ConsistencyKind::kSync}) {
    SimConfig two = Small("sharded", ModelKind::kMlp, kind, 8, 8 * 30);
    two.staleness.clip_norm = 0.5f;
    two.slice_elements = 20000;  // several slices per shard, too
    SimConfig one = two;
    one.num_shards = 1;
    const SimResult a = Run(one);
    const SimResult b = Run(two);
    INFO(ConsistencyKindName(kind));
    RequireIdentical(a, b);
  }
}

// Semi-sync reuse_last sums the stand-in gradients of several missing
// workers; the shard adds them in worker-id order, so the rounding of the sum
// (and so the run) is the same every time.
TEST_CASE("semi-sync reuse_last with several missing workers is deterministic",
          "[sim][determinism]") {
  REQUIRE_DATA();
  SimConfig semi = Small("semi_reuse_last", ModelKind::kSoftmax,
                         ConsistencyKind::kSemiSync, 16, 16 * 40);
  semi.consistency.quorum = 0.75f;
  semi.consistency.late = LatePolicy::kReuseLast;
  semi.consistency.step_timeout_s = 1.5;
  semi.compute.slow_workers = {3, 7};
  semi.compute.slow_factor = 3.0;
  const SimResult first = Run(semi);
  // Different heap history for the second run's hash tables.
  std::vector<std::unique_ptr<char[]>> ballast;
  for (int i = 1; i <= 4096; ++i) {
    ballast.push_back(std::make_unique<char[]>(static_cast<size_t>(i % 97) * 16 + 8));
  }
  const SimResult second = Run(semi);
  RequireIdentical(first, second);
}

TEST_CASE("the harness runs 256 simulated workers", "[sim][scale]") {
  REQUIRE_DATA();
  SimConfig async = Small("async_256", ModelKind::kSoftmax,
                          ConsistencyKind::kAsync, 256, 256 * 6);
  async.compute.spike_probability = 0.0;
  SimConfig ssp = Small("ssp_256", ModelKind::kSoftmax, ConsistencyKind::kSsp,
                        256, 256 * 6);
  ssp.consistency.staleness_bound = 1;
  ssp.compute.spike_probability = 0.0;
  SimConfig sync = Small("sync_256", ModelKind::kSoftmax,
                         ConsistencyKind::kSync, 256, 256 * 6);
  auto results = RunConfigs({async, ssp, sync}, *Data(), 0);
  REQUIRE(results.ok());
  const SimResult& a = (*results)[0];
  const SimResult& s = (*results)[1];
  const SimResult& b = (*results)[2];
  // With 256 equally fast workers every push is ~255 versions stale.
  CHECK(a.tau.mean() > 200.0);
  CHECK(a.tau.mean() < 300.0);
  CHECK(s.tau.max() <= 3 * 255);
  CHECK(b.table_stats.steps_closed == 6);
  CHECK(b.tau.max() == 0);
  CHECK(b.sim_time_s > s.sim_time_s);
  for (const SimResult* r : {&a, &s, &b}) {
    CHECK_FALSE(r->stalled);
    CHECK(r->final_accuracy > 0.2);  // learning (chance is 0.1)
  }
}

TEST_CASE("a dead worker's lease expires and sync carries on", "[sim][lease]") {
  REQUIRE_DATA();
  SimConfig config = Small("sync_dead", ModelKind::kSoftmax,
                           ConsistencyKind::kSync, 8, 8 * 60);
  config.compute.spike_probability = 0.0;
  config.dead_worker = 5;
  config.dead_at_s = 20.0;
  config.lease_s = 10.0;
  const SimResult r = Run(config);
  CHECK_FALSE(r.stalled);
  CHECK(r.lease_expirations == 1);
  CHECK(r.table_stats.steps_closed == 60);
  // One step waited for the dead worker. Steps close one after another, so
  // the durations add up to the time each closed. That step closed when the
  // shards saw the lease run out: at least a lease after the last heartbeat
  // (sent at most lease/4 before the death), and at the first tick after
  // that (ticks come at least every lease/4): within lease -+ lease/4 of the
  // death. No other step waited anywhere near as long.
  const std::vector<double>& d = r.step_durations_s;
  const size_t held = std::max_element(d.begin(), d.end()) - d.begin();
  double closed_at_s = 0;
  for (size_t i = 0; i <= held; ++i) closed_at_s += d[i];
  const double lease = config.lease_s, heartbeat = config.lease_s / 4;
  CHECK(closed_at_s - config.dead_at_s >= lease - heartbeat - 1e-6);
  CHECK(closed_at_s - config.dead_at_s <= lease + heartbeat + 1e-6);
  for (size_t i = 0; i < d.size(); ++i) {
    if (i != held) CHECK(d[i] < lease - heartbeat);
  }
  CHECK(r.workers[5].pushes < r.workers[0].pushes);
}

TEST_CASE("a run that cannot progress stops as stalled", "[sim][lease]") {
  REQUIRE_DATA();
  // The table waits for 9 workers before closing any step; only 8 exist.
  SimConfig config = Small("sync_gate", ModelKind::kSoftmax,
                           ConsistencyKind::kSync, 8, 8 * 10);
  config.consistency.num_workers = 9;
  const SimResult r = Run(config);
  CHECK(r.stalled);
  CHECK(r.table_stats.steps_closed == 0);
  CHECK(r.pushes == 8);
}

TEST_CASE("compressed pushes: exact byte counts, reproducible rounding",
          "[sim][compression]") {
  REQUIRE_DATA();
  SimConfig base = Small("softmax", ModelKind::kSoftmax, ConsistencyKind::kSync,
                         4, 4 * 30);
  base.compute.spike_probability = 0.0;
  // 7,850 parameters, 2 shards of 3,925, each cut into 2 even slices.
  base.slice_elements = 3000;
  const SimResult fp32 = Run(base);

  SimConfig int2 = base;
  int2.compression.push.codec = CodecKind::kInt2;
  int2.compression.push.rounding = Rounding::kStochastic;
  int2.compression.push.bucket_size = 100;
  int2.compression.error_feedback = true;
  const SimResult a = Run(int2);
  const SimResult b = Run(int2);
  RequireIdentical(a, b);
  // Same batches and compute times, another codec seed: other roundings.
  SimConfig reseeded = int2;
  reseeded.compression.push.seed = 7;
  CHECK(Run(reseeded).curve.back().test_loss != a.curve.back().test_loss);

  // Bytes: one block per slice per push, exactly as the format says.
  constexpr uint64_t n = 784 * 10 + 10;
  uint64_t block_bytes = 0;
  uint64_t covered = 0;
  for (uint64_t count : {1963, 1962, 1963, 1962}) {
    block_bytes += EncodedBytes(int2.compression.push, count);
    covered += count;
  }
  REQUIRE(covered == n);
  CHECK(a.pushes == 4 * 30);
  CHECK(a.push_bytes.raw == 4 * n * a.pushes);
  CHECK(a.push_bytes.wire == block_bytes * a.pushes);
  CHECK(fp32.push_bytes.raw == a.push_bytes.raw);
  // The client sends an uncompressed push as raw float32, no block header.
  CHECK(fp32.push_bytes.wire == fp32.push_bytes.raw);
  CHECK(a.final_accuracy > 0.5);
}

TEST_CASE("accumulation: k gradients per push, the same budget in gradients",
          "[sim][compression]") {
  REQUIRE_DATA();
  for (ConsistencyKind kind : {ConsistencyKind::kSync, ConsistencyKind::kAsync}) {
    SimConfig one = Small("k1", ModelKind::kSoftmax, kind, 4, 4 * 4 * 10);
    one.compute.spike_probability = 0.0;
    SimConfig four = one;
    four.label = "k4";
    four.compression.accumulate_steps = 4;
    const SimResult a = Run(one);
    const SimResult b = Run(four);
    INFO(ConsistencyKindName(kind));
    CHECK(a.pushes == 4 * 4 * 10);
    CHECK(b.pushes == 4 * 10);
    CHECK(a.push_bytes.wire == 4 * b.push_bytes.wire);
    // A push takes the compute time of its k mini-batches.
    CHECK(b.sim_time_s > 2.0 * a.sim_time_s / 4.0);
    CHECK(b.final_accuracy > 0.5);
  }
}

TEST_CASE("a compression config the harness cannot simulate is refused",
          "[sim][compression]") {
  REQUIRE_DATA();
  SimConfig config = Small("bad", ModelKind::kSoftmax, ConsistencyKind::kSync,
                           2, 20);
  config.compression.pull = CodecKind::kFp16;
  CHECK(RunSimulation(config, Data()->train, Data()->test).status().code() ==
        absl::StatusCode::kInvalidArgument);
  config.compression.pull = CodecKind::kNone;
  config.compression.accumulate_steps = 0;
  CHECK(RunSimulation(config, Data()->train, Data()->test).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

void RunShort(const std::string& name) {
  ExperimentOptions options;
  options.short_version = true;
  auto report = RunExperiment(name, options, *Data());
  REQUIRE(report.ok());
  INFO(FormatReport(*report));
  for (const Check& check : report->checks) {
    INFO(check.name << ": " << check.measured);
    CHECK(check.passed);
  }
}

TEST_CASE("short staleness experiment", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("staleness");
}

TEST_CASE("short stragglers experiment", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("stragglers");
}

TEST_CASE("short SSP experiment", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("ssp");
}

TEST_CASE("short spikes experiment", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("spikes");
}

TEST_CASE("short compression ladder, softmax regression", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("compression_softmax");
}

TEST_CASE("short compression ladder, MLP", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("compression_mlp");
}

TEST_CASE("short accumulation experiment", "[sim][experiment]") {
  REQUIRE_DATA();
  RunShort("accumulation");
}

}  // namespace
}  // namespace taups::sim
