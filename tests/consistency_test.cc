// Consistency policies and staleness treatment in the shard core, driven with
// a manual clock: exact results, no sleeps.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/clock.h"
#include "server/parameter_store.h"

namespace taups {
namespace {

constexpr absl::Duration kLease = absl::Seconds(10);

struct Shard {
  explicit Shard(uint32_t shards = 1, uint32_t index = 0)
      : store(index, shards, &clock, kLease) {}
  ManualClock clock{absl::FromUnixSeconds(1000)};
  ParameterStore store;
};

TableConfig Dense(uint64_t size, float lr, ConsistencyConfig consistency = {},
                  StalenessConfig staleness = {}) {
  TableConfig config = TableConfig::Dense("w", size);
  config.optimizer.learning_rate = lr;
  config.consistency = consistency;
  config.staleness = staleness;
  return config;
}

ConsistencyConfig Policy(ConsistencyKind kind, uint32_t workers) {
  ConsistencyConfig c;
  c.kind = kind;
  c.num_workers = workers;
  return c;
}

void Create(Shard& shard, const TableConfig& config) {
  bool created = false;
  REQUIRE(shard.store.CreateTable(config, false, &created).ok());
}

PushMeta Meta(uint32_t worker, uint64_t clock, uint64_t base, uint64_t seq) {
  PushMeta meta;
  meta.origin = PushOrigin{worker, 1, seq};
  meta.clock = clock;
  meta.base_version = base;
  return meta;
}

std::vector<float> Pull(Shard& shard, uint64_t n, uint32_t worker = 0,
                        uint64_t clock = 0) {
  std::vector<float> out(n);
  PullContext ctx;
  ctx.worker = worker;
  ctx.clock = clock;
  ctx.deadline = absl::InfinitePast();
  auto pulled = shard.store.PullDense("w", 0, absl::MakeSpan(out), ctx);
  REQUIRE(pulled.ok());
  return out;
}

bool Ready(Shard& shard, uint32_t worker, uint64_t clock) {
  PullContext ctx;
  ctx.worker = worker;
  ctx.clock = clock;
  auto ready = shard.store.PullReady("w", ctx);
  REQUIRE(ready.ok());
  return *ready;
}

const TableStats& StatsOf(const StoreStats& stats) {
  REQUIRE(stats.tables.size() == 1);
  return stats.tables[0].second;
}

// ---- sync --------------------------------------------------------------

// Linear regression, loss = mean (w.x - y)^2: the gradient of a batch.
std::vector<float> Gradient(const std::vector<float>& w,
                            const std::vector<std::vector<float>>& xs,
                            const std::vector<float>& ys, size_t begin,
                            size_t end) {
  std::vector<float> g(w.size(), 0.0f);
  for (size_t i = begin; i < end; ++i) {
    float pred = 0;
    for (size_t j = 0; j < w.size(); ++j) pred += w[j] * xs[i][j];
    const float err = pred - ys[i];
    for (size_t j = 0; j < w.size(); ++j) {
      g[j] += 2.0f * err * xs[i][j] / static_cast<float>(end - begin);
    }
  }
  return g;
}

TEST_CASE("sync with N workers equals single-process SGD on the N-times batch") {
  const uint32_t kWorkers = 4;
  const size_t kDim = 8, kBatch = 16, kSteps = 6;
  const float kLr = 0.05f;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal;
  std::vector<std::vector<float>> xs(kWorkers * kBatch * kSteps,
                                     std::vector<float>(kDim));
  std::vector<float> ys(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    for (float& v : xs[i]) v = normal(rng);
    ys[i] = normal(rng);
  }

  Shard shard;
  Create(shard, Dense(kDim, kLr, Policy(ConsistencyKind::kSync, kWorkers)));
  for (uint32_t w = 0; w < kWorkers; ++w) shard.store.Register(w, 1, kLease);

  std::vector<float> reference(kDim, 0.0f);
  for (uint64_t step = 0; step < kSteps; ++step) {
    const size_t base = step * kWorkers * kBatch;
    // Single process: one batch of N * B examples.
    const std::vector<float> g =
        Gradient(reference, xs, ys, base, base + kWorkers * kBatch);
    for (size_t j = 0; j < kDim; ++j) reference[j] -= kLr * g[j];
    // Distributed: each worker its own B examples of that batch.
    for (uint32_t w = 0; w < kWorkers; ++w) {
      REQUIRE(Ready(shard, w, step));
      const std::vector<float> params = Pull(shard, kDim, w, step);
      const std::vector<float> gw = Gradient(
          params, xs, ys, base + w * kBatch, base + (w + 1) * kBatch);
      auto pushed = shard.store.PushDense("w", 0, gw, Meta(w, step, step, step + 1));
      REQUIRE(pushed.ok());
      REQUIRE(pushed->accepted);
      REQUIRE(pushed->tau == 0);
      // Nobody may read step + 1 until the last worker has pushed step.
      REQUIRE(Ready(shard, w, step + 1) == (w == kWorkers - 1));
    }
    REQUIRE(shard.store.GetTable("w")->version == step + 1);
  }
  const std::vector<float> distributed = Pull(shard, kDim, 0, kSteps);
  for (size_t j = 0; j < kDim; ++j) {
    REQUIRE(distributed[j] == Approx(reference[j]).epsilon(1e-5));
  }
  const StoreStats all = shard.store.Stats();
  const TableStats& stats = StatsOf(all);
  REQUIRE(stats.steps_closed == kSteps);
  REQUIRE(stats.last_straggler == kWorkers - 1);
  REQUIRE(stats.workers.at(kWorkers - 1).closed_steps_as_last == kSteps);
}

TEST_CASE("sync refuses pushes for steps not open, twice, or unregistered") {
  Shard shard;
  Create(shard, Dense(2, 1.0f, Policy(ConsistencyKind::kSync, 2)));
  shard.store.Register(0, 1, kLease);
  shard.store.Register(1, 1, kLease);
  const std::vector<float> g = {1, 1};
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(0, 1, 0, 1)).status().code() ==
          absl::StatusCode::kFailedPrecondition);  // step 1 not open
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(0, 0, 0, 2)).ok());
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(0, 0, 0, 3)).status().code() ==
          absl::StatusCode::kFailedPrecondition);  // already pushed step 0
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(7, 0, 0, 1)).status().code() ==
          absl::StatusCode::kFailedPrecondition);  // never registered
  REQUIRE(shard.store.GetTable("w")->version == 0);
  REQUIRE(Pull(shard, 2) == std::vector<float>{0, 0});
}

