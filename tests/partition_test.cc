// Properties of the partition's ordered apply path, checked over many random
// seeds: concurrent pushes apply in one sequence, multi-slice pushes apply
// whole or not at all, repeats apply once, results stay finite, snapshots are
// cuts of the apply order.
#include "server/partition.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "common/vector_math.h"
#include "server/dense_table.h"
#include "server/memory_budget.h"
#include "server/parameter_store.h"
#include "server/sparse_table.h"

namespace taups {
namespace {

constexpr uint64_t kSize = 600;

TableConfig DenseConfig(OptimizerKind optimizer, float lr = 0.05f) {
  TableConfig config = TableConfig::Dense("w", kSize);
  config.optimizer.kind = optimizer;
  config.optimizer.learning_rate = lr;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.5f;
  REQUIRE(config.Validate().ok());
  return config;
}

std::unique_ptr<Partition> NewDense(const TableConfig& config,
                                    const Clock* clock = RealClock::Get()) {
  return std::make_unique<Partition>(
      std::make_unique<DenseTable>(config, Range{0, kSize}), clock);
}

// One push as a client would send it: its slices cut from `gradient`.
struct TestPush {
  PushOrigin origin;
  uint32_t slices = 1;
  std::vector<float> gradient;  // kSize floats
};

std::vector<PushSlice> SlicesOf(const TestPush& push) {
  std::vector<PushSlice> slices;
  const uint64_t per = kSize / push.slices;
  for (uint32_t i = 0; i < push.slices; ++i) {
    PushSlice s;
    s.origin = push.origin;
    s.index = i;
    s.header.slices = push.slices;
    const uint64_t begin = i * per;
    const uint64_t end = i + 1 == push.slices ? kSize : begin + per;
    s.part.offset = begin;
    s.part.values = absl::MakeConstSpan(push.gradient.data() + begin, end - begin);
    slices.push_back(s);
  }
  return slices;
}

TestPush RandomPush(std::mt19937_64& rng, uint32_t worker, uint64_t seq,
                    bool integer_values = false) {
  TestPush push;
  push.origin = PushOrigin{worker, 1000 + worker, seq};
  push.slices = std::uniform_int_distribution<uint32_t>(1, 4)(rng);
  push.gradient.resize(kSize);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(-3, 3);
  for (float& g : push.gradient) {
    g = integer_values ? static_cast<float>(small(rng)) : normal(rng);
  }
  return push;
}

// Sends every slice of `push` in a random order; returns the push's answer
// (the answer to the slice that completed it).
absl::StatusOr<PushOutcome> SendShuffled(Partition& partition,
                                         const TestPush& push,
                                         std::mt19937_64& rng) {
  std::vector<PushSlice> slices = SlicesOf(push);
  std::shuffle(slices.begin(), slices.end(), rng);
  absl::StatusOr<PushOutcome> final_answer =
      absl::InternalError("no slice completed the push");
  for (const PushSlice& s : slices) {
    absl::StatusOr<PushOutcome> answer = partition.Push(s);
    if (!answer.ok() || !answer->staged) final_answer = answer;
  }
  return final_answer;
}

// The accepted pushes replayed one by one, in the order the partition put
// them (their new_version), on a fresh partition.
TableSnapshot Replay(const TableConfig& config,
                     const std::map<uint64_t, const TestPush*>& order,
                     uint64_t up_to_version) {
  std::unique_ptr<Partition> fresh = NewDense(config);
  std::mt19937_64 rng(7);
  for (const auto& [version, push] : order) {
    if (version > up_to_version) break;
    REQUIRE(SendShuffled(*fresh, *push, rng).ok());
  }
  REQUIRE(fresh->version() == std::min<uint64_t>(up_to_version, order.size()));
  return fresh->Snapshot().table;
}

// `writers` threads, each sending `pushes_each` random pushes (slices
// shuffled) to one partition; Join() returns the accepted pushes keyed by
// the version each was answered with, i.e. in the partition's apply order
// (pointing into this object: keep it alive while the map is used).
class ConcurrentWriters {
 public:
  ConcurrentWriters(Partition& partition, uint64_t seed, int writers,
                    int pushes_each)
      : pushes_(writers), versions_(writers) {
    for (int w = 0; w < writers; ++w) {
      std::mt19937_64 rng(seed * 1000 + w);
      for (int i = 0; i < pushes_each; ++i) {
        pushes_[w].push_back(RandomPush(rng, w, i + 1));
      }
    }
    for (int w = 0; w < writers; ++w) {
      threads_.emplace_back([this, &partition, w, seed] {
        std::mt19937_64 order_rng(seed * 7 + w);
        for (const TestPush& push : pushes_[w]) {
          absl::StatusOr<PushOutcome> answer =
              SendShuffled(partition, push, order_rng);
          versions_[w].push_back(answer.ok() ? answer->new_version : 0);
        }
      });
    }
  }
  std::map<uint64_t, const TestPush*> Join() {
    for (std::thread& t : threads_) t.join();
    std::map<uint64_t, const TestPush*> order;
    for (size_t w = 0; w < pushes_.size(); ++w) {
      for (size_t i = 0; i < pushes_[w].size(); ++i) {
        INFO("worker " << w << " push " << i);
        REQUIRE(versions_[w][i] > 0);
        REQUIRE(order.emplace(versions_[w][i], &pushes_[w][i]).second);
      }
    }
    return order;
  }

