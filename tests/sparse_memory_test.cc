// Bounded sparse tables: row limit and byte budget with LRU or LFU eviction,
// ttl expiry, admission by sightings and by probability, and
// re-initialization of rows that come back.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "common/clock.h"
#include "common/initializer.h"
#include "common/shard_map.h"
#include "server/admission_filter.h"
#include "server/lfu_order.h"
#include "server/parameter_store.h"
#include "server/stripe_rows.h"

namespace taups {
namespace {

constexpr uint32_t kNo = StripeRows::kNoSlot;

StripeOptions Limit(size_t max_rows,
                    SparseEvictionKind eviction = SparseEvictionKind::kLru) {
  StripeOptions options;
  options.max_rows = max_rows;
  options.eviction = eviction;
  return options;
}

bool Has(const StripeRows& rows, uint64_t key) {
  return rows.PeekVersion(key, 0).has_value();
}

TEST_CASE("a stripe evicts exactly its least recently used row") {
  StripeRows rows(/*row_stride=*/2, Limit(2));
  REQUIRE(rows.Create(1, 0) != kNo);
  REQUIRE(rows.Create(2, 0) != kNo);
  REQUIRE(rows.Find(1, 0) != kNo);  // 1 is now more recent than 2
  REQUIRE(rows.Create(3, 0) != kNo);
  REQUIRE(!Has(rows, 2));
  REQUIRE(rows.Find(1, 0) != kNo);
  REQUIRE(rows.Find(3, 0) != kNo);
  REQUIRE(rows.size() == 2);
  REQUIRE(rows.evictions() == 1);
  // The Finds above touched 1, then 3: 1 is now the least recently used.
  REQUIRE(rows.Create(4, 0) != kNo);
  REQUIRE(!Has(rows, 1));
  REQUIRE(Has(rows, 3));
  REQUIRE(Has(rows, 4));
}

TEST_CASE("LFU evicts the fewest-touched row, the least recent among ties") {
  StripeRows rows(2, Limit(3, SparseEvictionKind::kLfu));
  for (uint64_t key : {1, 2, 3}) REQUIRE(rows.Create(key, 0) != kNo);  // 1 each
  REQUIRE(rows.Find(1, 0) != kNo);
  REQUIRE(rows.Find(1, 0) != kNo);  // 1: 3 touches
  REQUIRE(rows.Find(3, 0) != kNo);  // 3: 2
  REQUIRE(rows.Find(2, 0) != kNo);
  REQUIRE(rows.Find(2, 0) != kNo);  // 2: 3, touched last
  // LRU would evict 1 (least recently touched); LFU evicts 3 (fewest).
  REQUIRE(rows.Create(4, 0) != kNo);
  REQUIRE(!Has(rows, 3));
  REQUIRE(Has(rows, 1));
  REQUIRE(Has(rows, 2));
  REQUIRE(rows.evictions() == 1);
  // 4 enters with one touch and is the next victim, however recent.
  REQUIRE(rows.Create(5, 0) != kNo);
  REQUIRE(!Has(rows, 4));
  // 5 reaches 3 touches: 1, 2 and 5 tie, and 1 is the least recently
  // touched of them.
  REQUIRE(rows.Find(5, 0) != kNo);
  REQUIRE(rows.Find(5, 0) != kNo);
  REQUIRE(rows.Create(6, 0) != kNo);
  REQUIRE(!Has(rows, 1));
  REQUIRE(Has(rows, 2));
  REQUIRE(Has(rows, 5));
  REQUIRE(Has(rows, 6));
  REQUIRE(rows.evictions() == 3);
}

// A plain model of both policies: per key, touches since admission and the
// time of the last touch; the victim is the minimum of (touches, last) for
// LFU and of (last) for LRU.
struct ReferenceStripe {
  size_t max_rows;
  bool lfu;
  uint64_t now = 0;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> rows;  // key -> (count, last)
  void Touch(uint64_t key) {
    ++now;
    auto it = rows.find(key);
    if (it != rows.end()) {
      ++it->second.first;
      it->second.second = now;
      return;
    }
    if (rows.size() == max_rows) {
      auto victim = rows.begin();
      for (auto r = rows.begin(); r != rows.end(); ++r) {
        const auto order = [&](const auto& x) {
          return lfu ? x->second : std::make_pair(uint64_t{0}, x->second.second);
        };
        if (order(r) < order(victim)) victim = r;
      }
      rows.erase(victim);
    }
    rows[key] = {1, now};
  }
};

TEST_CASE("LRU and LFU match a reference model on random touches") {
  for (bool lfu : {false, true}) {
    StripeRows rows(1, Limit(8, lfu ? SparseEvictionKind::kLfu
                                    : SparseEvictionKind::kLru));
    ReferenceStripe reference{8, lfu, 0, {}};
    uint64_t state = 12345;
    for (int step = 0; step < 20000; ++step) {
      state = MixKey(state);
      // Skewed keys so counts differ: half the touches go to 6 hot keys.
      const uint64_t key = (state & 1) ? (state >> 8) % 6 : (state >> 8) % 40;
      if (rows.Find(key, 0) == kNo) REQUIRE(rows.Create(key, 0) != kNo);
      reference.Touch(key);
      REQUIRE(rows.size() == reference.rows.size());
      for (const auto& [k, entry] : reference.rows) REQUIRE(Has(rows, k));
    }
  }
}

TEST_CASE("LfuOrder counts touches and survives bucket churn") {
  LfuOrder order(4);
  order.Add(0);
  order.Add(1);
  order.Touch(0);
  order.Touch(0);
  REQUIRE(order.count(0) == 3);
  REQUIRE(order.count(1) == 1);
  REQUIRE(order.victim() == 1);
  order.Remove(1);
  REQUIRE(order.victim() == 0);
  order.Add(2);
  REQUIRE(order.victim() == 2);
  order.Touch(2);
  order.Touch(2);
  REQUIRE(order.victim() == 0);  // tie at 3: slot 0 reached it first
  order.Remove(0);
  order.Remove(2);
  REQUIRE(order.victim() == LfuOrder::kNil);
}

TEST_CASE("a key is admitted on its n-th sighting") {
  StripeOptions options;
  options.admit_after = 3;
  StripeRows rows(1, options);
  REQUIRE(rows.Create(77, 0) == kNo);
  REQUIRE(rows.Create(77, 0) == kNo);
  REQUIRE(rows.Create(77, 0) != kNo);
  REQUIRE(rows.refused() == 2);
  REQUIRE(rows.Create(78, 0) == kNo);  // another key starts from zero
}

TableConfig Bounded(uint64_t max_rows, uint32_t admit_after) {
  TableConfig config = TableConfig::Sparse("emb", 4);
  config.optimizer.learning_rate = 1.0f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.1f;
  config.initializer.seed = 5;
  config.sparse_max_rows = max_rows;
  config.sparse_admit_after = admit_after;
  return config;
}

PushMeta Meta(uint64_t seq, uint64_t base) {
  PushMeta meta;
  meta.origin = PushOrigin{0, 1, seq};
  meta.base_version = base;
  return meta;
}

std::vector<uint64_t> Range(uint64_t begin, uint64_t end) {
  std::vector<uint64_t> keys;
  for (uint64_t k = begin; k < end; ++k) keys.push_back(k);
  return keys;
}

TEST_CASE("memory stays under the row budget while far more ids stream in") {
  ParameterStore store(0, 1);
  bool created = false;
  REQUIRE(store.CreateTable(Bounded(640, 0), false, &created).ok());
  std::vector<float> rows(256 * 4);
  uint64_t version = 0;
  for (uint64_t batch = 0; batch < 400; ++batch) {  // 102,400 distinct ids
    REQUIRE(store.PullSparse("emb", Range(batch * 256, batch * 256 + 256),
                             absl::MakeSpan(rows)).ok());
    REQUIRE(store.GetTable("emb")->sparse_rows <= 640);
  }
  TableInfo info = *store.GetTable("emb");
  REQUIRE(info.sparse_rows == 640);  // 64 stripes x 10 rows, all full
  // Every id was seen once: each row beyond the budget evicted one.
  REQUIRE(info.sparse_evictions == 102400 - 640);
  // Pushes of new ids stay within the budget too.
  for (uint64_t batch = 400; batch < 440; ++batch) {
    REQUIRE(store.PushSparse("emb", Range(batch * 256, batch * 256 + 256),
                             std::vector<float>(256 * 4, 0.01f),
                             Meta(batch + 1, version)).ok());
    ++version;
    REQUIRE(store.GetTable("emb")->sparse_rows <= 640);
  }
  info = *store.GetTable("emb");
  REQUIRE(info.sparse_evictions == 110 * 1024 - 640);
}

TEST_CASE("the byte budget bounds the measured footprint under every policy") {
  struct Case {
    const char* name;
    SparseEvictionKind eviction;
    double ttl_s;
    float admit_probability;
    OptimizerKind optimizer;
    uint64_t budget;
  };
  const Case cases[] = {
      {"lru sgd", SparseEvictionKind::kLru, 0, 1.0f, OptimizerKind::kSgd, 1 << 20},
      {"lfu adam ttl", SparseEvictionKind::kLfu, 3600, 1.0f, OptimizerKind::kAdam,
       1 << 20},
      {"lru adagrad admission", SparseEvictionKind::kLru, 0, 0.5f,
       OptimizerKind::kAdagrad, 3 << 20},
      {"lfu tiny stripes", SparseEvictionKind::kLfu, 0, 1.0f, OptimizerKind::kSgd,
       160 << 10},
  };
  for (const Case& c : cases) {
    SECTION(c.name) {
      ParameterStore store(0, 1);
      TableConfig config = Bounded(0, 0);
      config.dim = 8;
      config.optimizer.kind = c.optimizer;
      config.sparse_eviction = c.eviction;
      config.sparse_ttl_s = c.ttl_s;
      config.sparse_admit_probability = c.admit_probability;
      config.sparse_max_bytes = c.budget;
      bool created = false;
      REQUIRE(store.CreateTable(config, false, &created).ok());
      const uint64_t limit = store.GetTable("emb")->sparse_row_limit;
      const uint64_t row_bytes = SparseTable::RowFootprintBytes(config);
      REQUIRE(limit >= 64);
      REQUIRE(limit * row_bytes <= c.budget);
      std::vector<float> rows(512 * 8);
      uint64_t state = 7;
      // Zipf-like reuse plus a stream of fresh ids: 20x the limit in ids.
      const uint64_t batches = 20 * limit / 512 + 4;
      for (uint64_t batch = 0; batch < batches; ++batch) {
        std::vector<uint64_t> keys;
        for (int i = 0; i < 512; ++i) {
          state = MixKey(state);
          keys.push_back(i % 2 == 0 ? state % 97 : batch * 512 + i);
        }
        REQUIRE(store.PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
        const TableInfo info = *store.GetTable("emb");
        REQUIRE(info.sparse_bytes <= c.budget);
        REQUIRE(info.sparse_rows <= limit);
      }
      const TableInfo info = *store.GetTable("emb");
      INFO("rows " << info.sparse_rows << " of " << limit << ", bytes "
                   << info.sparse_bytes << " of " << c.budget);
      REQUIRE(info.sparse_evictions > 0);
      REQUIRE(info.sparse_rows >= limit / 64 * 64 * 9 / 10);  // full, or nearly
      REQUIRE(info.sparse_bytes >=
              (c.budget - 64 * SparseTable::kStripeFixedBytes) / 3);  // used
    }
  }
}

TEST_CASE("a byte budget below one row per stripe is refused") {
  ParameterStore store(0, 1);
  TableConfig config = Bounded(0, 0);
  config.sparse_max_bytes = 64 * SparseTable::kStripeFixedBytes + 1000;
  bool created = false;
  REQUIRE(store.CreateTable(config, false, &created).status().code() ==
          absl::StatusCode::kInvalidArgument);
  config.sparse_max_bytes = 64 * SparseTable::kStripeFixedBytes +
                            64 * SparseTable::RowFootprintBytes(config);
  REQUIRE(store.CreateTable(config, false, &created).ok());
  REQUIRE(store.GetTable("emb")->sparse_row_limit == 64);
}

TEST_CASE("rows idle for the ttl expire on the tick, exactly those") {
  ManualClock clock(absl::FromUnixSeconds(1000));
  ParameterStore store(0, 1, &clock);
  TableConfig config = Bounded(0, 0);
  config.sparse_ttl_s = 10;
  bool created = false;
  REQUIRE(store.CreateTable(config, false, &created).ok());
  const std::vector<uint64_t> old_keys = Range(0, 100);
  const std::vector<uint64_t> kept = Range(0, 30);
  const std::vector<uint64_t> fresh = Range(1000, 1020);
  // Every old key gets one update: version 1, values moved off the initial.
  REQUIRE(store.PushSparse("emb", old_keys, std::vector<float>(100 * 4, 1.0f),
                           Meta(1, 0)).ok());
  clock.Advance(absl::Seconds(6));
  std::vector<float> rows(100 * 4);
  REQUIRE(store.PullSparse("emb", kept, absl::MakeSpan(rows).subspan(0, 30 * 4)).ok());
  REQUIRE(store.PullSparse("emb", fresh, absl::MakeSpan(rows).subspan(0, 20 * 4)).ok());
  clock.Advance(absl::Seconds(3));  // old keys idle 9 s: not yet
  store.Tick();
  REQUIRE(store.GetTable("emb")->sparse_rows == 120);
  clock.Advance(absl::Seconds(1));  // idle exactly 10 s: expired
  store.Tick();
  TableInfo info = *store.GetTable("emb");
  REQUIRE(info.sparse_rows == 50);
  REQUIRE(info.sparse_ttl_expired == 70);
  REQUIRE(info.sparse_evictions == 0);
  // The survivors are exactly the touched ones: versions tell.
  std::vector<uint64_t> versions(100);
  REQUIRE(store.PullSparse("emb", old_keys, absl::MakeSpan(rows), {},
                           absl::MakeSpan(versions)).ok());
  Initializer init(config.initializer, "emb");
  std::vector<float> initial(4);
  for (uint64_t k = 0; k < 100; ++k) {
    init.FillRow(k, absl::MakeSpan(initial));
    if (k < 30) {
      REQUIRE(versions[k] == 1);
      REQUIRE(rows[k * 4] == Approx(initial[0] - 1.0f));
    } else {
      REQUIRE(versions[k] == 0);  // re-created
      REQUIRE(std::vector<float>(rows.begin() + k * 4, rows.begin() + k * 4 + 4) ==
              initial);
    }
  }
  // Lazily too: a row past its ttl is expired when next touched, before any
  // tick sweeps it.
  clock.Advance(absl::Seconds(10));
  REQUIRE(store.PullSparse("emb", {1000}, absl::MakeSpan(rows).subspan(0, 4)).ok());
  info = *store.GetTable("emb");
  REQUIRE(info.sparse_ttl_expired == 71);
  REQUIRE(info.sparse_rows == 120);  // 100 old (re-made) + 20 fresh, unswept
  store.Tick();
  info = *store.GetTable("emb");
  REQUIRE(info.sparse_rows == 1);  // only key 1000, touched just now
  REQUIRE(info.sparse_ttl_expired == 71 + 119);
}

TEST_CASE("a full stripe expires an idle row before evicting a live one") {
  StripeOptions options = Limit(2);
  options.ttl_ns = 100;
  StripeRows rows(1, options);
  REQUIRE(rows.Create(1, 0) != kNo);
  REQUIRE(rows.Create(2, 50) != kNo);
  REQUIRE(rows.Create(3, 120) != kNo);  // 1 idle 120 >= 100: expired
  REQUIRE(rows.ttl_expired() == 1);
  REQUIRE(rows.evictions() == 0);
  REQUIRE(rows.Create(4, 130) != kNo);  // 2 idle 80: live, evicted
  REQUIRE(rows.evictions() == 1);
  REQUIRE(!Has(rows, 2));
}

TEST_CASE("an evicted row that comes back is re-initialized, version 0") {
  ParameterStore store(0, 1);
  bool created = false;
  const TableConfig config = Bounded(64, 0);  // one row per stripe
  REQUIRE(store.CreateTable(config, false, &created).ok());
  std::vector<float> initial(4);
  Initializer(config.initializer, "emb").FillRow(9, absl::MakeSpan(initial));
  const std::vector<uint64_t> key = {9};
  for (uint64_t v = 0; v < 3; ++v) {
    REQUIRE(store.PushSparse("emb", key, std::vector<float>{1, 1, 1, 1},
                             Meta(v + 1, v)).ok());
  }
  std::vector<float> row(4);
  std::vector<uint64_t> version(1);
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row), {},
                           absl::MakeSpan(version)).ok());
  REQUIRE(row[0] == Approx(initial[0] - 3.0f));
  REQUIRE(version[0] == 3);
  // Flood key 9's stripe (and every other) until it is evicted.
  for (uint64_t k = 100; store.GetTable("emb")->sparse_evictions < 200; ++k) {
    const std::vector<uint64_t> other = {k};
    REQUIRE(store.PullSparse("emb", other, absl::MakeSpan(row)).ok());
  }
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row), {},
                           absl::MakeSpan(version)).ok());
  REQUIRE(row == initial);
  REQUIRE(version[0] == 0);
  // A push computed on the old row (version 3) finds it reborn.
  PushMeta meta = Meta(10, 3);
  const std::vector<uint64_t> stale_base = {3};
  meta.row_base_versions = stale_base;
  auto pushed = store.PushSparse("emb", key, std::vector<float>{1, 1, 1, 1}, meta);
  REQUIRE(pushed.ok());
  REQUIRE(pushed->row_tau.reborn == 1);
  REQUIRE(pushed->row_taus == std::vector<uint64_t>{0});  // its version was 0
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row), {},
                           absl::MakeSpan(version)).ok());
  REQUIRE(version[0] == 1);
}

