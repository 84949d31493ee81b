#include "bench/sparse_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/key_sampler.h"
#include "bench/row_map_reference.h"
#include "common/initializer.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

struct KeySet {
  const char* name;
  std::vector<uint64_t> keys;
  size_t unique = 0;
};

// What raw gRPC and memcpy achieve on one call's bytes.
struct References {
  Measurement pull_raw;  // keys up, then values down: two unary calls
  Measurement push_raw;  // keys + gradients up: one unary call
  double memcpy_gbps = 0;
};

// The hash-map reference's figures for one key set (absent: no reference
// for this dim).
struct MapFigures {
  std::optional<Measurement> cold, warm, push;
};

TableConfig SparseConfig(const std::string& name, uint32_t dim) {
  TableConfig config = TableConfig::Sparse(name, dim);
  // Random rows, as embeddings start: lazy creation does real work.
  config.initializer.kind = InitializerKind::kUniform;
  config.initializer.scale = 0.01f;
  config.initializer.seed = 1;
  return config;
}

absl::StatusOr<References> MeasureReferences(const SparseBenchConfig& config,
                                             RawTransferClient* raw) {
  const size_t key_bytes = config.rows * sizeof(uint64_t);
  const size_t value_bytes = config.rows * config.dim * sizeof(float);
  const size_t payload = key_bytes + value_bytes;
  std::vector<char> src(payload, 'k');
  std::vector<char> dst(payload, 0);
  References refs;
  const MeasureOptions measure =
      WithServerCpu(config.measure, config.raw_server_cpu);
  ASSIGN_OR_RETURN(
      Measurement pull, Measure(measure, [&]() -> absl::Status {
        RETURN_IF_ERROR(
            raw->Upload(absl::string_view(src.data(), key_bytes), 0));
        return raw->Download(absl::MakeSpan(dst.data(), value_bytes), 0);
      }));
  refs.pull_raw = pull;
  ASSIGN_OR_RETURN(
      Measurement push, Measure(measure, [&]() -> absl::Status {
        return raw->Upload(absl::string_view(src.data(), payload), 0);
      }));
  refs.push_raw = push;
  ASSIGN_OR_RETURN(Measurement copy,
                   Measure(config.measure, [&]() -> absl::Status {
                     std::memcpy(dst.data(), src.data(), payload);
                     KeepMemory(dst.data());
                     return absl::OkStatus();
                   }));
  refs.memcpy_gbps = copy.GigabytesPerSecond(payload);
  std::fprintf(stderr,
               "  sparse references: raw pull %.3f GB/s, raw push %.3f GB/s, "
               "memcpy %.3f GB/s\n",
               pull.GigabytesPerSecond(payload),
               push.GigabytesPerSecond(payload), refs.memcpy_gbps);
  return refs;
}

// The hash map doing a cold pull (fresh map), warm pulls and pushes of `keys`.
absl::StatusOr<MapFigures> MeasureMap(const SparseBenchConfig& config,
                                      const std::vector<uint64_t>& keys,
                                      const Initializer& init) {
  MapFigures figures;
  std::unique_ptr<RowMapReference> map = RowMapReference::Create(config.dim);
  if (map == nullptr) return figures;
  std::vector<float> out(keys.size() * config.dim);
  const std::vector<float> gradients(keys.size() * config.dim, 1e-4f);
  Measurement cold;
  for (int r = 0; r < config.cold_repeats; ++r) {
    map->Clear();
    ASSIGN_OR_RETURN(Measurement once, MeasureOnce([&]() -> absl::Status {
                       map->Pull(keys, absl::MakeSpan(out), init);
                       KeepMemory(out.data());
                       return absl::OkStatus();
                     }));
    cold = Combine(cold, once);
  }
  figures.cold = cold;
  ASSIGN_OR_RETURN(figures.warm,
                   Measure(config.measure, [&]() -> absl::Status {
                     map->Pull(keys, absl::MakeSpan(out), init);
                     KeepMemory(out.data());
                     return absl::OkStatus();
                   }));
  ASSIGN_OR_RETURN(figures.push,
                   Measure(config.measure, [&]() -> absl::Status {
                     map->Push(keys, gradients, 0.01f);
                     return absl::OkStatus();
                   }));
  return figures;
}

