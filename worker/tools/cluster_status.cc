#include "worker/tools/cluster_status.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace taups {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

bool Shown(const ClusterStatus& status, const std::string& table) {
  return status.tables.empty() ||
         std::find(status.tables.begin(), status.tables.end(), table) !=
             status.tables.end();
}

std::string Hex(uint64_t v) { return absl::StrFormat("%016x", v); }

std::string Straggler(const v1::TableStats& t) {
  return t.has_straggler() ? absl::StrCat(t.last_straggler()) : "-";
}

std::string Draining(const v1::ShardStatusResponse& s) {
  if (s.draining_workers().empty()) return "-";
  return absl::StrJoin(s.draining_workers(), ",");
}

// The workers any table of the shard marks awaited, ascending, each once.
std::vector<uint32_t> AwaitedIds(const v1::StatsResponse& stats) {
  std::vector<uint32_t> ids;
  for (const v1::TableStats& t : stats.tables()) {
    for (const v1::WorkerStats& w : t.workers()) {
      if (w.awaited()) ids.push_back(w.worker_id());
    }
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace

std::string JsonQuoted(const std::string& s) {
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

std::string PolicyCell(const v1::ConsistencyConfig& c) {
  std::string kind = absl::AsciiStrToLower(absl::StripPrefix(
      v1::ConsistencyKind_Name(c.kind()), "CONSISTENCY_"));
  switch (c.kind()) {
    case v1::CONSISTENCY_SYNC:
      return absl::StrCat(kind, "/n=", c.num_workers());
    case v1::CONSISTENCY_SEMI_SYNC:
      return absl::StrCat(kind, "/n=", c.num_workers(), ",q=", c.quorum());
    case v1::CONSISTENCY_SSP:
      return absl::StrCat(kind, "/s=", c.staleness_bound());
    default:
      return "async";
  }
}

std::string AlignedRows(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
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

std::string StatusText(const ClusterStatus& status) {
  std::vector<std::vector<std::string>> shards = {
      {"SHARD", "ADDRESS", "INCARNATION", "UPTIME_S", "READY", "TABLES", "LIVE",
       "DEAD", "LEFT", "EVICTED", "DRAINING", "BUDGET_USED_MIB", "BUDGET_MIB",
       "CKPT", "CKPT_AGE_S", "CKPT_FAILED"}};
  std::vector<std::vector<std::string>> awaited = {{"SHARD", "AWAITED", "WORKERS"}};
  std::vector<std::vector<std::string>> tables = {
      {"TABLE", "SHARD", "VERSION", "POLICY", "TAU_P50", "TAU_P99", "TAU_MAX",
       "PUSHES", "REJECTED", "STEPS", "WAIT_P99_S", "STRAGGLER"}};
  for (size_t i = 0; i < status.shards.size(); ++i) {
    if (!status.shards[i].ok()) continue;
    const v1::ShardStatusResponse& s = *status.shards[i];
    const v1::StatsResponse& stats = s.stats();
    const v1::CheckpointStatus& c = s.checkpoint();
    const bool has_checkpoint = c.enabled() && c.last_age_s() >= 0;
    shards.push_back(
        {absl::StrCat(stats.shard_index()), status.addresses[i],
         Hex(stats.server_incarnation()), absl::StrFormat("%.0f", s.uptime_s()),
         s.ready() ? "yes" : "no", absl::StrCat(stats.tables_size()),
         absl::StrCat(stats.live_workers()), absl::StrCat(stats.dead_workers()),
         absl::StrCat(s.left_workers()), absl::StrCat(s.evicted_workers()),
         Draining(s), absl::StrFormat("%.1f", s.budget_used_bytes() / kMiB),
         absl::StrFormat("%.0f", s.budget_limit_bytes() / kMiB),
         !c.enabled() ? "off" : has_checkpoint ? absl::StrCat(c.last_sequence()) : "-",
         has_checkpoint ? absl::StrFormat("%.1f", c.last_age_s()) : "-",
         c.enabled() ? absl::StrCat(c.failed()) : "-"});
    if (stats.awaited_workers() > 0) {
      const std::vector<uint32_t> ids = AwaitedIds(stats);
      awaited.push_back({absl::StrCat(stats.shard_index()),
                         absl::StrCat(stats.awaited_workers()),
                         ids.empty() ? "-" : absl::StrJoin(ids, ",")});
    }
    for (const v1::TableStats& t : stats.tables()) {
      if (!Shown(status, t.info().config().name())) continue;
      tables.push_back(
          {t.info().config().name(), absl::StrCat(stats.shard_index()),
           absl::StrCat(t.info().version()), PolicyCell(t.info().config().consistency()),
           absl::StrFormat("%.0f", t.tau().p50()), absl::StrFormat("%.0f", t.tau().p99()),
           absl::StrFormat("%.0f", t.tau().max()), absl::StrCat(t.pushes()),
           absl::StrCat(t.rejected()), absl::StrCat(t.steps_closed()),
           absl::StrFormat("%.3f", t.step_wait_s().p99()), Straggler(t)});
    }
  }
  std::string out = absl::StrCat(AlignedRows(shards), "\n", AlignedRows(tables));
  if (awaited.size() > 1) absl::StrAppend(&out, "\n", AlignedRows(awaited));
  return out;
}

std::string StatusJson(const ClusterStatus& status) {
  std::vector<std::string> shards, errors;
  for (size_t i = 0; i < status.shards.size(); ++i) {
    if (!status.shards[i].ok()) {
      errors.push_back(absl::StrCat(
          "{\"shard\":", i, ",\"address\":", JsonQuoted(status.addresses[i]),
          ",\"error\":", JsonQuoted(status.shards[i].status().ToString()), "}"));
      continue;
    }
    const v1::ShardStatusResponse& s = *status.shards[i];
    const v1::StatsResponse& stats = s.stats();
    const v1::CheckpointStatus& c = s.checkpoint();
    std::vector<std::string> tables;
    for (const v1::TableStats& t : stats.tables()) {
      if (!Shown(status, t.info().config().name())) continue;
      tables.push_back(absl::StrFormat(
          "{\"name\":%s,\"policy\":%s,\"version\":%u,\"pushes\":%u,"
          "\"rejected\":%u,\"late\":%u,\"tau_mean\":%g,\"tau_p50\":%g,"
          "\"tau_p99\":%g,\"tau_max\":%g,\"steps_closed\":%u,\"open_step\":%u,"
          "\"step_wait_p50_s\":%g,\"step_wait_p99_s\":%g,\"step_wait_max_s\":%g,"
          "\"straggler\":%d}",
          JsonQuoted(t.info().config().name()),
          JsonQuoted(PolicyCell(t.info().config().consistency())),
          t.info().version(), t.pushes(), t.rejected(), t.late_pushes(),
          t.tau().mean(), t.tau().p50(), t.tau().p99(), t.tau().max(),
          t.steps_closed(), t.info().open_step(), t.step_wait_s().p50(),
          t.step_wait_s().p99(), t.step_wait_s().max(),
          t.has_straggler() ? static_cast<int64_t>(t.last_straggler()) : -1));
    }
    shards.push_back(absl::StrFormat(
        "{\"shard\":%u,\"address\":%s,\"incarnation\":\"%s\",\"uptime_s\":%g,"
        "\"ready\":%s,\"workers\":{\"live\":%u,\"dead\":%u,\"left\":%u,"
        "\"evicted\":%u,\"draining\":[%s],\"awaited\":%u,"
        "\"awaited_ids\":[%s]},\"budget\":{\"used_bytes\":%u,"
        "\"limit_bytes\":%u},\"checkpoint\":{\"enabled\":%s,\"taken\":%u,"
        "\"failed\":%u,\"last_sequence\":%u,\"last_age_s\":%g,\"last_bytes\":%u,"
        "\"last_error\":%s,\"restored\":%s},\"tables\":[%s]}",
        stats.shard_index(), JsonQuoted(status.addresses[i]),
        Hex(stats.server_incarnation()), s.uptime_s(), s.ready() ? "true" : "false",
        stats.live_workers(), stats.dead_workers(), s.left_workers(),
        s.evicted_workers(), absl::StrJoin(s.draining_workers(), ","),
        stats.awaited_workers(), absl::StrJoin(AwaitedIds(stats), ","),
        s.budget_used_bytes(), s.budget_limit_bytes(),
        c.enabled() ? "true" : "false", c.taken(), c.failed(), c.last_sequence(),
        c.last_age_s(), c.last_bytes(), JsonQuoted(c.last_error()),
        c.restored() ? "true" : "false", absl::StrJoin(tables, ",")));
  }
  return absl::StrCat("{\"shards\":[", absl::StrJoin(shards, ","), "],\"errors\":[",
                      absl::StrJoin(errors, ","), "]}\n");
}

}  // namespace taups