TEST_CASE("keys below the admission threshold read initial values, pushes drop") {
  ParameterStore store(0, 1);
  bool created = false;
  const TableConfig config = Bounded(0, 2);
  REQUIRE(store.CreateTable(config, false, &created).ok());
  std::vector<float> initial(4);
  Initializer(config.initializer, "emb").FillRow(3, absl::MakeSpan(initial));
  const std::vector<uint64_t> key = {3};
  // First sighting: a push, dropped.
  REQUIRE(store.PushSparse("emb", key, std::vector<float>{5, 5, 5, 5}, Meta(1, 0)).ok());
  REQUIRE(store.GetTable("emb")->sparse_rows == 0);
  REQUIRE(store.GetTable("emb")->sparse_refused == 1);
  // Second sighting admits it: the row is born from the initializer.
  std::vector<float> row(4);
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row == initial);
  REQUIRE(store.GetTable("emb")->sparse_rows == 1);
  REQUIRE(store.PushSparse("emb", key, std::vector<float>{1, 1, 1, 1}, Meta(2, 1)).ok());
  REQUIRE(store.PullSparse("emb", key, absl::MakeSpan(row)).ok());
  REQUIRE(row[2] == Approx(initial[2] - 1.0f));
}

// Sights each of `keys` owned by `store` twice: a push of 1.0 (sighting 1),
// then a pull with row versions (sighting 2). Returns the keys the push
// found admitted: their rows took the update (version 1).
std::set<uint64_t> AdmittedOnFirstSighting(ParameterStore& store,
                                           const std::vector<uint64_t>& keys) {
  std::vector<uint64_t> mine;
  for (uint64_t k : keys) {
    if (SparseShardOf(k, store.num_shards()) == store.shard_index()) mine.push_back(k);
  }
  std::set<uint64_t> admitted;
  REQUIRE(store.PushSparse("emb", mine, std::vector<float>(mine.size() * 4, 1.0f),
                           Meta(1, 0)).ok());
  std::vector<float> rows(mine.size() * 4);
  std::vector<uint64_t> versions(mine.size());
  REQUIRE(store.PullSparse("emb", mine, absl::MakeSpan(rows), {},
                           absl::MakeSpan(versions)).ok());
  for (size_t i = 0; i < mine.size(); ++i) {
    REQUIRE(versions[i] <= 1);
    if (versions[i] == 1) admitted.insert(mine[i]);
  }
  return admitted;
}

