// Cluster config files: the shard list and the table specs of one tauPS
// cluster in one protobuf text-format file (proto/cluster_config.proto;
// example: deploy/config/cluster.textproto.example):
//
//   shard { address: "ps0.example.internal:7000" }
//   shard { address: "ps1.example.internal:7000" }
//   table { name: "mlp" kind: TABLE_KIND_DENSE dense_size: 101770
//           optimizer { kind: OPTIMIZER_SGD learning_rate: 0.2 } }
//
// ps_server, ps_worker and ps_admin read it with --config. Everything is
// checked when the file is read, before anything starts: every error names
// the file, the line and column, and the field or entry at fault
// ("cluster.textproto:7:1: table[1] 'emb': sparse table 'emb': dim 0
// outside 1..4096").
//
// Plain functions and a value type; no thread-safety concerns.
#ifndef TAUPS_SERVER_CLUSTER_CONFIG_H_
#define TAUPS_SERVER_CLUSTER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "taups/table_config.h"

namespace taups {

// Most shards one cluster may have (ps_server --num_shards has the same).
inline constexpr uint32_t kMaxClusterShards = 4096;

struct ClusterConfig {
  // host:port of every shard in shard order; 1..kMaxClusterShards of them,
  // each with a non-zero port, no address twice.
  std::vector<std::string> shards;
  // Tables the shards create at start; each passed TableConfig::Validate,
  // no name twice. May be empty.
  std::vector<TableConfig> tables;
};

// Parses and checks config text; `source` names it in error messages (a
// path). INVALID_ARGUMENT "source:line:column: what" for text that is not
// a ClusterConfig (a field or enum value the schema lacks, a syntax error)
// or that one is not valid.
absl::StatusOr<ClusterConfig> ParseClusterConfig(absl::string_view text,
                                                 absl::string_view source);
// Reads and parses the file at `path`; NOT_FOUND if it cannot be read.
absl::StatusOr<ClusterConfig> ReadClusterConfig(const std::string& path);

// What a client's --servers=h:p,h:p and --config=FILE say together: the
// file's config when `config_path` is set (INVALID_ARGUMENT if `servers`
// is too: two shard lists), else the comma-separated `servers` as shards
// (unchecked here; the client checks them) and no tables.
absl::StatusOr<ClusterConfig> ClusterFromServersOrConfig(
    absl::string_view servers, const std::string& config_path);

}  // namespace taups

#endif  // TAUPS_SERVER_CLUSTER_CONFIG_H_
