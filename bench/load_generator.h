// The load generator's run: W workers against one shard, each a full tauPS
// client of its own (its worker id, registration and lease, one gRPC
// channel), pulling and pushing one dense table as fast as the shard lets
// them, under one consistency model. What a run reports is what a shard
// serving many workers needs: aggregate throughput, per-operation latency,
// the server's threads and memory per worker, and whether every push a
// worker counted as accepted was applied exactly once.
#ifndef TAUPS_BENCH_LOAD_GENERATOR_H_
#define TAUPS_BENCH_LOAD_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "bench/server_process.h"
#include "taups/table_config.h"

namespace taups::bench {

struct LoadConfig {
  std::string server_address;   // the one shard
  const ServerProcess* server = nullptr;  // for /proc figures; may be null
  ConsistencyKind kind = ConsistencyKind::kAsync;
  uint32_t staleness_bound = 2;  // ssp: s
  int workers = 4;
  size_t table_bytes = 64 << 10;  // float32 payload of each pull and push
  absl::Duration duration = absl::Seconds(3);
  uint32_t first_worker_id = 1;   // workers are first_worker_id + 0..W-1
  // The lease each worker asks for (ClientOptions::lease; zero = the
  // server's default).
  absl::Duration lease = absl::ZeroDuration();
  std::string table_name;
};

struct LoadResult {
  int64_t steps = 0;             // steps every worker completed (pull + push)
  int64_t accepted_pushes = 0;   // summed over the workers' own counts
  int64_t refused_pushes = 0;
  double seconds = 0;            // first worker's start to last one's end
  double push_p50_ms = 0, push_p99_ms = 0;
  double pull_p50_ms = 0, pull_p99_ms = 0;
  // The shard: its table version and push count after the run, its threads
  // and RSS before the workers connected and at their peak while running.
  uint64_t shard_version = 0;
  uint64_t shard_pushes = 0;
  int64_t threads_before = 0, threads_peak = 0;
  int64_t rss_before = 0, rss_peak = 0;
  double server_cpu_seconds = 0;  // over the timed run
  // This process's CPU over the timed run: the W workers' threads, their
  // heartbeats and channels (they share the machine with the shard).
  double client_cpu_seconds = 0;
  // Exactly once: async, the version equals the accepted pushes; sync, the
  // version equals the steps and every worker's push of each was accepted.
  bool applied_exactly = false;
  std::string mismatch;  // why not, when !applied_exactly

  double PushesPerSecond() const {
    return seconds > 0 ? accepted_pushes / seconds : 0;
  }
  // The shard's CPU per step of one worker (a pull and a push), in us: what
  // serving costs, whatever share of the cores the shard got.
  double ServerMicrosPerPush() const {
    return accepted_pushes > 0 ? server_cpu_seconds / accepted_pushes * 1e6 : 0;
  }
};

// Creates the table, connects the workers (all registered before any
// starts), runs them for `duration` (under sync, until every worker has
// finished the same step; under ssp, until every worker has reached the
// same step), reads the shard's stats and lets them leave.
absl::StatusOr<LoadResult> RunLoad(const LoadConfig& config);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_LOAD_GENERATOR_H_