absl::StatusOr<uint64_t> EvictionsOf(Client* client, const std::string& table) {
  ASSIGN_OR_RETURN(std::vector<TableShardStats> shards, client->Stats(table));
  uint64_t evictions = 0;
  for (const TableShardStats& s : shards) evictions += s.sparse_evictions;
  return evictions;
}

class SparseReport {
 public:
  SparseReport(const SparseBenchConfig& config, const References& refs)
      : config_(config),
        refs_(refs),
        payload_(config.rows * (sizeof(uint64_t) + config.dim * sizeof(float))),
        table_({"op", "keys", "cluster", "unique keys", "ms/call", "Mrows/s",
                "GB/s", "client cpu-s/GB", "server cpu-s/GB", "evicted/call",
                "map Mrows/s", "map GB/s", "÷ map", "raw GB/s",
                "raw client cpu-s/GB", "raw server cpu-s/GB", "÷ raw",
                "memcpy GB/s"},
               /*left_columns=*/3) {}

  void Add(const char* op, const char* keys, const BenchCluster& c,
           double unique, const Measurement& m, const Measurement& raw,
           const std::optional<Measurement>& map,
           std::optional<double> evicted_per_call = std::nullopt,
           std::optional<double> map_evicted_per_call = std::nullopt) {
    const double gbps = m.GigabytesPerSecond(payload_);
    const double raw_gbps = raw.GigabytesPerSecond(payload_);
    const double map_gbps = map ? map->GigabytesPerSecond(payload_) : 0;
    std::fprintf(stderr, "  sparse %-14s %-7s %-9s %8.3f GB/s  map %8.3f GB/s\n",
                 op, keys, c.label.c_str(), gbps, map_gbps);
    std::string evicted = "";
    if (evicted_per_call) {
      evicted = FormatNumber(*evicted_per_call);
      if (map_evicted_per_call) {
        absl::StrAppend(&evicted, " (map ", FormatNumber(*map_evicted_per_call), ")");
      }
    }
    table_.AddRow(
        {op, keys, c.label, FormatNumber(unique),
         FormatNumber(m.MillisecondsPerIteration()),
         FormatNumber(m.IterationsPerSecond() * config_.rows / 1e6),
         FormatNumber(gbps), FormatCpuPerGigabyte(m, payload_, false),
         FormatCpuPerGigabyte(m, payload_, true), evicted,
         map ? FormatNumber(map->IterationsPerSecond() * config_.rows / 1e6) : "n/a",
         map ? FormatNumber(map_gbps) : "n/a",
         map ? absl::StrCat(FormatNumber(gbps / map_gbps), "×") : "n/a",
         FormatNumber(raw_gbps), FormatCpuPerGigabyte(raw, payload_, false),
         FormatCpuPerGigabyte(raw, payload_, true),
         absl::StrCat(FormatNumber(gbps / raw_gbps), "×"),
         FormatNumber(refs_.memcpy_gbps)});
  }
  ReportTable Take() { return std::move(table_); }

 private:
  const SparseBenchConfig& config_;
  const References& refs_;
  const double payload_;
  ReportTable table_;
};