TEST_CASE("a dead worker is evicted within lease + one tick and sync continues") {
  Shard shard;
  Create(shard, Dense(2, 1.0f, Policy(ConsistencyKind::kSync, 3)));
  for (uint32_t w = 0; w < 3; ++w) shard.store.Register(w, 1, kLease);
  const std::vector<float> g = {3, 6};
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(0, 0, 0, 1)).ok());
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(1, 0, 0, 1)).ok());
  // Worker 2 has gone silent. Workers 0 and 1 keep their leases alive.
  const absl::Duration tick = absl::Milliseconds(5);
  absl::Duration waited;
  while (!Ready(shard, 0, 1)) {
    shard.clock.Advance(tick);
    waited += tick;
    shard.store.Heartbeat(0, 1);
    shard.store.Heartbeat(1, 1);
    shard.store.Tick();
    REQUIRE(waited <= kLease + tick);
  }
  REQUIRE(waited > kLease);
  REQUIRE(Pull(shard, 2) == std::vector<float>{-3, -6});  // mean of 0 and 1
  const StoreStats stats = shard.store.Stats();
  REQUIRE(stats.lease_expirations == 1);
  REQUIRE_FALSE(stats.workers[2].live);
  // The step waited the whole lease for the dead worker, and says so.
  REQUIRE(StatsOf(stats).steps_closed == 1);
  REQUIRE(StatsOf(stats).step_wait_s.max() > absl::ToDoubleSeconds(kLease));
  // The next step needs only the two live workers.
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(0, 1, 1, 2)).ok());
  REQUIRE(shard.store.PushDense("w", 0, g, Meta(1, 1, 1, 2)).ok());
  REQUIRE(shard.store.GetTable("w")->version == 2);
  // Worker 2 comes back and joins at the open step.
  const Registration again = shard.store.Register(2, 2, kLease);
  REQUIRE(again.start_clock.at("w") == 2);
}

