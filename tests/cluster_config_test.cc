// Cluster config files (server/cluster_config.h): the shipped example
// parses to what it says; every class of bad file is refused with an error
// naming the line and the field; a real ps_server started with --config
// listens where the file says and creates its tables, ps_admin and
// ps_worker find the shards (and the worker the tables) through the same
// file, and flags that contradict the file are refused.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "server/cluster_config.h"
#include "taups/client.h"
#include "tests/process_harness.h"
#include "tests/test_skip.h"

namespace taups::testing {
namespace {

using Catch::Matchers::Contains;

constexpr char kSource[] = "test.textproto";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<ClusterConfig> config = ParseClusterConfig(text, kSource);
  REQUIRE_FALSE(config.ok());
  REQUIRE(config.status().code() == absl::StatusCode::kInvalidArgument);
  return std::string(config.status().message());
}

TEST_CASE("the shipped example config parses to what it says") {
  absl::StatusOr<ClusterConfig> config = ReadClusterConfig(
      std::string(TAUPS_SOURCE_DIR) + "/deploy/config/cluster.textproto.example");
  INFO(config.status());
  REQUIRE(config.ok());
  REQUIRE(config->shards == std::vector<std::string>{"ps0.example.internal:7000",
                                                     "ps1.example.internal:7000"});
  REQUIRE(config->tables.size() == 2);
  const TableConfig& mlp = config->tables[0];
  CHECK(mlp.name == "fashion_mnist_mlp");
  CHECK(mlp.kind == TableKind::kDense);
  CHECK(mlp.dense_size == 784 * 128 + 128 + 128 * 10 + 10);
  CHECK(mlp.optimizer.kind == OptimizerKind::kSgd);
  CHECK(mlp.optimizer.learning_rate == 0.2f);
  CHECK(mlp.initializer.kind == InitializerKind::kUniform);
  CHECK(mlp.initializer.scale == 0.05f);
  CHECK(mlp.consistency.kind == ConsistencyKind::kSync);
  CHECK(mlp.consistency.num_workers == 4);
  const TableConfig& emb = config->tables[1];
  CHECK(emb.name == "user_embeddings");
  CHECK(emb.kind == TableKind::kSparse);
  CHECK(emb.dim == 16);
  CHECK(emb.optimizer.kind == OptimizerKind::kAdagrad);
  CHECK(emb.consistency.kind == ConsistencyKind::kAsync);
  CHECK(emb.staleness.reject_above_tau_max);
  CHECK(emb.staleness.tau_max == 32);
  CHECK(emb.staleness.downweight == DownweightKind::kInversePlusOne);
  CHECK(emb.sparse_max_rows == 1000000);
  CHECK(emb.sparse_eviction == SparseEvictionKind::kLfu);
  CHECK(emb.sparse_ttl_s == 86400.0);
  CHECK(emb.sparse_admit_after == 2);
  // Left out: the wire's defaults.
  CHECK(emb.sparse_admit_probability == 1.0f);
  CHECK(emb.sparse_max_bytes == 0);
}

TEST_CASE("a file that is not a cluster config is refused at its line and column") {
  // A field the schema lacks (a typo of `shard`).
  CHECK_THAT(ErrorOf("shard { address: \"a:1\" }\nshards { address: \"b:1\" }\n"),
             Contains("test.textproto:2:") && Contains("no field named \"shards\""));
  // An enum value the schema lacks, with the field it was given to.
  CHECK_THAT(ErrorOf("shard { address: \"a:1\" }\n"
                     "table { name: \"t\" kind: TABLE_KIND_HUGE }\n"),
             Contains("test.textproto:2:") && Contains("TABLE_KIND_HUGE") &&
                 Contains("\"kind\""));
  // A number too large for its field: the position is the number's.
  CHECK_THAT(ErrorOf("shard { address: \"a:1\" }\n"
                     "table { name: \"t\" kind: TABLE_KIND_SPARSE\n"
                     "  dim: 5000000000 }\n"),
             Contains("test.textproto:3:8: Integer out of range (5000000000)"));
  // A syntax error: the block is never closed.
  CHECK_THAT(ErrorOf("shard { address: \"a:1\"\n"), Contains("test.textproto:2:"));
  // A field given twice.
  CHECK_THAT(ErrorOf("shard { address: \"a:1\" address: \"b:1\" }\n"),
             Contains("test.textproto:1:") && Contains("\"address\""));
}

TEST_CASE("shard lists that cannot serve are refused, naming the entry") {
  CHECK_THAT(ErrorOf("# nothing\n"), Contains("lists no shard"));
  CHECK_THAT(ErrorOf("shard { address: \"ps0:7000\" }\nshard { address: \"ps1\" }\n"),
             Contains("test.textproto:2:1: shard[1].address: 'ps1'"));
  CHECK_THAT(ErrorOf("shard { address: \"ps0:0\" }\n"),
             Contains("test.textproto:1:1: shard[0].address") && Contains("1..65535"));
  CHECK_THAT(ErrorOf("shard { address: \"ps0:70000\" }\n"),
             Contains("shard[0].address: 'ps0:70000'"));
  CHECK_THAT(ErrorOf("shard { address: \"ps0:7000\" }\n"
                     "shard { address: \"ps1:7000\" }\n"
                     "shard { address: \"ps0:7000\" }\n"),
             Contains("test.textproto:3:1: shard[2].address") &&
                 Contains("shard[0]'s address too"));
}

TEST_CASE("table specs out of range are refused, naming the table and the field") {
  const std::string shard = "shard { address: \"ps0:7000\" }\n";
  struct Case {
    std::string table;
    std::string expected;
  };
  const Case cases[] = {
      {"table { name: \"w\" dense_size: 10 }", "table[0] 'w': kind is required"},
      {"table { name: \"w\" kind: 7 dense_size: 10 }", "table kind 7"},
      {"table { name: \"w\" kind: TABLE_KIND_DENSE }", "size 0 outside 1.."},
      {"table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 10 dim: 4 }",
       "dim and the sparse_* settings are for sparse tables"},
      {"table { name: \"e\" kind: TABLE_KIND_SPARSE dim: 5000 }", "dim 5000 outside 1..4096"},
      {"table { name: \"e\" kind: TABLE_KIND_SPARSE dim: 8 sparse_max_rows: 10 }",
       "max_rows 10 is below the 64 lock stripes"},
      {"table { name: \"e\" kind: TABLE_KIND_SPARSE dim: 8 sparse_admit_probability: 1.5 }",
       "admit probability must be in (0, 1]"},
      {"table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 10\n"
       "  optimizer { learning_rate: -1 } }",
       "learning rate must be finite and > 0, got -1"},
      {"table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 10\n"
       "  optimizer { kind: OPTIMIZER_MOMENTUM momentum: 1.5 } }",
       "momentum in (0, 1), got 1.5"},
      {"table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 10\n"
       "  consistency { kind: CONSISTENCY_SYNC } }",
       "needs consistency.num_workers"},
      {"table { name: \"bad name\" kind: TABLE_KIND_DENSE dense_size: 10 }",
       "may only hold letters, digits"},
  };
  for (const Case& c : cases) {
    INFO(c.table);
    const std::string error = ErrorOf(shard + c.table + "\n");
    CHECK_THAT(error, Contains("test.textproto:2:1: table[0]") && Contains(c.expected));
  }
  CHECK_THAT(ErrorOf(shard +
                     "table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 10 }\n"
                     "table { name: \"e\" kind: TABLE_KIND_SPARSE dim: 8 }\n"
                     "table { name: \"w\" kind: TABLE_KIND_DENSE dense_size: 20 }\n"),
             Contains("test.textproto:4:1: table[2].name: 'w' is table[0]'s name too"));
}

TEST_CASE("--servers and --config: one list of shards") {
  absl::StatusOr<ClusterConfig> servers =
      ClusterFromServersOrConfig("a:1, b:2,", "");
  REQUIRE(servers.ok());
  CHECK(servers->shards == std::vector<std::string>{"a:1", " b:2"});
  CHECK(servers->tables.empty());
  absl::StatusOr<ClusterConfig> both = ClusterFromServersOrConfig("a:1", "/x");
  REQUIRE_FALSE(both.ok());
  CHECK_THAT(std::string(both.status().message()),
             Contains("--config and --servers both list the shards"));
  CHECK(absl::IsNotFound(ReadClusterConfig("/nonexistent/cluster.textproto").status()));
}

// A loopback port nothing listens on right now.
int UnusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  socklen_t length = sizeof(address);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

// The MLP table of ps_worker --model=mlp with a learning rate ps_worker
// would never choose (its default is 0.2), and a sparse table no model uses.
constexpr uint64_t kMlpParams = 784 * 128 + 128 + 128 * 10 + 10;
std::string ConfigText(int port) {
  return absl::StrCat(
      "shard { address: \"127.0.0.1:", port, "\" }\n"
      "table { name: \"fashion_mnist_mlp\" kind: TABLE_KIND_DENSE dense_size: ",
      kMlpParams,
      "\n  optimizer { kind: OPTIMIZER_SGD learning_rate: 0.05 }\n"
      "  initializer { kind: INIT_UNIFORM scale: 0.05 seed: 1 } }\n"
      "table { name: \"extra\" kind: TABLE_KIND_SPARSE dim: 8 sparse_max_rows: 4096 }\n");
}

struct ConfiguredShard {
  std::string config_path;
  std::string address;
  std::unique_ptr<Process> process;
};

ConfiguredShard StartConfiguredShard(const TempDir& dir) {
  ConfiguredShard shard;
  const int port = UnusedPort();
  shard.address = absl::StrCat("127.0.0.1:", port);
  shard.config_path = dir.path() + "/cluster.textproto";
  std::ofstream(shard.config_path) << ConfigText(port);
  const std::string port_file = dir.path() + "/shard.port";
  shard.process = std::make_unique<Process>(
      BinDir() + "/ps_server",
      std::vector<std::string>{"--config=" + shard.config_path, "--shard_index=0",
                               "--port_file=" + port_file, "--stats_interval_s=0"},
      dir.path() + "/shard.log");
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!std::filesystem::exists(port_file) && absl::Now() < deadline) {
    INFO(shard.process->Output());
    REQUIRE_FALSE(shard.process->Wait(absl::Milliseconds(20)).has_value());
  }
  int bound = 0;
  std::ifstream(port_file) >> bound;
  REQUIRE(bound == port);  // the file's port, not --port's default 7000
  return shard;
}