 private:
  std::vector<std::vector<TestPush>> pushes_;
  std::vector<std::vector<uint64_t>> versions_;
  std::vector<std::thread> threads_;
};

TEST_CASE("concurrent writers: the result is the replay of the apply order") {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const TableConfig config = DenseConfig(
        seed % 2 ? OptimizerKind::kAdam : OptimizerKind::kMomentum);
    std::unique_ptr<Partition> partition = NewDense(config);
    constexpr int kWriters = 4;
    constexpr int kPushesEach = 40;
    INFO("seed " << seed);
    ConcurrentWriters writers(*partition, seed, kWriters, kPushesEach);
    const std::map<uint64_t, const TestPush*> order = writers.Join();
    REQUIRE(partition->version() == kWriters * kPushesEach);
    REQUIRE(order.rbegin()->first == kWriters * kPushesEach);
    INFO("seed " << seed);
    REQUIRE(partition->Snapshot().table ==
            Replay(config, order, std::numeric_limits<uint64_t>::max()));
  }
}

TEST_CASE("a refused slice at any position leaves the partition as it was") {
  for (uint32_t slices : {2u, 3u, 5u}) {
    for (uint32_t refused = 0; refused < slices; ++refused) {
      for (bool refused_first : {false, true}) {
        std::unique_ptr<Partition> partition =
            NewDense(DenseConfig(OptimizerKind::kAdagrad));
        std::mt19937_64 rng(slices * 10 + refused);
        // Some history first, so the state is not the initial one.
        TestPush warm = RandomPush(rng, 9, 1);
        REQUIRE(SendShuffled(*partition, warm, rng).ok());
        const PartitionSnapshot before = partition->Snapshot();

        TestPush push = RandomPush(rng, 3, 5);
        push.slices = slices;
        std::vector<PushSlice> parts = SlicesOf(push);
        const absl::Status why = absl::InvalidArgumentError("block 7 is bad");
        // The refused slice comes first, last, or in the middle of the others.
        std::vector<uint32_t> order;
        for (uint32_t i = 0; i < slices; ++i) {
          if (i != refused) order.push_back(i);
        }
        std::shuffle(order.begin(), order.end(), rng);
        const size_t at = refused_first ? 0 : order.size() / 2;
        order.insert(order.begin() + at, refused);
        size_t errors = 0;
        for (size_t k = 0; k < order.size(); ++k) {
          if (order[k] == refused) {
            partition->Refuse(push.origin, refused, slices, why);
            continue;
          }
          absl::StatusOr<PushOutcome> answer = partition->Push(parts[order[k]]);
          if (k > at) {  // after the refusal: every slice gets it
            REQUIRE(answer.status().code() == absl::StatusCode::kInvalidArgument);
            ++errors;
          } else {
            REQUIRE(answer.ok());
            REQUIRE(answer->staged);
          }
        }
        INFO("slices " << slices << " refused " << refused);
        REQUIRE(errors == order.size() - 1 - at);
        const PartitionSnapshot after = partition->Snapshot();
        REQUIRE(after.table == before.table);
        REQUIRE(after.policy == before.policy);
        REQUIRE(partition->Stats().pushes == 1);
      }
    }
  }
}

TEST_CASE("every slice duplicated and reordered is applied exactly once") {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    // SGD with lr 1 and small integer gradients: sums are exact in float,
    // so the expected values do not depend on the order.
    // and zero initial values
    TableConfig config = DenseConfig(OptimizerKind::kSgd, 1.0f);
    config.initializer.kind = InitializerKind::kZeros;
    std::unique_ptr<Partition> partition = NewDense(config);
    const std::vector<float> initial = partition->Snapshot().table.values;
    std::mt19937_64 rng(seed);
    std::vector<TestPush> pushes;
    for (int i = 0; i < 30; ++i) {
      pushes.push_back(RandomPush(rng, i % 3, i / 3 + 1, /*integer=*/true));
    }
    std::vector<PushSlice> deliveries;
    for (const TestPush& push : pushes) {
      for (const PushSlice& s : SlicesOf(push)) {
        const int copies = std::uniform_int_distribution<int>(1, 3)(rng);
        for (int c = 0; c < copies; ++c) deliveries.push_back(s);
      }
    }
    std::shuffle(deliveries.begin(), deliveries.end(), rng);
    std::vector<std::thread> threads;
    absl::Mutex mu;
    size_t duplicates = 0, refused = 0;
    for (int t = 0; t < 3; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = t; i < deliveries.size(); i += 3) {
          absl::StatusOr<PushOutcome> answer = partition->Push(deliveries[i]);
          // Counted, not REQUIREd here: Catch's assertions are not
          // thread-safe (TSan reported the race in its counters).
          absl::MutexLock lock(&mu);
          if (!answer.ok()) {
            ++refused;
          } else if (answer->duplicate) {
            ++duplicates;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    REQUIRE(refused == 0);
    size_t slices = 0;
    std::vector<float> expected = initial;
    for (const TestPush& push : pushes) {
      slices += push.slices;
      for (uint64_t i = 0; i < kSize; ++i) expected[i] -= push.gradient[i];
    }
    INFO("seed " << seed);
    REQUIRE(partition->version() == pushes.size());
    REQUIRE(duplicates == deliveries.size() - slices);
    REQUIRE(partition->Stats().duplicates == duplicates);
    REQUIRE(partition->Stats().pushes == pushes.size());
    REQUIRE(partition->Snapshot().table.values == expected);
  }
}

TEST_CASE("finite gradients near the float limit never make values non-finite") {
  const float kMax = std::numeric_limits<float>::max();
  for (OptimizerKind optimizer :
       {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdagrad,
        OptimizerKind::kAdam, OptimizerKind::kFtrl}) {
    for (float lr : {0.01f, 1.0f, 1e20f}) {
      TableConfig config = DenseConfig(optimizer, lr);
      std::unique_ptr<Partition> partition = NewDense(config);
      std::mt19937_64 rng(static_cast<uint64_t>(optimizer) * 31 + 1);
      size_t refused = 0;
      for (int i = 0; i < 40; ++i) {
        TestPush push = RandomPush(rng, 1, i + 1);
        const float magnitude = std::vector<float>{kMax, 1e38f, 1e30f, 1e19f,
                                                   1.0f}[i % 5];
        for (float& g : push.gradient) g = g > 0 ? magnitude : -magnitude;
        absl::StatusOr<PushOutcome> answer = SendShuffled(*partition, push, rng);
        if (!answer.ok()) {
          REQUIRE(answer.status().code() == absl::StatusCode::kInvalidArgument);
          ++refused;
        }
        const PartitionSnapshot now = partition->Snapshot();
        INFO("optimizer " << OptimizerKindName(optimizer) << " lr " << lr
                          << " push " << i);
        REQUIRE(AllFinite(now.table.values));
        REQUIRE(AllFinite(now.table.state));
      }
      REQUIRE(partition->Stats().nonfinite_refused == refused);
      REQUIRE(partition->version() == 40 - refused);
    }
  }
}

TEST_CASE("a snapshot taken during concurrent pushes is a prefix of the order") {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const TableConfig config = DenseConfig(OptimizerKind::kAdam);
    std::unique_ptr<Partition> partition = NewDense(config);
    ConcurrentWriters writers(*partition, seed, /*writers=*/3, /*pushes_each=*/30);
    std::vector<PartitionSnapshot> snapshots;
    while (snapshots.size() < 6) {
      snapshots.push_back(partition->Snapshot());
      std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    const std::map<uint64_t, const TestPush*> order = writers.Join();
    REQUIRE(order.size() == 90);
    for (const PartitionSnapshot& snapshot : snapshots) {
      INFO("seed " << seed << " snapshot at version " << snapshot.policy.version);
      REQUIRE(snapshot.table == Replay(config, order, snapshot.policy.version));
      // And it restores: a fresh partition holds it exactly, and knows the
      // pushes it had answered.
      std::unique_ptr<Partition> restored = NewDense(config);
      REQUIRE(restored->Restore(snapshot).ok());
      const PartitionSnapshot again = restored->Snapshot();
      REQUIRE(again.table == snapshot.table);
      REQUIRE(again.policy == snapshot.policy);
      for (const auto& [version, push] : order) {
        if (version > snapshot.policy.version) break;
        std::mt19937_64 rng(version);
        absl::StatusOr<PushOutcome> answer = SendShuffled(*restored, *push, rng);
        REQUIRE(answer.ok());
        REQUIRE(answer->duplicate);
        REQUIRE(answer->new_version == version);
      }
      REQUIRE(restored->Snapshot().table == snapshot.table);
    }
  }
}

TEST_CASE("a sparse partition's snapshot restores rows, state and versions") {
  TableConfig config = TableConfig::Sparse("emb", 4);
  config.optimizer.kind = OptimizerKind::kAdagrad;
  config.optimizer.learning_rate = 0.1f;
  REQUIRE(config.Validate().ok());
  Partition partition(std::make_unique<SparseTable>(config), RealClock::Get());
  std::mt19937_64 rng(3);
  for (uint64_t seq = 1; seq <= 20; ++seq) {
    std::vector<uint64_t> keys;
    for (uint64_t k = 0; k < 8; ++k) keys.push_back((seq * 7 + k * 13) % 50);
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    std::vector<float> rows(keys.size() * 4);
    std::normal_distribution<float> normal;
    for (float& v : rows) v = normal(rng);
    PushSlice slice;
    slice.origin = PushOrigin{1, 1, seq};
    slice.part.keys = keys;
    slice.part.values = rows;
    REQUIRE(partition.Push(slice).ok());
  }
  const PartitionSnapshot snapshot = partition.Snapshot();
  REQUIRE(snapshot.table.keys.size() == 50);
  Partition restored(std::make_unique<SparseTable>(config), RealClock::Get());
  REQUIRE(restored.Restore(snapshot).ok());
  const PartitionSnapshot again = restored.Snapshot();
  // Same rows, in whatever order the stripes hand them out.
  auto by_key = [](const TableSnapshot& t) {
    std::map<uint64_t, std::vector<float>> rows;
    for (size_t i = 0; i < t.keys.size(); ++i) {
      std::vector<float>& row = rows[t.keys[i]];
      row.assign(t.values.begin() + i * 4, t.values.begin() + (i + 1) * 4);
      row.insert(row.end(), t.state.begin() + i * 4, t.state.begin() + (i + 1) * 4);
      row.push_back(static_cast<float>(t.row_versions[i]));
    }
    return rows;
  };
  REQUIRE(by_key(again.table) == by_key(snapshot.table));
  REQUIRE(restored.version() == 20);
  // A snapshot that does not fit is refused and changes nothing.
  PartitionSnapshot bad = snapshot;
  bad.table.values.pop_back();
  REQUIRE(restored.Restore(bad).code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(by_key(restored.Snapshot().table) == by_key(snapshot.table));
}

// A sync table of 4 floats on one shard with workers 0 (incarnation 10) and
// 1 (incarnation 11) registered; leases of 5 s on a manual clock.
struct SyncPair {
  SyncPair() {
    TableConfig config = TableConfig::Dense("w", 4);
    config.consistency.kind = ConsistencyKind::kSync;
    config.consistency.num_workers = 2;
    bool created = false;
    REQUIRE(store.CreateTable(config, true, &created).ok());
    store.Register(0, 10, absl::ZeroDuration());
    store.Register(1, 11, absl::ZeroDuration());
  }
  ManualClock clock{absl::FromUnixSeconds(1000)};
  ParameterStore store{0, 1, &clock, absl::Seconds(5)};
};

TEST_CASE("a worker that leaves is not waited for and not counted dead") {
  SyncPair pair;
  ManualClock& clock = pair.clock;
  ParameterStore& store = pair.store;
  PushMeta meta;
  meta.origin = PushOrigin{0, 10, 1};
  const std::vector<float> g(4, 1.0f);
  REQUIRE(store.PushDense("w", 0, g, meta).ok());
  REQUIRE(store.GetTable("w")->open_step == 0);  // waits for worker 1
  REQUIRE(!store.Leave(1, 999));                 // not that incarnation
  REQUIRE(store.Leave(1, 11));
  REQUIRE(store.GetTable("w")->open_step == 1);  // closed without it
  clock.Advance(absl::Seconds(60));
  store.Tick();
  REQUIRE(store.Stats().lease_expirations == 1);  // worker 0 only
  bool left_seen = false;
  for (const WorkerStatus& w : store.Stats().workers) {
    if (w.worker_id == 1) left_seen = w.left && !w.live;
  }
  REQUIRE(left_seen);
}

TEST_CASE("a worker that rejoins a sync table starts at the open step") {
  SyncPair pair;
  ManualClock& clock = pair.clock;
  ParameterStore& store = pair.store;
  const std::vector<float> g(4, 1.0f);
  uint64_t seq = 1;
  auto push = [&](uint32_t worker, uint64_t incarnation, uint64_t step) {
    PushMeta meta;
    meta.origin = PushOrigin{worker, incarnation, seq++};
    meta.clock = step;
    meta.base_version = store.GetTable("w")->version;
    return store.PushDense("w", 0, g, meta);
  };
  REQUIRE(push(0, 10, 0).ok());
  REQUIRE(push(1, 11, 0).ok());
  // Worker 1 pauses past its lease; worker 0 goes on alone for 5 steps.
  clock.Advance(absl::Seconds(6));
  store.Heartbeat(0, 10);
  store.Tick();
  for (uint64_t step = 1; step <= 5; ++step) {
    REQUIRE(push(0, 10, step).ok());
    REQUIRE(store.GetTable("w")->open_step == step + 1);
  }
  // Back: it starts at the step being gathered, neither behind nor ahead.
  const Registration again = store.Register(1, 11, absl::ZeroDuration());
  REQUIRE(again.start_clock.at("w") == 6);
  absl::StatusOr<PushOutcome> on_time = push(1, 11, 6);
  REQUIRE(on_time.ok());
  REQUIRE(on_time->accepted);
  REQUIRE(store.GetTable("w")->open_step == 6);  // worker 0 not yet in
  REQUIRE(push(0, 10, 6).ok());
  REQUIRE(store.GetTable("w")->open_step == 7);
}

TEST_CASE("each worker's dedup window is charged to the budget, refused past it") {
  const TableConfig config = DenseConfig(OptimizerKind::kSgd);
  const uint64_t window = DedupWindow::WindowBytes(DedupWindow::kDefaultPerIncarnation);
  // A window holds 64 answers whose messages may be 256 bytes each: its
  // bound is tens of KiB, not a few bytes.
  REQUIRE(window > 64 * 256);
  MemoryBudget budget(3 * window + window / 2);  // room for three windows
  PartitionLimits limits;
  limits.budget = &budget;
  auto partition = std::make_unique<Partition>(
      std::make_unique<DenseTable>(config, Range{0, kSize}), RealClock::Get(),
      limits);
  std::mt19937_64 rng(11);
  for (uint32_t worker = 0; worker < 3; ++worker) {
    TestPush push = RandomPush(rng, worker, 1);
    REQUIRE(SendShuffled(*partition, push, rng).ok());
    // A second push of the same incarnation needs no new window.
    push.origin.seq = 2;
    REQUIRE(SendShuffled(*partition, push, rng).ok());
    REQUIRE(budget.used(BudgetUse::kWorkerState) == (worker + 1) * window);
  }
  const TableSnapshot before = partition->Snapshot().table;
  const uint64_t version = partition->version();
  TestPush fourth = RandomPush(rng, 3, 1);
  fourth.slices = 1;
  absl::StatusOr<PushOutcome> refused = SendShuffled(*partition, fourth, rng);
  REQUIRE(refused.status().code() == absl::StatusCode::kResourceExhausted);
  REQUIRE_THAT(std::string(refused.status().message()),
               Catch::Contains("nothing of this push was applied"));
  REQUIRE(partition->version() == version);
  REQUIRE(partition->Snapshot().table == before);
  REQUIRE(budget.used(BudgetUse::kWorkerState) == 3 * window);
  // Seq 0 (a client that does not dedup) needs no window.
  fourth.origin.seq = 0;
  REQUIRE(SendShuffled(*partition, fourth, rng).ok());
  // Dropping the table part gives every window's charge back.
  partition.reset();
  REQUIRE(budget.used(BudgetUse::kWorkerState) == 0);
}

}  // namespace
}  // namespace taups
