// BenchCluster: the tauPS cluster one series of the benchmark runs against:
// either shards started in this process on 127.0.0.1 free ports, or external
// ps_server shards given by address, with a Client connected to them.
#ifndef TAUPS_BENCH_BENCH_CLUSTER_H_
#define TAUPS_BENCH_BENCH_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  std::unique_ptr<Client> client;
};

// Starts `num_shards` shards in this process and connects a client with
// `client_options` (its `servers` is filled in here).
absl::StatusOr<std::unique_ptr<BenchCluster>> StartLocalCluster(
    int num_shards, ClientOptions client_options);

// Connects to running shards at `servers` (shard order).
absl::StatusOr<std::unique_ptr<BenchCluster>> AttachCluster(
    const std::vector<std::string>& servers, ClientOptions client_options);

}  // namespace taups::bench

#endif  // TAUPS_BENCH_BENCH_CLUSTER_H_