TEST_CASE("no sync step closes before the expected workers registered") {
  Shard shard;
  Create(shard, Dense(1, 1.0f, Policy(ConsistencyKind::kSync, 2)));
  shard.store.Register(0, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(shard.store.GetTable("w")->version == 0);  // worker 1 not yet seen
  shard.store.Register(1, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{3}, Meta(1, 0, 0, 1)).ok());
  REQUIRE(Pull(shard, 1) == std::vector<float>{-2});
}

// ---- semi-sync ---------------------------------------------------------

ConsistencyConfig SemiSync(uint32_t workers, float quorum, LatePolicy late,
                           double timeout_s = 0) {
  ConsistencyConfig c = Policy(ConsistencyKind::kSemiSync, workers);
  c.quorum = quorum;
  c.late = late;
  c.step_timeout_s = timeout_s;
  return c;
}

TEST_CASE("semi-sync closes exactly at quorum; late=drop refuses the straggler") {
  Shard shard;
  Create(shard, Dense(1, 1.0f, SemiSync(4, 0.75f, LatePolicy::kDrop)));
  for (uint32_t w = 0; w < 4; ++w) shard.store.Register(w, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(1, 0, 0, 1)).ok());
  REQUIRE(shard.store.GetTable("w")->version == 0);  // 2 of 4 < quorum 3
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{6}, Meta(2, 0, 0, 1)).ok());
  REQUIRE(shard.store.GetTable("w")->version == 1);  // closed at the 3rd
  REQUIRE(Pull(shard, 1) == std::vector<float>{-3});  // mean of 1, 2, 6
  auto late = shard.store.PushDense("w", 0, std::vector<float>{100}, Meta(3, 0, 0, 1));
  REQUIRE(late.ok());
  REQUIRE_FALSE(late->accepted);
  REQUIRE(late->reject_reason.find("late=drop") != std::string::npos);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-3});
  const StoreStats all = shard.store.Stats();
  const TableStats& stats = StatsOf(all);
  REQUIRE(stats.late == 1);
  REQUIRE(stats.workers.at(3).missed_steps == 1);
  REQUIRE(stats.last_straggler == 2);
}

TEST_CASE("semi-sync late=reuse_last lets the previous gradient stand in") {
  Shard shard;
  Create(shard, Dense(1, 1.0f, SemiSync(3, 0.6f, LatePolicy::kReuseLast)));
  for (uint32_t w = 0; w < 3; ++w) shard.store.Register(w, 1, kLease);
  // Step 0: quorum is ceil(0.6 * 3) = 2. Worker 2 arrives first this time.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{9}, Meta(2, 0, 0, 1)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{3}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(Pull(shard, 1) == std::vector<float>{-6});  // (9 + 3) / 2; 1 had none
  // Step 1: workers 0 and 1 arrive; worker 2's previous 9 stands in.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 1, 1, 2)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(1, 1, 1, 2)).ok());
  REQUIRE(Pull(shard, 1)[0] == Approx(-6.0f - 4.0f));  // (1 + 2 + 9) / 3
  // Worker 2's late push for step 1 is kept, not applied...
  auto late = shard.store.PushDense("w", 0, std::vector<float>{30}, Meta(2, 1, 1, 2));
  REQUIRE_FALSE(late->accepted);
  REQUIRE(Pull(shard, 1)[0] == Approx(-10.0f));
  // ...and stands in at step 2 when worker 2 misses it again.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0}, Meta(0, 2, 2, 3)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0}, Meta(1, 2, 2, 3)).ok());
  REQUIRE(Pull(shard, 1)[0] == Approx(-20.0f));  // (0 + 0 + 30) / 3
}

