#include "worker/tools/admin_commands.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "worker/tools/cluster_status.h"

namespace taups {
namespace {

// Prints each failed shard's error to stderr; the first one's code with a
// count, or OK when every shard answered.
template <typename Answer>
absl::Status Failures(const std::vector<absl::StatusOr<Answer>>& answers,
                      const char* what) {
  absl::Status first;
  int failed = 0;
  for (const absl::StatusOr<Answer>& answer : answers) {
    if (answer.ok()) continue;
    std::fprintf(stderr, "ps_admin: %s\n", answer.status().ToString().c_str());
    if (failed++ == 0) first = answer.status();
  }
  if (failed == 0) return absl::OkStatus();
  return absl::Status(first.code(),
                      absl::StrCat(what, " failed on ", failed, " of ",
                                   answers.size(), " shards (see above)"));
}

std::string CheckpointText(const v1::CheckpointResponse& c) {
  std::vector<std::string> tables;
  for (const v1::CheckpointedTable& t : c.tables()) {
    tables.push_back(absl::StrCat(t.name(), "@", t.version()));
  }
  return absl::StrFormat(
      "shard %u: checkpoint %u written to %s (%s, %u bytes, %.3f s)%s: %s\n",
      c.shard_index(), c.sequence(), c.path(),
      c.incremental() ? "delta" : "full", c.bytes(), c.duration_s(),
      c.step_cut() ? absl::StrCat(", at sync step ", c.sync_step()) : "",
      tables.empty() ? "no tables" : absl::StrJoin(tables, " "));
}

std::string CheckpointJson(const v1::CheckpointResponse& c) {
  std::vector<std::string> tables;
  for (const v1::CheckpointedTable& t : c.tables()) {
    tables.push_back(absl::StrFormat("{\"name\":%s,\"version\":%u,\"open_step\":%u}",
                                     JsonQuoted(t.name()), t.version(), t.open_step()));
  }
  return absl::StrFormat(
      "{\"shard\":%u,\"sequence\":%u,\"path\":%s,\"incremental\":%s,"
      "\"bytes\":%u,\"duration_s\":%g,\"sync_step\":%s,\"tables\":[%s]}",
      c.shard_index(), c.sequence(), JsonQuoted(c.path()),
      c.incremental() ? "true" : "false", c.bytes(), c.duration_s(),
      c.step_cut() ? absl::StrCat(c.sync_step()) : "null",
      absl::StrJoin(tables, ","));
}

}  // namespace

absl::Status PrintStatus(ShardAdmin& admin, const std::vector<std::string>& tables,
                         bool json) {
  ClusterStatus status;
  for (int i = 0; i < admin.num_shards(); ++i) status.addresses.push_back(admin.address(i));
  status.shards = admin.ShardStatus();
  status.tables = tables;
  const std::string out = json ? StatusJson(status) : StatusText(status);
  std::fputs(out.c_str(), stdout);
  absl::Status failed = Failures(status.shards, "status");
  if (!failed.ok()) return failed;
  for (const std::string& table : tables) {
    bool found = false;
    for (const auto& shard : status.shards) {
      for (const v1::TableStats& t : shard->stats().tables()) {
        found |= t.info().config().name() == table;
      }
    }
    if (!found) {
      return absl::NotFoundError(absl::StrCat("no shard holds a table '", table, "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status PrintCheckpoints(ShardAdmin& admin, bool json) {
  const std::vector<absl::StatusOr<v1::CheckpointResponse>> answers = admin.Checkpoint();
  std::vector<std::string> written;
  for (const auto& answer : answers) {
    if (!answer.ok()) continue;
    if (json) {
      written.push_back(CheckpointJson(*answer));
    } else {
      std::fputs(CheckpointText(*answer).c_str(), stdout);
    }
  }
  if (json) std::printf("{\"checkpoints\":[%s]}\n", absl::StrJoin(written, ",").c_str());
  return Failures(answers, "checkpoint");
}

absl::Status PrintEviction(ShardAdmin& admin, uint32_t worker, bool drain) {
  const std::vector<absl::StatusOr<v1::EvictWorkerResponse>> answers =
      admin.EvictWorker(worker, drain);
  for (const auto& answer : answers) {
    if (!answer.ok()) continue;
    const char* was = answer->was_live() ? "was live" : "was not live";
    if (!drain) {
      std::printf("shard %u: worker %u evicted (%s); no step waits for it\n",
                  answer->shard_index(), worker, was);
    } else if (answer->draining_tables().empty()) {
      std::printf("shard %u: worker %u drained (%s); its registrations and "
                  "pushes are refused now\n", answer->shard_index(), worker, was);
    } else {
      std::printf("shard %u: worker %u draining (%s): it may finish the open "
                  "step of %s, then it is out\n", answer->shard_index(), worker,
                  was, absl::StrJoin(answer->draining_tables(), ", ").c_str());
    }
  }
  return Failures(answers, drain ? "drain" : "evict");
}

}  // namespace taups
