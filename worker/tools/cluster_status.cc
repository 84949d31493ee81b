#include "worker/tools/cluster_status.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace taups {
namespace {

// A JSON string literal of `s` (table names are printable; control
// characters are escaped anyway).
std::string Quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The worker whose arrival closed the last step, or -1 (the answer carries
// none as -1 or as 2^32 - 1).
int64_t Straggler(const TableShardStats& s) {
  return s.last_straggler < 0 || s.last_straggler >= 0xFFFFFFFFll ? -1
                                                                   : s.last_straggler;
}

}  // namespace

absl::StatusOr<std::vector<TableStatus>> ReadClusterStatus(
    Client& client, const std::vector<std::string>& tables) {
  std::vector<TableStatus> status;
  for (const std::string& table : tables) {
    TableStatus t;
    ASSIGN_OR_RETURN(t.config, client.OpenTable(table));
    ASSIGN_OR_RETURN(t.shards, client.Stats(table));
    status.push_back(std::move(t));
  }
  return status;
}

std::string StatusText(const std::vector<TableStatus>& status) {
  std::vector<std::vector<std::string>> rows = {
      {"TABLE", "SHARD", "VERSION", "POLICY", "TAU_P50", "TAU_P99", "REJECTED",
       "WAIT_P99_S", "STRAGGLER", "LIVE", "DEAD"}};
  for (const TableStatus& t : status) {
    for (const TableShardStats& s : t.shards) {
      rows.push_back({t.config.name, absl::StrCat(s.shard), absl::StrCat(s.version),
                      ConsistencyKindName(t.config.consistency.kind),
                      absl::StrFormat("%.0f", s.tau_p50),
                      absl::StrFormat("%.0f", s.tau_p99), absl::StrCat(s.rejected),
                      absl::StrFormat("%.3f", s.step_wait_p99_s),
                      Straggler(s) < 0 ? "-" : absl::StrCat(Straggler(s)),
                      absl::StrCat(s.live_workers), absl::StrCat(s.dead_workers)});
    }
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i], std::string(width[i] - row[i].size() + 2, ' '));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

std::string StatusJson(const std::vector<TableStatus>& status) {
  std::vector<std::string> tables;
  for (const TableStatus& t : status) {
    std::vector<std::string> shards;
    for (const TableShardStats& s : t.shards) {
      shards.push_back(absl::StrFormat(
          "{\"shard\":%u,\"version\":%u,\"pushes\":%u,\"rejected\":%u,"
          "\"downweighted\":%u,\"tau_p50\":%g,\"tau_p99\":%g,\"tau_max\":%g,"
          "\"steps_closed\":%u,\"step_wait_p99_s\":%g,\"straggler\":%d,"
          "\"live_workers\":%u,\"dead_workers\":%u}",
          s.shard, s.version, s.pushes, s.rejected, s.downweighted, s.tau_p50,
          s.tau_p99, s.tau_max, s.steps_closed, s.step_wait_p99_s,
          Straggler(s), s.live_workers, s.dead_workers));
    }
    tables.push_back(absl::StrCat(
        "{\"name\":", Quoted(t.config.name), ",\"policy\":",
        Quoted(ConsistencyKindName(t.config.consistency.kind)), ",\"shards\":[",
        absl::StrJoin(shards, ","), "]}"));
  }
  return absl::StrCat("{\"tables\":[", absl::StrJoin(tables, ","), "]}\n");
}

}  // namespace taups