TEST_CASE("semi-sync late=apply_late applies a late push weighted by its tau") {
  Shard shard;
  StalenessConfig staleness;
  staleness.downweight = DownweightKind::kInversePlusOne;
  Create(shard, Dense(1, 1.0f, SemiSync(2, 0.5f, LatePolicy::kApplyLate), staleness));
  shard.store.Register(0, 1, kLease);
  shard.store.Register(1, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{4}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(Pull(shard, 1) == std::vector<float>{-4});
  // Worker 1 computed step 0 on version 0; the table is at 1: tau = 1, and a
  // late gradient is one worker's share: factor = (1/2) * 1/(1+1) = 0.25.
  auto late = shard.store.PushDense("w", 0, std::vector<float>{8}, Meta(1, 0, 0, 1));
  REQUIRE(late->accepted);
  REQUIRE(late->tau == 1);
  REQUIRE(late->lr_factor == 0.25f);
  REQUIRE(late->new_version == 2);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-6});
}

TEST_CASE("semi-sync closes at the timeout, not before, and records the wait") {
  Shard shard;
  Create(shard, Dense(1, 1.0f, SemiSync(4, 1.0f, LatePolicy::kDrop, 2.0)));
  for (uint32_t w = 0; w < 4; ++w) shard.store.Register(w, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{4}, Meta(1, 0, 0, 1)).ok());
  shard.clock.Advance(absl::Milliseconds(1999));
  shard.store.Tick();
  REQUIRE(shard.store.GetTable("w")->version == 0);
  shard.clock.Advance(absl::Milliseconds(1));
  shard.store.Tick();
  REQUIRE(shard.store.GetTable("w")->version == 1);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-3});
  const StoreStats all = shard.store.Stats();
  const TableStats& stats = StatsOf(all);
  REQUIRE(stats.timeout_closes == 1);
  REQUIRE(stats.step_wait_s.max() == Approx(2.0));
  REQUIRE(stats.workers.at(2).missed_steps == 1);
}

// ---- SSP ---------------------------------------------------------------

TEST_CASE("SSP never lets a pull read parameters older than the bound") {
  for (uint32_t s : {0u, 1u, 3u}) {
    for (uint32_t seed = 0; seed < 40; ++seed) {
      const uint32_t kWorkers = 4;
      const uint64_t kSteps = 12;
      Shard shard;
      ConsistencyConfig ssp = Policy(ConsistencyKind::kSsp, kWorkers);
      ssp.staleness_bound = s;
      Create(shard, Dense(1, 1.0f, ssp));
      for (uint32_t w = 0; w < kWorkers; ++w) shard.store.Register(w, 1, kLease);
      std::vector<uint64_t> clock(kWorkers, 0);
      std::vector<bool> pulled(kWorkers, false);
      std::vector<uint64_t> base(kWorkers, 0);
      std::mt19937 rng(seed * 7919 + s);
      // Random schedule: any worker may try its next action at any time.
      while (*std::min_element(clock.begin(), clock.end()) < kSteps) {
        const uint32_t w = rng() % kWorkers;
        if (clock[w] == kSteps) continue;
        if (!pulled[w]) {
          if (!Ready(shard, w, clock[w])) continue;
          // The invariant: everyone has completed at least clock - s steps,
          // so the version read includes every one of those pushes.
          const uint64_t floor = clock[w] > s ? clock[w] - s : 0;
          for (uint32_t o = 0; o < kWorkers; ++o) REQUIRE(clock[o] >= floor);
          const uint64_t version = shard.store.GetTable("w")->version;
          REQUIRE(version >= kWorkers * floor);
          Pull(shard, 1, w, clock[w]);
          base[w] = version;
          pulled[w] = true;
        } else {
          REQUIRE(shard.store
                      .PushDense("w", 0, std::vector<float>{0.001f},
                                 Meta(w, clock[w], base[w], clock[w] + 1))
                      .ok());
          ++clock[w];
          pulled[w] = false;
        }
      }
      REQUIRE(shard.store.GetTable("w")->version == kWorkers * kSteps);
    }
  }
}

// ---- staleness treatment -------------------------------------------------

// Applies a gradient of 1 (SGD, lr 1) at staleness tau; returns the change.
float StepAt(const StalenessConfig& staleness, uint64_t tau) {
  Shard shard;
  Create(shard, Dense(1, 1.0f, {}, staleness));
  for (uint64_t i = 0; i < tau; ++i) {
    REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0}, Meta(1, 0, i, i + 1)).ok());
  }
  auto pushed = shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 0, 1));
  REQUIRE(pushed.ok());
  REQUIRE(pushed->tau == tau);
  return -Pull(shard, 1)[0];
}

