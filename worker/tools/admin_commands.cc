#include "worker/tools/admin_commands.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
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

absl::StatusOr<uint64_t> CommonStep(
    const std::vector<absl::StatusOr<v1::ShardStatusResponse>>& shards,
    std::optional<uint64_t> step) {
  RETURN_IF_ERROR(Failures(shards, "rollback (asking each shard for its steps)"));
  std::set<uint64_t> common;
  std::vector<std::string> held;  // "shard 0: [3, 6]"
  // Shards that resumed alone (CheckpointStatus.resumed_alone): their cuts
  // after the step they resumed at mix models, so the newest step every
  // shard holds is looked for at or before the smallest such step.
  std::optional<uint64_t> cap;
  std::vector<std::string> resumed;  // "shard 1 at step 4"
  for (size_t i = 0; i < shards.size(); ++i) {
    const v1::CheckpointStatus& c = shards[i]->checkpoint();
    if (!c.enabled()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "shard ", i, " runs without --checkpoint_dir; nothing to roll back to"));
    }
    const std::set<uint64_t> steps(c.sync_steps().begin(), c.sync_steps().end());
    held.push_back(absl::StrCat("shard ", i, ": [", absl::StrJoin(steps, ", "), "]"));
    if (c.resumed_alone()) {
      cap = std::min(cap.value_or(c.resumed_step()), c.resumed_step());
      resumed.push_back(absl::StrCat("shard ", i, " at step ", c.resumed_step()));
    }
    if (i == 0) {
      common = steps;
    } else {
      std::set<uint64_t> both;
      for (uint64_t s : steps) {
        if (common.contains(s)) both.insert(s);
      }
      common = std::move(both);
    }
  }
  const std::string holds = absl::StrJoin(held, "; ");
  const std::string mixed =
      resumed.empty()
          ? std::string()
          : absl::StrCat("; resumed alone from a checkpoint: ",
                         absl::StrJoin(resumed, ", "),
                         ", so later cuts of those shards are not a model that existed");
  if (step) {
    if (!common.contains(*step)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "not every shard holds a checkpoint of step ", *step,
          " (step cuts held: ", holds, mixed, "); nothing rolled back"));
    }
    if (cap.has_value() && *step > *cap) {
      return absl::FailedPreconditionError(absl::StrCat(
          "step ", *step, " is after step ", *cap, mixed,
          "; pick a step at or before ", *cap, "; nothing rolled back"));
    }
    return *step;
  }
  if (cap.has_value()) std::erase_if(common, [&](uint64_t s) { return s > *cap; });
  if (common.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no step is held by every shard (step cuts held: ", holds, mixed,
        "; see --checkpoint_every_steps and --checkpoint_keep); nothing rolled back"));
  }
  return *common.rbegin();
}

absl::Status RollBackCluster(ShardAdmin& admin, std::optional<uint64_t> step) {
  ASSIGN_OR_RETURN(const uint64_t cut, CommonStep(admin.ShardStatus(), step));
  const std::vector<absl::StatusOr<v1::RollbackResponse>> answers = admin.Rollback(cut);
  int rolled = 0;
  for (const auto& answer : answers) {
    if (!answer.ok()) continue;
    ++rolled;
    uint64_t version = 0;
    for (const v1::RolledBackTable& t : answer->tables()) version += t.version();
    std::printf("shard %u rolled back to step %lu (version %lu); %lu updates after "
                "it discarded (%s, %d tables, %u live workers, %.3f s)\n",
                answer->shard_index(), static_cast<unsigned long>(cut),
                static_cast<unsigned long>(version),
                static_cast<unsigned long>(answer->discarded_updates()),
                answer->path().c_str(), answer->tables_size(),
                answer->live_workers(), answer->duration_s());
  }
  if (rolled > 0 && rolled < static_cast<int>(answers.size())) {
    std::fprintf(stderr,
                 "ps_admin: only %d of %zu shards rolled back to step %lu; the "
                 "others still hold their state: run rollback --step=%lu again\n",
                 rolled, answers.size(), static_cast<unsigned long>(cut),
                 static_cast<unsigned long>(cut));
  }
  return Failures(answers, "rollback");
}

}  // namespace taups