std::unique_ptr<Client> Observer(const std::string& address) {
  ClientOptions options;
  options.servers = {address};
  options.register_worker = false;
  options.worker_id = UINT32_MAX;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
  REQUIRE(client.ok());
  return *std::move(client);
}

TEST_CASE("ps_server --config listens where the file says and creates its tables") {
  TempDir dir;
  ConfiguredShard shard = StartConfiguredShard(dir);
  std::unique_ptr<Client> client = Observer(shard.address);
  absl::StatusOr<TableConfig> mlp = client->OpenTable("fashion_mnist_mlp");
  REQUIRE(mlp.ok());
  CHECK(mlp->kind == TableKind::kDense);
  CHECK(mlp->dense_size == kMlpParams);
  CHECK(mlp->optimizer.learning_rate == 0.05f);
  absl::StatusOr<TableConfig> extra = client->OpenTable("extra");
  REQUIRE(extra.ok());
  CHECK(extra->kind == TableKind::kSparse);
  CHECK(extra->dim == 8);
  CHECK(extra->sparse_max_rows == 4096);
  CHECK_THAT(shard.process->Output(), Contains("created table 'extra'"));

  // ps_admin finds the shard through the same file.
  Process admin(BinDir() + "/ps_admin",
                {"--config=" + shard.config_path, "--table=extra", "stats"},
                dir.path() + "/admin.log");
  REQUIRE(admin.Wait(absl::Seconds(30)) == 0);
  CHECK_THAT(admin.Output(), Contains("shard 0 table extra: version 0"));

  // Flags that contradict the file, and two shard lists, are refused.
  struct Refusal {
    std::string binary;
    std::vector<std::string> args;
    std::string expected;
  };
  const std::string config = "--config=" + shard.config_path;
  const Refusal refusals[] = {
      {"ps_server", {config, "--port=1"}, "--port=1 but --config"},
      {"ps_server", {config, "--num_shards=2"}, "--num_shards=2 but --config"},
      {"ps_server", {config, "--shard_index=1"}, "--shard_index=1 but --config"},
      {"ps_server", {config, "--cluster_file=" + shard.config_path},
       "--config and --cluster_file both list the shards"},
      {"ps_worker", {config, "--servers=" + shard.address},
       "--config and --servers both list the shards"},
  };
  int run = 0;
  for (const Refusal& r : refusals) {
    Process bad(BinDir() + "/" + r.binary, r.args,
                absl::StrCat(dir.path(), "/refused", run++, ".log"));
    const std::optional<int> code = bad.Wait(absl::Seconds(20));
    INFO(r.binary << " " << r.args.back() << ":\n" << bad.Output());
    CHECK((code.has_value() && *code != 0));
    CHECK_THAT(bad.Output(), Contains(r.expected));
  }
  REQUIRE(shard.process->Stop() == 0);
}

