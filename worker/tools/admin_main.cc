// ps_admin (psctl): look at and steer a running tauPS cluster. One binary,
// one home for every operator command:
//
//   ps_admin --servers=h:p,h:p status [--tables=T,U] [--json]
//   ps_admin --servers=h:p,h:p checkpoint [--json]
//   ps_admin --servers=h:p,h:p evict --worker=N [--drain]
//   ps_admin --servers=h:p,h:p rollback [--step=S]
//   ps_admin --servers=h:p,h:p stats --table=mlp
//   ps_admin --servers=h:p,h:p set-policy --table=mlp --num_workers=4
//            --consistency=semi_sync --quorum=0.75 --late=reuse_last
//   ps_admin --servers=h:p,h:p drop-table --table=mlp
//
// status, checkpoint, evict and rollback ask every shard itself
// (shard_admin.h) and report each shard's answer; a shard that fails is
// named with its error and the exit status is 1.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_split.h"
#include "common/flag_checks.h"
#include "common/status_macros.h"
#include "common/tool_start.h"
#include "server/cluster_config.h"
#include "taups/client.h"
#include "worker/tools/cluster_status.h"
#include "worker/tools/admin_commands.h"
#include "worker/tools/policy_flags.h"
#include "worker/tools/shard_admin.h"
#include "worker/tools/transport_flags.h"

ABSL_FLAG(std::string, servers, "",
          "Comma-separated host:port of every shard, in shard order");
ABSL_FLAG(std::string, config, "",
          "Cluster config file (as ps_server --config): the shards, instead "
          "of --servers");
ABSL_FLAG(std::string, table, "", "The table to inspect or change");
ABSL_FLAG(std::string, tables, "",
          "status: comma-separated tables to show (default: --table)");
ABSL_FLAG(bool, json, false,
          "status, checkpoint: print JSON instead of text tables");
ABSL_FLAG(int64_t, worker, -1, "evict: the worker id to evict or drain");
ABSL_FLAG(bool, drain, false,
          "evict: let the worker finish the step it is in, then refuse its "
          "later steps and registrations (until the shards restart)");
ABSL_FLAG(int64_t, step, -1,
          "rollback: the sync step to roll every shard back to (default: the "
          "newest step every shard holds a checkpoint of)");
ABSL_FLAG(double, timeout_s, 60,
          "status, checkpoint, evict, rollback: how long each shard may take to answer");
ABSL_FLAG(uint32_t, num_workers, 0,
          "set-policy: workers a sync/semi_sync/ssp barrier expects");