TEST_CASE("each down-weight function applies exactly its factor") {
  StalenessConfig st;
  st.downweight = DownweightKind::kNone;
  REQUIRE(StepAt(st, 4) == 1.0f);
  st.downweight = DownweightKind::kInverse;
  REQUIRE(StepAt(st, 4) == 0.25f);
  REQUIRE(StepAt(st, 0) == 1.0f);
  REQUIRE(StepAt(st, 1) == 1.0f);
  st.downweight = DownweightKind::kInversePlusOne;
  REQUIRE(StepAt(st, 4) == 0.2f);
  REQUIRE(StepAt(st, 0) == 1.0f);
  st.downweight = DownweightKind::kExponential;
  st.downweight_lambda = 0.5f;
  REQUIRE(StepAt(st, 4) == Approx(std::exp(-2.0f)));
}

TEST_CASE("pushes over tau_max are rejected with the reason; others counted") {
  Shard shard;
  StalenessConfig st;
  st.reject_above_tau_max = true;
  st.tau_max = 2;
  st.downweight = DownweightKind::kInverse;
  Create(shard, Dense(1, 1.0f, {}, st));
  for (uint64_t i = 0; i < 3; ++i) {
    REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0}, Meta(1, 0, i, i + 1)).ok());
  }
  auto rejected = shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 0, 1));
  REQUIRE(rejected.ok());
  REQUIRE_FALSE(rejected->accepted);
  REQUIRE(rejected->tau == 3);
  REQUIRE(rejected->reject_reason.find("tau=3 exceeds tau_max=2") != std::string::npos);
  REQUIRE(Pull(shard, 1)[0] == 0.0f);
  REQUIRE(shard.store.GetTable("w")->version == 3);
  auto accepted = shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 1, 2));
  REQUIRE(accepted->accepted);
  REQUIRE(accepted->lr_factor == 0.5f);
  const StoreStats all = shard.store.Stats();
  const TableStats& stats = StatsOf(all);
  REQUIRE(stats.rejected == 1);
  REQUIRE(stats.downweighted == 1);
  REQUIRE(stats.workers.at(0).rejected == 1);
  REQUIRE(stats.tau.max() == 3);
  REQUIRE(stats.tau.Percentile(0.5) == 0);
}

TEST_CASE("warm-up scales the learning rate linearly; clipping bounds the norm") {
  Shard shard;
  StalenessConfig st;
  st.warmup_versions = 4;
  st.clip_norm = 1.0f;
  Create(shard, Dense(2, 1.0f, {}, st));
  // version 0: factor 1/4; gradient (3, 4) has norm 5, clipped to (0.6, 0.8).
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{3, 4}, Meta(0, 0, 0, 1)).ok());
  auto p = Pull(shard, 2);
  REQUIRE(p[0] == Approx(-0.15f));
  REQUIRE(p[1] == Approx(-0.2f));
  // version 1: factor 2/4; a small gradient is not clipped.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0.1f, 0}, Meta(0, 0, 1, 2)).ok());
  REQUIRE(Pull(shard, 2)[0] == Approx(-0.15f - 0.05f));
  // The client's whole-push norm (here 10, across shards) wins over the part's.
  PushMeta meta = Meta(0, 0, 2, 3);
  meta.push_norm_sq = 100.0;
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{0, 1}, meta).ok());
  REQUIRE(Pull(shard, 2)[1] == Approx(-0.2f - 0.75f * 0.1f));
}

TEST_CASE("delay compensation adds lambda g^2 (theta_now - theta_pulled)") {
  Shard shard;
  StalenessConfig st;
  st.delay_compensation = true;
  st.delay_compensation_lambda = 0.5f;
  Create(shard, Dense(1, 1.0f, {}, st));
  Pull(shard, 1, /*worker=*/0);  // worker 0 reads theta = 0
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(1, 0, 0, 1)).ok());
  // theta is now -2 (worker 1 never pulled: no compensation for it).
  REQUIRE(Pull(shard, 1, 1)[0] == -2.0f);
  // Worker 0's g = 1: g + 0.5 * 1 * 1 * (-2 - 0) = 0; theta stays -2.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(Pull(shard, 1, 1)[0] == -2.0f);
}

