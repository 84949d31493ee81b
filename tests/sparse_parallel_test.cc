// SparseTable's stripes shared among an TaskPool's cores: a large pull,
// push (with per-row tau) and tau measurement handled stripe by stripe on
// several threads leave the same rows, optimizer state, row versions,
// counters and answers, bit for bit, as the serial pass; for every
// optimizer rule, unbounded and bounded (lru, lfu) tables and admission;
// also with two callers sharing one pool at once.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/task_pool.h"
#include "server/push_types.h"
#include "server/sparse_table.h"

namespace taups {
namespace {

constexpr uint32_t kDim = 8;

TableConfig Emb(OptimizerKind kind, uint64_t max_rows,
                SparseEvictionKind eviction, uint32_t admit_after) {
  TableConfig config = TableConfig::Sparse("emb", kDim);
  config.optimizer.kind = kind;
  config.optimizer.learning_rate = 0.05f;
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.5f;
  config.sparse_max_rows = max_rows;
  config.sparse_eviction = eviction;
  config.sparse_admit_after = admit_after;
  return config;
}

// `n` distinct keys drawn from [0, space), in a random order.
std::vector<uint64_t> DistinctKeys(std::mt19937_64& rng, size_t n,
                                   uint64_t space) {
  std::vector<uint64_t> all(space);
  for (uint64_t k = 0; k < space; ++k) all[k] = k * 0x9e3779b97f4a7c15ULL;
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

std::vector<float> Gradients(std::mt19937_64& rng, size_t rows) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> g(rows * kDim);
  for (float& v : g) v = dist(rng);
  return g;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// A table's rows keyed by key: values, state and version, as bytes to
// compare (Export's order within a stripe is the hash map's).
std::map<uint64_t, std::vector<char>> RowsByKey(const SparseTable& table) {
  const TableSnapshot snapshot = table.Export();
  const size_t n = snapshot.keys.size();
  const size_t state_per_row = n == 0 ? 0 : snapshot.state.size() / n;
  std::map<uint64_t, std::vector<char>> rows;
  for (size_t i = 0; i < n; ++i) {
    std::vector<char>& bytes = rows[snapshot.keys[i]];
    const char* values =
        reinterpret_cast<const char*>(snapshot.values.data() + i * kDim);
    const char* state = reinterpret_cast<const char*>(snapshot.state.data() +
                                                      i * state_per_row);
    bytes.insert(bytes.end(), values, values + kDim * sizeof(float));
    bytes.insert(bytes.end(), state, state + state_per_row * sizeof(float));
    const char* version =
        reinterpret_cast<const char*>(&snapshot.row_versions[i]);
    bytes.insert(bytes.end(), version, version + sizeof(uint64_t));
  }
  return rows;
}

struct Answers {
  std::vector<float> pulled;
  std::vector<uint64_t> pulled_versions;
  std::vector<uint64_t> push_taus;
  RowTauSummary push_summary;
  bool push_measured = false;
  std::vector<uint64_t> measured_taus;
  RowTauSummary measured_summary;
};

bool SameSummary(const RowTauSummary& a, const RowTauSummary& b) {
  return a.rows == b.rows && a.sum == b.sum && a.max == b.max &&
         a.reborn == b.reborn;
}

void RequireSameAnswers(const Answers& a, const Answers& b) {
  REQUIRE(SameBits(a.pulled, b.pulled));
  REQUIRE(a.pulled_versions == b.pulled_versions);
  REQUIRE(a.push_measured);
  REQUIRE(b.push_measured);
  REQUIRE(a.push_taus == b.push_taus);
  REQUIRE(SameSummary(a.push_summary, b.push_summary));
  REQUIRE(a.measured_taus == b.measured_taus);
  REQUIRE(SameSummary(a.measured_summary, b.measured_summary));
}

// One round on `table`: a pull with versions of `pull_keys`, a push of
// `push_keys` measured against `bases`, and a tau measurement of
// `pull_keys` against the pull's versions.
Answers Round(SparseTable& table, const std::vector<uint64_t>& pull_keys,
              const std::vector<uint64_t>& push_keys,
              const std::vector<float>& gradients,
              const std::vector<uint64_t>& bases) {
  Answers out;
  out.pulled.resize(pull_keys.size() * kDim);
  out.pulled_versions.resize(pull_keys.size());
  table.Pull(pull_keys, absl::MakeSpan(out.pulled),
             absl::MakeSpan(out.pulled_versions));

  out.push_taus.assign(push_keys.size(), 0);
  RowTauSink push_sink;
  push_sink.base_versions = bases;
  push_sink.taus = absl::MakeSpan(out.push_taus);
  GradientPart part;
  part.keys = push_keys;
  part.values = gradients;
  part.row_tau = &push_sink;
  table.Apply(part, 0.75f, 0);
  out.push_measured = push_sink.measured;
  out.push_summary = push_sink.summary;

  out.measured_taus.assign(pull_keys.size(), 0);
  RowTauSink measure_sink;
  measure_sink.base_versions = out.pulled_versions;
  measure_sink.taus = absl::MakeSpan(out.measured_taus);
  table.MeasureRowTau(pull_keys, &measure_sink);
  out.measured_summary = measure_sink.summary;
  return out;
}

// What a run of rounds answered, and the table after it. Made without
// Catch2 assertions, so a second thread can make one.
struct Trace {
  std::vector<Answers> rounds;
  std::map<uint64_t, std::vector<char>> rows;
  SparseTable::Counters counters;
  uint64_t row_taus = 0;
  double row_tau_sum = 0;
};

// Four rounds of random keys (from `seed`) on a table of `config` that
// shares its stripes with `pool` from the first key on (null: serial).
Trace RunRounds(const TableConfig& config, TaskPool* pool, uint64_t seed) {
  SparseTable table(config);
  table.SetTaskPool(pool, 1);
  std::mt19937_64 rng(seed);
  constexpr uint64_t kSpace = 6000;
  Trace trace;
  std::vector<uint64_t> last_pull_keys, last_pull_versions;
  for (int round = 0; round < 4; ++round) {
    const std::vector<uint64_t> pull_keys = DistinctKeys(rng, 3000, kSpace);
    const std::vector<uint64_t> push_keys = DistinctKeys(rng, 3000, kSpace);
    const std::vector<float> gradients = Gradients(rng, push_keys.size());
    // The push's bases: the last pull's versions where it read the key,
    // unknown elsewhere, and a base from the future for every 97th key
    // (counted as reborn).
    std::vector<uint64_t> bases(push_keys.size(), kUnknownRowVersion);
    for (size_t i = 0; i < push_keys.size(); ++i) {
      auto it = std::find(last_pull_keys.begin(), last_pull_keys.end(),
                          push_keys[i]);
      if (it != last_pull_keys.end()) {
        bases[i] = last_pull_versions[it - last_pull_keys.begin()];
      }
      if (i % 97 == 0) bases[i] = 1000;
    }
    trace.rounds.push_back(Round(table, pull_keys, push_keys, gradients, bases));
    last_pull_keys = pull_keys;
    last_pull_versions = trace.rounds.back().pulled_versions;
  }
  trace.rows = RowsByKey(table);
  trace.counters = table.counters();
  trace.row_taus = table.row_tau().count();
  trace.row_tau_sum = table.row_tau().sum();
  return trace;
}

void RequireSameTraces(const Trace& a, const Trace& b) {
  REQUIRE(a.rounds.size() == b.rounds.size());
  for (size_t r = 0; r < a.rounds.size(); ++r) {
    INFO("round " << r);
    RequireSameAnswers(a.rounds[r], b.rounds[r]);
  }
  REQUIRE(a.counters.rows == b.counters.rows);
  REQUIRE(a.counters.evictions == b.counters.evictions);
  REQUIRE(a.counters.refused == b.counters.refused);
  REQUIRE(a.rows == b.rows);
  REQUIRE(a.row_taus == b.row_taus);
  REQUIRE(a.row_tau_sum == b.row_tau_sum);
}

// The same rounds serial and on `pool`, compared.
void RunBoth(const TableConfig& config, TaskPool& pool, uint64_t seed) {
  const Trace serial = RunRounds(config, nullptr, seed);
  const Trace parallel = RunRounds(config, &pool, seed);
  REQUIRE(!serial.rows.empty());
  RequireSameTraces(serial, parallel);
}

TEST_CASE("stripes on several cores give the serial pass's bits") {
  TaskPool pool(3);
  REQUIRE(pool.threads() == 3);
  const OptimizerKind kinds[] = {OptimizerKind::kSgd, OptimizerKind::kAdagrad,
                                 OptimizerKind::kMomentum, OptimizerKind::kAdam,
                                 OptimizerKind::kFtrl};
  for (OptimizerKind kind : kinds) {
    SECTION(absl::StrCat("unbounded, optimizer ", static_cast<int>(kind))) {
      RunBoth(Emb(kind, 0, SparseEvictionKind::kLru, 0), pool, 7);
    }
  }
  // 64 stripes of 30 rows: most pushes and pulls evict.
  SECTION("bounded, lru") {
    RunBoth(Emb(OptimizerKind::kAdagrad, 64 * 30, SparseEvictionKind::kLru, 0),
            pool, 8);
  }
  SECTION("bounded, lfu") {
    RunBoth(Emb(OptimizerKind::kAdam, 64 * 30, SparseEvictionKind::kLfu, 0),
            pool, 9);
  }
  SECTION("admission after two touches") {
    RunBoth(Emb(OptimizerKind::kSgd, 0, SparseEvictionKind::kLru, 2), pool, 10);
  }
}

TEST_CASE("two callers share one pool at once") {
  TaskPool pool(2);
  const TableConfig config =
      Emb(OptimizerKind::kMomentum, 64 * 40, SparseEvictionKind::kLru, 0);
  // Two tables on two threads, one pool; each is compared with its serial
  // run afterwards, on this thread.
  Trace other_parallel;
  std::thread other([&] { other_parallel = RunRounds(config, &pool, 21); });
  const Trace mine_parallel = RunRounds(config, &pool, 22);
  other.join();
  RequireSameTraces(RunRounds(config, nullptr, 21), other_parallel);
  RequireSameTraces(RunRounds(config, nullptr, 22), mine_parallel);
}

}  // namespace
}  // namespace taups
