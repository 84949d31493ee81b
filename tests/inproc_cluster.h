// Test helper: N real shards served over gRPC on free 127.0.0.1 ports, in
// the test's own process (so a test can also look at the shards directly),
// and clients connected to them.
#ifndef TAUPS_TESTS_INPROC_CLUSTER_H_
#define TAUPS_TESTS_INPROC_CLUSTER_H_

#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/shard_server.h"
#include "taups/client.h"

namespace taups {

struct InProcessCluster {
  explicit InProcessCluster(uint32_t n) {
    for (uint32_t s = 0; s < n; ++s) {
      ShardServerOptions options;
      options.shard_index = s;
      options.num_shards = n;
      options.listen_address = "127.0.0.1:0";
      options.stats_interval = absl::ZeroDuration();
      auto server = ShardServer::Start(options);
      REQUIRE(server.ok());
      addresses.push_back(absl::StrCat("127.0.0.1:", (*server)->port()));
      shards.push_back(std::move(*server));
    }
  }
  std::unique_ptr<Client> Connect(uint32_t worker_id,
                                  size_t slice_bytes = size_t{1} << 20) {
    ClientOptions options;
    options.servers = addresses;
    options.worker_id = worker_id;
    options.slice_bytes = slice_bytes;
    options.call_timeout = absl::Seconds(20);
    auto client = Client::Connect(options);
    REQUIRE(client.ok());
    return std::move(*client);
  }
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<ShardServer>> shards;
};

}  // namespace taups

#endif  // TAUPS_TESTS_INPROC_CLUSTER_H_
