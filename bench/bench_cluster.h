// BenchCluster: the tauPS cluster one series of the benchmark runs against:
// shards started in this process on 127.0.0.1 free ports, ps_server
// processes started for it (their CPU is then counted apart from the
// client's), or external ps_server shards given by address, with a Client
// connected to them.
#ifndef TAUPS_BENCH_BENCH_CLUSTER_H_
#define TAUPS_BENCH_BENCH_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include <functional>

#include "absl/status/statusor.h"
#include "bench/server_process.h"
#include "server/shard_server.h"
#include "taups/client.h"

namespace taups::bench {

struct BenchCluster {
  std::string label;  // names the series in the tables, e.g. "2 shards"
  int num_shards = 0;
  bool in_process = false;
  // Empty for an external cluster. Declared before `client`, so the client
  // is destroyed first.
  std::vector<std::unique_ptr<ShardServer>> shards;
  // The ps_server processes of a cluster started by StartProcessCluster.
  std::vector<std::unique_ptr<ServerProcess>> processes;
  std::unique_ptr<Client> client;
  // What `client` was connected with (servers filled in), for more clients.
  ClientOptions client_options;

  // The processes' CPU seconds so far, summed (for MeasureOptions); null
  // when the shards are not processes of this benchmark.
  std::function<double()> ServerCpu() const;
};

// The CPU seconds `processes` have used so far, summed; 0 for one that
// cannot be read.
double CpuSecondsOf(const std::vector<std::unique_ptr<ServerProcess>>& processes);

// Starts `num_shards` shards in this process and connects a client with
// `client_options` (its `servers` is filled in here).
absl::StatusOr<std::unique_ptr<BenchCluster>> StartLocalCluster(
    int num_shards, ClientOptions client_options);

// Starts `num_shards` ps_server processes (`binary`, logs and port files in
// `scratch_dir`) and connects a client to them.
absl::StatusOr<std::unique_ptr<BenchCluster>> StartProcessCluster(
    int num_shards, ClientOptions client_options, const std::string& binary,
    const std::string& scratch_dir);

// Connects to running shards at `servers` (shard order).
absl::StatusOr<std::unique_ptr<BenchCluster>> AttachCluster(
    const std::vector<std::string>& servers, ClientOptions client_options);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_BENCH_CLUSTER_H_