TEST_CASE("admission by probability admits about p of keys, deterministically") {
  TableConfig config = Bounded(0, 0);
  config.sparse_admit_probability = 0.25f;
  const std::vector<uint64_t> keys = Range(5000000, 5020000);
  const double n = keys.size();
  ParameterStore one(0, 1);
  bool created = false;
  REQUIRE(one.CreateTable(config, false, &created).ok());
  const std::set<uint64_t> admitted = AdmittedOnFirstSighting(one, keys);
  // About p of the keys on their first sighting, within 5 standard
  // deviations; about 1 - (1 - p)^2 after their second.
  INFO("admitted " << admitted.size() << " of " << keys.size());
  REQUIRE(std::abs(admitted.size() - 0.25 * n) < 5 * std::sqrt(n * 0.25 * 0.75));
  const TableInfo info = *one.GetTable("emb");
  INFO("rows after two sightings " << info.sparse_rows);
  REQUIRE(std::abs(info.sparse_rows - 0.4375 * n) <
          5 * std::sqrt(n * 0.4375 * 0.5625));
  REQUIRE(info.sparse_refused == (n - admitted.size()) + (n - info.sparse_rows));

  // Two shards, keys in reverse order: exactly the same keys admitted.
  const std::vector<uint64_t> reversed(keys.rbegin(), keys.rend());
  std::set<uint64_t> admitted_two;
  uint64_t rows_two = 0;
  for (uint32_t s = 0; s < 2; ++s) {
    ParameterStore shard(s, 2);
    REQUIRE(shard.CreateTable(config, false, &created).ok());
    const std::set<uint64_t> part = AdmittedOnFirstSighting(shard, reversed);
    admitted_two.insert(part.begin(), part.end());
    rows_two += shard.GetTable("emb")->sparse_rows;
  }
  REQUIRE(admitted_two == admitted);
  REQUIRE(rows_two == info.sparse_rows);
}

