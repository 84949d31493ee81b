// ps_server as a real process: it starts on a free port, serves, refuses bad
// flags with a clear error, and stops cleanly on SIGTERM and SIGINT.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "taups/client.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

TEST_CASE("ps_server serves two shards and exits 0 on SIGTERM") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 2);
  ClientOptions options;
  options.servers = {shards[0].address(), shards[1].address()};
  auto client = Client::Connect(options);
  REQUIRE(client.ok());
  REQUIRE((*client)->CreateTable(TableConfig::Dense("w", 100)).ok());
  std::vector<float> params(100);
  REQUIRE((*client)->PullDense("w", absl::MakeSpan(params)).ok());
  for (Shard& shard : shards) {
    auto code = shard.process->Stop();
    INFO(shard.process->Output());
    REQUIRE(code == 0);
    REQUIRE(shard.process->Output().find("stopped") != std::string::npos);
  }
}

TEST_CASE("ps_server exits 0 on SIGINT") {
  TempDir dir;
  std::vector<Shard> shards = StartShards(dir.path(), 1);
  kill(shards[0].process->pid(), SIGINT);
  REQUIRE(shards[0].process->Wait(absl::Seconds(10)) == 0);
}

TEST_CASE("ps_server refuses a shard index outside the cluster") {
  TempDir dir;
  Process bad(BinDir() + "/ps_server",
              {"--shard_index=2", "--num_shards=2", "--port=0"},
              dir.path() + "/bad.log");
  REQUIRE(bad.Wait(absl::Seconds(10)) == 1);
  REQUIRE(bad.Output().find("shard_index 2 must be below num_shards 2") !=
          std::string::npos);
}

TEST_CASE("ps_server reads its port from a cluster file") {
  TempDir dir;
  const std::string cluster = dir.path() + "/cluster.txt";
  {
    std::ofstream out(cluster);
    out << "# two shards\n127.0.0.1:1\n\n127.0.0.1:not-a-port\n";
  }
  Process bad(BinDir() + "/ps_server",
              {"--cluster_file=" + cluster, "--shard_index=0"},
              dir.path() + "/bad.log");
  REQUIRE(bad.Wait(absl::Seconds(10)) == 1);
  REQUIRE(bad.Output().find("cluster file line 4") != std::string::npos);
}

}  // namespace
}  // namespace taups::testing