// Pulls of a table bounded to config.evict_max_rows rows per shard, cycling
// through `batches`, next to the hash map bounded to the cluster's total.
absl::Status RunEvictionRows(const SparseBenchConfig& config,
                             const std::vector<std::vector<uint64_t>>& batches,
                             double mean_unique, BenchCluster* c,
                             const References& refs, SparseReport* report) {
  Client* client = c->client.get();
  const MeasureOptions measure = WithServerCpu(config.measure, c->ServerCpu());
  std::vector<float> rows(config.rows * config.dim, 0.0f);
  const SparseEvictionKind kinds[] = {SparseEvictionKind::kLru,
                                      SparseEvictionKind::kLfu};
  for (SparseEvictionKind kind : kinds) {
    const std::string name =
        absl::StrCat(config.table_prefix, "sparse_evict_",
                     SparseEvictionKindName(kind), "_", c->num_shards);
    TableConfig table = SparseConfig(name, config.dim);
    table.sparse_max_rows = config.evict_max_rows;
    table.sparse_eviction = kind;
    RETURN_IF_ERROR(client->CreateTable(table));
    size_t next = 0;
    uint64_t calls = 0;
    auto pull = [&]() -> absl::Status {
      ++calls;
      return client
          ->PullSparse(name, batches[next++ % batches.size()],
                       absl::MakeSpan(rows))
          .status();
    };
    // Fill the table first, so every timed call runs against a full one.
    for (size_t b = 0; b < batches.size(); ++b) RETURN_IF_ERROR(pull());
    ASSIGN_OR_RETURN(const uint64_t evictions_before, EvictionsOf(client, name));
    calls = 0;
    ASSIGN_OR_RETURN(Measurement m, Measure(measure, pull));
    ASSIGN_OR_RETURN(const uint64_t evictions_after, EvictionsOf(client, name));
    const double evicted =
        static_cast<double>(evictions_after - evictions_before) / calls;

    // The hash map with FIFO eviction and the same total room.
    std::optional<Measurement> map_m;
    std::optional<double> map_evicted;
    if (auto map = RowMapReference::Create(config.dim)) {
      const Initializer init(table.initializer, name);
      const size_t room = config.evict_max_rows * c->num_shards;
      size_t map_next = 0;
      uint64_t map_calls = 0;
      auto map_pull = [&]() -> absl::Status {
        ++map_calls;
        map->PullBounded(batches[map_next++ % batches.size()],
                         absl::MakeSpan(rows), init, room);
        KeepMemory(rows.data());
        return absl::OkStatus();
      };
      for (size_t b = 0; b < batches.size(); ++b) RETURN_IF_ERROR(map_pull());
      const uint64_t before = map->evictions();
      map_calls = 0;
      ASSIGN_OR_RETURN(map_m, Measure(config.measure, map_pull));
      map_evicted = static_cast<double>(map->evictions() - before) / map_calls;
    }
    const std::string op = absl::StrCat("pull evict ", SparseEvictionKindName(kind));
    report->Add(op.c_str(), "zipf", *c, mean_unique, m, refs.pull_raw, map_m,
                evicted, map_evicted);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReportTable> RunSparseBench(
    const SparseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    RawTransferClient* raw) {
  ASSIGN_OR_RETURN(References refs, MeasureReferences(config, raw));
  SparseReport report(config, refs);

  const auto wanted = [&](absl::string_view name) {
    return std::find(config.key_sets.begin(), config.key_sets.end(), name) !=
           config.key_sets.end();
  };
  std::vector<KeySet> key_sets;
  if (wanted("uniform")) {
    key_sets.push_back(
        {"uniform", UniformKeys(config.rows, config.key_space, config.seed)});
  }
  if (wanted("zipf")) {
    key_sets.push_back({"zipf", ZipfKeys(config.rows, config.key_space,
                                         config.zipf_exponent, config.seed)});
  }
  for (KeySet& set : key_sets) set.unique = CountUnique(set.keys);

  std::vector<float> rows(config.rows * config.dim, 0.0f);
  const std::vector<float> gradients(config.rows * config.dim, 1e-4f);

  for (const KeySet& set : key_sets) {
    // The same initializer as the tables below, so creating a row costs the
    // map what it costs a shard.
    const TableConfig like = SparseConfig("bench_map", config.dim);
    ASSIGN_OR_RETURN(MapFigures map,
                     MeasureMap(config, set.keys,
                                Initializer(like.initializer, like.name)));
    for (BenchCluster* c : clusters) {
      Client* client = c->client.get();
      const MeasureOptions measure =
          WithServerCpu(config.measure, c->ServerCpu());
      const auto pull = [&](const std::string& name) {
        return [&, name]() -> absl::Status {
          return client->PullSparse(name, set.keys, absl::MakeSpan(rows))
              .status();
        };
      };

      std::string name;
      Measurement cold;
      for (int r = 0; r < config.cold_repeats; ++r) {
        name = absl::StrCat(config.table_prefix, "sparse_", set.name, "_",
                            c->num_shards, "_", r);
        RETURN_IF_ERROR(client->CreateTable(SparseConfig(name, config.dim)));
        ASSIGN_OR_RETURN(Measurement once,
                         MeasureOnce(pull(name), c->ServerCpu()));
        cold = Combine(cold, once);
      }
      report.Add("pull cold", set.name, *c, set.unique, cold, refs.pull_raw,
                 map.cold);

      ASSIGN_OR_RETURN(Measurement warm, Measure(measure, pull(name)));
      report.Add("pull warm", set.name, *c, set.unique, warm, refs.pull_raw,
                 map.warm);

      ASSIGN_OR_RETURN(
          Measurement push, Measure(measure, [&]() -> absl::Status {
            absl::StatusOr<PushResult> result =
                client->PushSparse(name, set.keys, gradients);
            if (!result.ok()) return result.status();
            if (!result->all_accepted()) {
              return absl::InternalError("a benchmark push was not accepted");
            }
            return absl::OkStatus();
          }));
      report.Add("push", set.name, *c, set.unique, push, refs.push_raw,
                 map.push);

      if (std::string(set.name) != "zipf") continue;
      // The same with per-row versions: pulls return them, pushes send them
      // back and get every key's tau.
      SparsePullOptions with_versions;
      with_versions.row_versions = true;
      PullInfo basis;
      ASSIGN_OR_RETURN(
          Measurement versioned_pull,
          Measure(measure, [&]() -> absl::Status {
            absl::StatusOr<PullInfo> info = client->PullSparse(
                name, set.keys, absl::MakeSpan(rows), with_versions);
            if (!info.ok()) return info.status();
            basis = *std::move(info);
            return absl::OkStatus();
          }));
      report.Add("pull +versions", set.name, *c, set.unique, versioned_pull,
                 refs.pull_raw, map.warm);
      ASSIGN_OR_RETURN(
          Measurement versioned_push,
          Measure(measure, [&]() -> absl::Status {
            absl::StatusOr<PushResult> result =
                client->PushSparse(name, set.keys, gradients, &basis);
            if (!result.ok()) return result.status();
            if (result->row_taus.size() != set.keys.size()) {
              return absl::InternalError("a push came back without row tau");
            }
            return absl::OkStatus();
          }));
      report.Add("push +row tau", set.name, *c, set.unique, versioned_push,
                 refs.push_raw, map.push);
    }
  }

  // Eviction, with Zipf keys: batches drawn with other seeds, so each call
  // brings keys the table has not kept.
  std::vector<std::vector<uint64_t>> batches;
  double unique = 0;
  for (int b = 0; b < config.evict_batches; ++b) {
    batches.push_back(ZipfKeys(config.rows, config.key_space,
                               config.zipf_exponent, config.seed + 1 + b));
    unique += static_cast<double>(CountUnique(batches.back()));
  }
  unique /= std::max(1, config.evict_batches);
  if (!batches.empty()) {
    for (BenchCluster* c : clusters) {
      RETURN_IF_ERROR(
          RunEvictionRows(config, batches, unique, c, refs, &report));
    }
  }
  return report.Take();
}

}  // namespace taups::bench