TEST_CASE("the sightings a key needs follow its own geometric draw") {
  AdmissionFilter filter(/*admit_after=*/0, /*admit_probability=*/0.5f, 99);
  AdmissionFilter same(0, 0.5f, 99);
  AdmissionFilter other_table(0, 0.5f, 100);
  std::map<uint32_t, int> histogram;
  int differ = 0;
  for (uint64_t k = 0; k < 40000; ++k) {
    const uint32_t n = filter.SightingsNeeded(k);
    REQUIRE(n >= 1);
    REQUIRE(same.SightingsNeeded(k) == n);
    differ += other_table.SightingsNeeded(k) != n;
    ++histogram[n];
  }
  // Geometric(1/2): P(n) = 2^-n.
  REQUIRE(std::abs(histogram[1] - 20000) < 500);
  REQUIRE(std::abs(histogram[2] - 10000) < 400);
  REQUIRE(std::abs(histogram[3] - 5000) < 300);
  REQUIRE(differ > 15000);  // another table draws independently
  // With admit_after too, the larger requirement wins.
  AdmissionFilter both(3, 0.5f, 99);
  for (uint64_t k = 0; k < 1000; ++k) {
    REQUIRE(both.SightingsNeeded(k) == std::max<uint32_t>(3, filter.SightingsNeeded(k)));
  }
  // A key is admitted on exactly that sighting.
  AdmissionFilter counting(0, 0.5f, 99);
  for (uint64_t k = 0; k < 200; ++k) {
    const uint32_t needed = counting.SightingsNeeded(k);
    for (uint32_t s = 1; s < needed; ++s) REQUIRE(!counting.Sight(k));
    REQUIRE(counting.Sight(k));
  }
}