TEST_CASE("ps_worker --config trains on the table the shard created from the file",
          "[dataset]") {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    TAUPS_SKIP("/usr/share/datasets/fashion-mnist not present (install "
               "dataset-fashion-mnist)");
  }
  TempDir dir;
  ConfiguredShard shard = StartConfiguredShard(dir);
  // Had the worker created the table itself, its own learning rate (0.2)
  // would clash with the file's 0.05 (ALREADY_EXISTS); it opens it instead.
  Process worker(BinDir() + "/ps_worker",
                 {"--config=" + shard.config_path, "--worker_id=0", "--num_workers=1",
                  "--model=mlp", "--steps=12", "--eval_examples=200", "--device=cpu",
                  "--log_every=0"},
                 dir.path() + "/worker.log");
  const std::optional<int> code = worker.Wait(absl::Seconds(120));
  INFO(worker.Output());
  REQUIRE(code == 0);
  CHECK_THAT(LastJsonLine(worker.Output()), Contains("\"steps\":12"));
  std::unique_ptr<Client> client = Observer(shard.address);
  absl::StatusOr<std::vector<TableShardStats>> stats = client->Stats("fashion_mnist_mlp");
  REQUIRE(stats.ok());
  REQUIRE(stats->size() == 1);
  CHECK((*stats)[0].version == 12);  // one async push per step
  absl::StatusOr<TableConfig> mlp = client->OpenTable("fashion_mnist_mlp");
  REQUIRE(mlp.ok());
  CHECK(mlp->optimizer.learning_rate == 0.05f);
  REQUIRE(shard.process->Stop() == 0);
}

}  // namespace
}  // namespace taups::testing
