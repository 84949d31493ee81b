#include "server/cluster_config.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster_config.pb.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "wire_convert.h"
#include "server/cluster_file.h"

namespace taups {
namespace {

namespace pb = google::protobuf;

// Keeps the parser's complaints with their positions (1-based).
class CollectErrors : public pb::io::ErrorCollector {
 public:
  explicit CollectErrors(absl::string_view source) : source_(source) {}
  void AddError(int line, pb::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(source_, ":", line + 1, ":", column + 1,
                                   ": ", message));
  }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

// Where entry `index` of the repeated field `field` of ClusterConfig
// starts: "source:line:column".
std::string Where(absl::string_view source, const pb::TextFormat::ParseInfoTree& tree,
                  absl::string_view field, int index) {
  const pb::FieldDescriptor* descriptor =
      config::v1::ClusterConfig::descriptor()->FindFieldByName(std::string(field));
  const pb::TextFormat::ParseLocation at = tree.GetLocation(descriptor, index);
  return absl::StrCat(source, ":", at.line + 1, ":", at.column + 1);
}

absl::Status Refuse(absl::string_view where, absl::string_view entry,
                    absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", entry, ": ", what));
}

absl::Status CheckShards(const config::v1::ClusterConfig& message,
                         absl::string_view source,
                         const pb::TextFormat::ParseInfoTree& tree,
                         ClusterConfig& out) {
  if (message.shard_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": lists no shard (add shard { address: \"host:port\" }, one "
        "per shard in shard order)"));
  }
  if (message.shard_size() > static_cast<int>(kMaxClusterShards)) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": lists ", message.shard_size(), " shards, at most ",
        kMaxClusterShards));
  }
  absl::flat_hash_map<std::string, int> first_index;
  for (int i = 0; i < message.shard_size(); ++i) {
    const std::string& address = message.shard(i).address();
    const std::string where = Where(source, tree, "shard", i);
    const std::string entry = absl::StrCat("shard[", i, "].address");
    absl::StatusOr<int> port = PortOf(address);
    if (!port.ok() || *port == 0) {
      return Refuse(where, entry, absl::StrCat(
          "'", address, "' is not host:port with a port in 1..65535"));
    }
    auto [it, inserted] = first_index.emplace(address, i);
    if (!inserted) {
      return Refuse(where, entry, absl::StrCat("'", address, "' is shard[",
                                               it->second, "]'s address too"));
    }
    out.shards.push_back(address);
  }
  return absl::OkStatus();
}

absl::Status CheckTables(const config::v1::ClusterConfig& message,
                         absl::string_view source,
                         const pb::TextFormat::ParseInfoTree& tree,
                         ClusterConfig& out) {
  absl::flat_hash_map<std::string, int> first_index;
  for (int i = 0; i < message.table_size(); ++i) {
    const v1::TableConfig& wire = message.table(i);
    const std::string where = Where(source, tree, "table", i);
    const std::string entry = absl::StrCat("table[", i, "] ", QuotedName(wire.name()));
    if (wire.kind() == v1::TABLE_KIND_UNSPECIFIED) {
      return Refuse(where, entry,
                    "kind is required: TABLE_KIND_DENSE or TABLE_KIND_SPARSE");
    }
    absl::StatusOr<TableConfig> table = FromWire(wire);
    if (!table.ok()) return Refuse(where, entry, table.status().message());
    if (absl::Status valid = table->Validate(); !valid.ok()) {
      return Refuse(where, entry, valid.message());
    }
    auto [it, inserted] = first_index.emplace(table->name, i);
    if (!inserted) {
      return Refuse(where, absl::StrCat("table[", i, "].name"),
                    absl::StrCat(QuotedName(table->name), " is table[",
                                 it->second, "]'s name too"));
    }
    out.tables.push_back(*std::move(table));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClusterConfig> ParseClusterConfig(absl::string_view text,
                                                 absl::string_view source) {
  config::v1::ClusterConfig message;
  CollectErrors errors(source);
  pb::TextFormat::ParseInfoTree tree;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(std::string(text), &message)) {
    if (errors.errors().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": not a cluster config (text format)"));
    }
    return absl::InvalidArgumentError(absl::StrJoin(errors.errors(), "; "));
  }
  ClusterConfig config;
  if (absl::Status s = CheckShards(message, source, tree, config); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckTables(message, source, tree, config); !s.ok()) {
    return s;
  }
  return config;
}

absl::StatusOr<ClusterConfig> ReadClusterConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open config file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseClusterConfig(text.str(), path);
}

absl::StatusOr<ClusterConfig> ClusterFromServersOrConfig(
    absl::string_view servers, const std::string& config_path) {
  if (config_path.empty()) {
    ClusterConfig config;
    config.shards = absl::StrSplit(servers, ',', absl::SkipWhitespace());
    return config;
  }
  if (!servers.empty()) {
    return absl::InvalidArgumentError(
        "--config and --servers both list the shards: give one");
  }
  return ReadClusterConfig(config_path);
}

}  // namespace taups