namespace taups {
namespace {

// Every numeric flag of ps_admin (its own, then the policy flags').
std::vector<FlagRange> AllFlagRanges() {
  std::vector<FlagRange> ranges = {{"num_workers", 0, 65536},
                                   {"worker", -1, 4294967294.0},
                                   {"step", -1, 9.2e18},
                                   {"timeout_s", 0.001, 86400}};
  AppendFlagRanges(ranges, PolicyFlagRanges());
  return ranges;
}

// The shards and how to reach them, from the flags.
absl::StatusOr<ClientOptions> AdminOptions() {
  ClientOptions options;
  ASSIGN_OR_RETURN(ClusterConfig cluster,
                   ClusterFromServersOrConfig(absl::GetFlag(FLAGS_servers),
                                              absl::GetFlag(FLAGS_config)));
  options.servers = std::move(cluster.shards);
  options.register_worker = false;  // an observer, not a worker
  options.worker_id = UINT32_MAX;
  options.connect_timeout = absl::Seconds(5);
  RETURN_IF_ERROR(ApplyTransportFlags(options));
  return options;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectAdmin() {
  ASSIGN_OR_RETURN(ClientOptions options, AdminOptions());
  return Client::Connect(options);
}

absl::StatusOr<std::unique_ptr<ShardAdmin>> OpenShardAdmin() {
  ASSIGN_OR_RETURN(ClientOptions options, AdminOptions());
  return ShardAdmin::Open(options,
                          absl::Seconds(absl::GetFlag(FLAGS_timeout_s)));
}

absl::Status PrintStats(Client& client, const std::string& table) {
  ASSIGN_OR_RETURN(std::vector<TableShardStats> shards, client.Stats(table));
  for (const TableShardStats& s : shards) {
    std::printf(
        "shard %u table %s: version %lu, pushes %lu, tau mean %.2f p50 %.0f "
        "p99 %.0f max %.0f, rejected %lu, down-weighted %lu, late %lu, "
        "workers live %u dead %u (lease expirations %lu)\n",
        s.shard, table.c_str(), s.version, s.pushes, s.tau_mean, s.tau_p50,
        s.tau_p99, s.tau_max, s.rejected, s.downweighted, s.late,
        s.live_workers, s.dead_workers, s.lease_expirations);
    if (s.steps_closed > 0) {
      std::printf(
          "  steps closed %lu (%lu by timeout); wait p50 %.3fs p99 %.3fs max "
          "%.3fs; last step held up by worker %ld\n",
          s.steps_closed, s.timeout_closes, s.step_wait_p50_s,
          s.step_wait_p99_s, s.step_wait_max_s, s.last_straggler);
    }
    if (s.sparse_rows > 0 || s.sparse_row_limit > 0 || s.row_tau_count > 0) {
      std::printf(
          "  sparse rows %lu (limit %lu, %lu bytes), evicted %lu, ttl expired "
          "%lu, refused %lu; per-row tau over %lu rows: mean %.2f p50 %.0f "
          "p99 %.0f max %.0f\n",
          s.sparse_rows, s.sparse_row_limit, s.sparse_bytes, s.sparse_evictions,
          s.sparse_ttl_expired, s.sparse_refused, s.row_tau_count,
          s.row_tau_mean, s.row_tau_p50, s.row_tau_p99, s.row_tau_max);
    }
    if (s.push_raw_bytes > 0 || s.pull_raw_bytes > 0) {
      std::printf(
          "  bytes pushed %lu on the wire for %lu float32 (%.3f), %lu encoded "
          "pushes, %lu malformed blocks refused; pulled %lu for %lu (%.3f)\n",
          s.push_wire_bytes, s.push_raw_bytes,
          s.push_raw_bytes ? double(s.push_wire_bytes) / s.push_raw_bytes : 0.0,
          s.encoded_pushes, s.bad_blocks, s.pull_wire_bytes, s.pull_raw_bytes,
          s.pull_raw_bytes ? double(s.pull_wire_bytes) / s.pull_raw_bytes : 0.0);
    }
    for (const WorkerShardStats& w : s.workers) {
      std::printf(
          "  worker %-4u %-4s clock %-7lu seen %.1fs ago  pushes %-7lu tau "
          "mean %.2f max %.0f  rejected %lu  down-weighted %lu  held up %lu "
          "steps  missed %lu\n",
          w.worker_id, w.live ? "live" : "DEAD", w.clock, w.last_seen_age_s,
          w.pushes, w.tau_mean, w.tau_max, w.rejected, w.downweighted,
          w.closed_steps_as_last, w.missed_steps);
    }
  }
  return absl::OkStatus();
}

constexpr char kCommands[] =
    "status, checkpoint, evict, rollback, stats, set-policy or drop-table";

absl::Status Run(const std::vector<char*>& args) {
  if (args.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "expected one command (", kCommands, "); see ps_admin --help"));
  }
  const std::string command = args[1];
  const std::string table = absl::GetFlag(FLAGS_table);
  const bool json = absl::GetFlag(FLAGS_json);
  if (command == "status") {
    std::vector<std::string> tables = absl::StrSplit(
        absl::GetFlag(FLAGS_tables), ',', absl::SkipWhitespace());
    if (tables.empty() && !table.empty()) tables.push_back(table);
    ASSIGN_OR_RETURN(std::unique_ptr<ShardAdmin> admin, OpenShardAdmin());
    return PrintStatus(*admin, tables, json);
  }
  if (command == "checkpoint") {
    ASSIGN_OR_RETURN(std::unique_ptr<ShardAdmin> admin, OpenShardAdmin());
    return PrintCheckpoints(*admin, json);
  }
  if (command == "evict") {
    const int64_t worker = absl::GetFlag(FLAGS_worker);
    if (worker < 0) return absl::InvalidArgumentError("evict needs --worker=N");
    ASSIGN_OR_RETURN(std::unique_ptr<ShardAdmin> admin, OpenShardAdmin());
    return PrintEviction(*admin, static_cast<uint32_t>(worker),
                         absl::GetFlag(FLAGS_drain));
  }
  if (command == "rollback") {
    const int64_t step = absl::GetFlag(FLAGS_step);
    ASSIGN_OR_RETURN(std::unique_ptr<ShardAdmin> admin, OpenShardAdmin());
    return RollBackCluster(*admin, step < 0 ? std::nullopt
                                            : std::optional<uint64_t>(step));
  }
  if (command != "stats" && command != "set-policy" && command != "drop-table") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown command '", command, "'; expected ", kCommands));
  }
  if (table.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(command, " needs --table"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Client> client, ConnectAdmin());
  if (command == "stats") return PrintStats(*client, table);
  if (command == "set-policy") {
    ASSIGN_OR_RETURN(PolicyFlags policy,
                     PolicyFromFlags(absl::GetFlag(FLAGS_num_workers)));
    RETURN_IF_ERROR(
        client->SetConsistency(table, policy.consistency, policy.staleness));
    std::printf("table %s: consistency now %s\n", table.c_str(),
                ConsistencyKindName(policy.consistency.kind));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(const uint64_t freed, client->DropTable(table));
  std::printf("table %s dropped on %d shards; %lu bytes of memory budget freed\n",
              table.c_str(), client->num_shards(),
              static_cast<unsigned long>(freed));
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "ps_admin: inspect or steer a tauPS cluster (the operator's psctl).\n"
    "Every command takes the shards as --servers=h:p,h:p (shard order) or "
    "--config=FILE, and --tls_* / --auth_token_file as ps_worker does.\n"
    "Commands:\n"
    "  status [--tables=T,U] [--json]   every shard (incarnation, uptime, "
    "workers live/dead/left/evicted, budget, last checkpoint) and every "
    "table on it (version, policy, tau, steps, wait, straggler); reader or "
    "admin role\n"
    "  checkpoint [--json]              a checkpoint on every shard now; "
    "answers once each is durable (admin)\n"
    "  evict --worker=N [--drain]       declare worker N dead on every shard "
    "now, or with --drain after the step it is in (admin)\n"
    "  rollback [--step=S]             every shard restores in place its "
    "checkpoint of sync step S (default: the newest step all hold; refused "
    "when one lacks it); workers register again and go on from it (admin)\n"
    "  stats --table=T                  the table's figures per shard and "
    "worker\n"
    "  set-policy --table=T --num_workers=N --consistency=sync|semi_sync|"
    "ssp|async [--quorum --step_timeout_s --late --ssp_bound --tau_max "
    "--downweight ...]   (admin)\n"
    "  drop-table --table=T             frees its memory budget on every "
    "shard (admin)\n"
    "Exit status 2 for a flag out of range, 1 for other failures (a shard "
    "that failed is named with its error).";

}  // namespace
}  // namespace taups

int main(int argc, char** argv) {
  // Results go to stdout; the client library's warnings to stderr.
  const std::vector<char*> args = taups::StartToolOrExit(
      argc, argv,
      {.name = "ps_admin",
       .usage = taups::kUsage,
       .ranges = taups::AllFlagRanges(),
       .log_level = "warn"});
  const absl::Status status = taups::Run(args);
  if (!status.ok()) return taups::ToolFailure("ps_admin", status.ToString(), 1);
  return 0;
}
