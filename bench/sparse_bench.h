// The sparse half of throughput_bench: PullSparse and PushSparse of one batch
// of `rows` keys (uniformly random, and Zipf-distributed) against each
// cluster. The first pull of a fresh table also creates its rows and is
// reported apart from warm pulls. With Zipf keys, also pulls that return
// per-row versions and pushes that send them back, and pulls of a table bounded
// far below the keys it sees (so most pulls evict), under LRU and LFU. Next
// to each: a plain absl::flat_hash_map<uint64_t, row> doing the same to the
// same keys in this process (RowMapReference), raw gRPC moving the same
// bytes (keys + values) and a local memcpy of them.
#ifndef TAUPS_BENCH_SPARSE_BENCH_H_
#define TAUPS_BENCH_SPARSE_BENCH_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/bench_cluster.h"
#include "bench/measure.h"
#include "bench/raw_transfer_client.h"
#include "bench/report_table.h"

namespace taups::bench {

struct SparseBenchConfig {
  size_t rows = 65536;  // keys per call (duplicates included)
  uint32_t dim = 16;
  // Fresh tables whose first (cold) pull is timed; the figure is their mean.
  int cold_repeats = 3;
  uint64_t key_space = uint64_t{1} << 24;
  double zipf_exponent = 1.1;
  uint64_t seed = 1;
  // Which key sets run, of "uniform" and "zipf".
  std::vector<std::string> key_sets = {"uniform", "zipf"};
  MeasureOptions measure;  // warm pulls and pushes
  // Eviction rows: tables limited to this many rows per shard, pulled with
  // `evict_batches` different Zipf batches in turn so the hot set drifts.
  uint64_t evict_max_rows = 4096;
  int evict_batches = 8;
  // The raw reference server's CPU seconds so far, when it is a process of
  // this benchmark (null otherwise).
  std::function<double()> raw_server_cpu;
  // Table names are "<prefix>sparse_<keys>_<shards>_<repeat>".
  std::string table_prefix = "bench_";
};

// One row per (keys, cluster, op). Progress lines go to stderr.
absl::StatusOr<ReportTable> RunSparseBench(
    const SparseBenchConfig& config, absl::Span<BenchCluster* const> clusters,
    RawTransferClient* raw);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_SPARSE_BENCH_H_