// An async table of one float (lr 1) where worker 0 pushed 1 for step 4,
// then switched to sync for workers 0 and 1.
void SwitchToSyncAfterStep4(Shard& shard) {
  Create(shard, Dense(1, 1.0f));
  shard.store.Register(0, 1, kLease);
  shard.store.Register(1, 1, kLease);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 4, 0, 1)).ok());
  REQUIRE(shard.store.SetConsistency("w", Policy(ConsistencyKind::kSync, 2), {}).ok());
}

TEST_CASE("right after a switch to sync a worker from a later step catches the shard up") {
  // Shards switch at slightly different moments; a worker whose clock
  // follows another shard's later open step pushes for it here.
  Shard shard;
  SwitchToSyncAfterStep4(shard);
  REQUIRE(shard.store.GetTable("w")->open_step == 6);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(0, 6, 1, 2)).ok());
  // Worker 1 comes with step 7: step 6 closes with what it gathered (worker
  // 0's 2) and the shard gathers step 7.
  auto ahead = shard.store.PushDense("w", 0, std::vector<float>{4}, Meta(1, 7, 1, 3));
  REQUIRE(ahead.ok());
  REQUIRE(ahead->accepted);
  REQUIRE(shard.store.GetTable("w")->open_step == 7);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-3});  // -1 - 2
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{6}, Meta(0, 7, 2, 4)).ok());
  REQUIRE(shard.store.GetTable("w")->open_step == 8);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-8});  // -3 - (4 + 6) / 2
}

TEST_CASE("an admin call switches async to sync without losing pushes") {
  Shard shard;
  SwitchToSyncAfterStep4(shard);
  // Worker 0 finished step 4 and may already have pulled for step 5 under
  // async (which did not wait): step 6 is gathered first, so no push is
  // ahead of the open step. Pushes for step 5 come late and are dropped.
  REQUIRE(shard.store.GetTable("w")->open_step == 6);
  auto late = shard.store.PushDense("w", 0, std::vector<float>{100}, Meta(0, 5, 1, 2));
  REQUIRE(late.ok());
  REQUIRE_FALSE(late->accepted);
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(0, 6, 1, 3)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{4}, Meta(1, 6, 1, 4)).ok());
  REQUIRE(Pull(shard, 1) == std::vector<float>{-4});  // -1 - (2 + 4) / 2
  // Once a step closed normally, a push for a step not open yet is refused.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{1}, Meta(0, 9, 2, 5))
              .status()
              .code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(shard.store.SetConsistency("w", Policy(ConsistencyKind::kSync, 0), {})
              .status()
              .code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace taups

namespace taups {
namespace {

TEST_CASE("a sync push rejected as too stale still lets the step close") {
  Shard shard;
  StalenessConfig st;
  st.reject_above_tau_max = true;
  st.tau_max = 0;
  Create(shard, Dense(1, 1.0f, Policy(ConsistencyKind::kSync, 2), st));
  shard.store.Register(0, 1, kLease);
  shard.store.Register(1, 1, kLease);
  // Step 0 closes normally: version 1.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{2}, Meta(0, 0, 0, 1)).ok());
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{4}, Meta(1, 0, 0, 1)).ok());
  // Step 1: worker 1 pushes on version 0 (tau 1 > 0): rejected. The step
  // closes with worker 0's gradient alone, not divided by two.
  REQUIRE(shard.store.PushDense("w", 0, std::vector<float>{6}, Meta(0, 1, 1, 2)).ok());
  auto rejected = shard.store.PushDense("w", 0, std::vector<float>{8}, Meta(1, 1, 0, 2));
  REQUIRE(rejected.ok());
  REQUIRE_FALSE(rejected->accepted);
  REQUIRE(shard.store.GetTable("w")->version == 2);
  REQUIRE(Pull(shard, 1) == std::vector<float>{-3 - 6});
  REQUIRE(Ready(shard, 1, 2));
}

}  // namespace
}  // namespace taups
