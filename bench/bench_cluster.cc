#include "bench/bench_cluster.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace taups::bench {
namespace {

std::string ShardsLabel(int n) {
  return absl::StrCat(n, n == 1 ? " shard" : " shards");
}

}  // namespace

absl::StatusOr<std::unique_ptr<BenchCluster>> StartLocalCluster(
    int num_shards, ClientOptions client_options) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError("a cluster needs at least one shard");
  }
  auto cluster = std::make_unique<BenchCluster>();
  cluster->label = ShardsLabel(num_shards);
  cluster->num_shards = num_shards;
  cluster->in_process = true;
  client_options.servers.clear();
  for (int s = 0; s < num_shards; ++s) {
    ShardServerOptions options;
    options.shard_index = static_cast<uint32_t>(s);
    options.num_shards = static_cast<uint32_t>(num_shards);
    options.listen_address = "127.0.0.1:0";
    options.stats_interval = absl::ZeroDuration();
    ASSIGN_OR_RETURN(std::unique_ptr<ShardServer> shard,
                     ShardServer::Start(options));
    client_options.servers.push_back(absl::StrCat("127.0.0.1:", shard->port()));
    cluster->shards.push_back(std::move(shard));
  }
  cluster->client_options = client_options;
  ASSIGN_OR_RETURN(cluster->client, Client::Connect(client_options));
  return cluster;
}

double CpuSecondsOf(
    const std::vector<std::unique_ptr<ServerProcess>>& processes) {
  double total = 0;
  for (const auto& p : processes) {
    absl::StatusOr<ProcessUsage> usage = p->Usage();
    if (usage.ok()) total += usage->cpu_seconds;
  }
  return total;
}

std::function<double()> BenchCluster::ServerCpu() const {
  if (processes.empty()) return nullptr;
  return [this] { return CpuSecondsOf(processes); };
}

absl::StatusOr<std::unique_ptr<BenchCluster>> StartProcessCluster(
    int num_shards, ClientOptions client_options, const std::string& binary,
    const std::string& scratch_dir) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError("a cluster needs at least one shard");
  }
  auto cluster = std::make_unique<BenchCluster>();
  cluster->label = absl::StrCat(ShardsLabel(num_shards), " (proc)");
  cluster->num_shards = num_shards;
  client_options.servers.clear();
  for (int s = 0; s < num_shards; ++s) {
    ASSIGN_OR_RETURN(
        std::unique_ptr<ServerProcess> shard,
        ServerProcess::Start(
            binary,
            {"--host=127.0.0.1", absl::StrCat("--shard_index=", s),
             absl::StrCat("--num_shards=", num_shards), "--stats_interval_s=0",
             "--log_level=warn"},
            scratch_dir, absl::StrCat("ps_server_", num_shards, "_", s, ".log")));
    client_options.servers.push_back(shard->address());
    cluster->processes.push_back(std::move(shard));
  }
  cluster->client_options = client_options;
  ASSIGN_OR_RETURN(cluster->client, Client::Connect(client_options));
  return cluster;
}

absl::StatusOr<std::unique_ptr<BenchCluster>> AttachCluster(
    const std::vector<std::string>& servers, ClientOptions client_options) {
  auto cluster = std::make_unique<BenchCluster>();
  cluster->num_shards = static_cast<int>(servers.size());
  cluster->label = absl::StrCat(ShardsLabel(cluster->num_shards), " (ext)");
  client_options.servers = servers;
  cluster->client_options = client_options;
  ASSIGN_OR_RETURN(cluster->client, Client::Connect(client_options));
  return cluster;
}

}  // namespace taups::bench