TEST_CASE("sparse limits are validated") {
  TableConfig config = Bounded(10, 0);
  REQUIRE(config.Validate().code() == absl::StatusCode::kInvalidArgument);
  TableConfig dense = TableConfig::Dense("d", 4);
  dense.sparse_max_rows = 100;
  REQUIRE(dense.Validate().code() == absl::StatusCode::kInvalidArgument);
  dense.sparse_max_rows = 0;
  dense.sparse_ttl_s = 5;
  REQUIRE(dense.Validate().code() == absl::StatusCode::kInvalidArgument);
  TableConfig sparse = Bounded(0, 0);
  sparse.sparse_admit_probability = 0.0f;
  REQUIRE(sparse.Validate().code() == absl::StatusCode::kInvalidArgument);
  sparse.sparse_admit_probability = 1.5f;
  REQUIRE(sparse.Validate().code() == absl::StatusCode::kInvalidArgument);
  sparse.sparse_admit_probability = 1.0f;
  sparse.sparse_ttl_s = -1;
  REQUIRE(sparse.Validate().code() == absl::StatusCode::kInvalidArgument);
  sparse.sparse_ttl_s = 1e10;  // past int64 nanoseconds (checkpoint_fuzzer)
  REQUIRE(sparse.Validate().code() == absl::StatusCode::kInvalidArgument);
  sparse.sparse_ttl_s = 1e9;
  REQUIRE(sparse.Validate().ok());
  sparse.sparse_ttl_s = 30;
  sparse.sparse_eviction = SparseEvictionKind::kLfu;
  REQUIRE(sparse.Validate().ok());
}

}  // namespace
}  // namespace taups
