// HostileShard::Digest: the shard's state as far as a client can read it,
// as text (one item a line, so a failing comparison shows what moved).
//
// What it holds, read through read-only calls:
//  - Stats (reader): per table its config, version, open step, sparse rows
//    and bytes, tau distribution, pushes stamped, steps closed (and how),
//    the straggler, push bytes; per worker its liveness, clock, tau and
//    step counts; the shard's live and dead workers and lease expirations;
//  - every value of this shard's part of each dense table, and the rows
//    (with their row versions) of the sparse keys the setup created, pulled
//    by the auditor, bit for bit;
//  - /metrics: memory in use by tables, per-worker state and staged
//    pushes, workers by state, seats per table, budget per table, waiting
//    pulls, tables dropped.
// What it leaves out, and why: counters of refusals (rejected,
// nonfinite_rejected, bad_blocks, budget and waiting refusals, duplicates)
// move when a hostile request is refused, which is their job; the byte
// counters are traffic (the digest's own pulls move the pull bytes, and a
// replayed push's bytes did travel, though nothing was applied); a
// worker's last-seen age moves with the clock. Optimizer state (adam's
// moments, adagrad's accumulators) is not readable on the wire: a push that
// corrupted it without moving a value would go unseen here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "tests/hostile/hostile_shard.h"

namespace taups::testing::hostile {
namespace {

constexpr const char* kMetricsKept[] = {
    "taups_memory_used_bytes", "taups_workers",        "taups_lease_expirations_total",
    "taups_table_version",     "taups_table_open_step", "taups_pushes_total",
    "taups_steps_closed_total", "taups_step_timeout_closes_total",
    "taups_table_workers",     "taups_table_budget_bytes", "taups_sparse_rows",
    "taups_sparse_bytes",      "taups_sparse_evictions_total",
    "taups_tables_dropped_total", "taups_waiting_pulls",
};

bool Kept(absl::string_view line) {
  for (const char* name : kMetricsKept) {
    if (absl::StartsWith(line, name) && line.size() > std::strlen(name) &&
        (line[std::strlen(name)] == '{' || line[std::strlen(name)] == ' ')) {
      return true;
    }
  }
  return false;
}

// Exact bits of each float, so -0 and 0 or two NaNs never look alike.
std::string FloatBits(const std::string& bytes) {
  std::string out;
  for (size_t i = 0; i + 4 <= bytes.size(); i += 4) {
    float v;
    std::memcpy(&v, bytes.data() + i, 4);
    char text[32];
    std::snprintf(text, sizeof(text), " %a", static_cast<double>(v));
    out += text;
  }
  return out;
}

std::string StatsPart(HostileShard& shard) {
  v1::StatsRequest request;
  v1::StatsResponse stats;
  auto context = shard.Context(Who::kReader);
  const grpc::Status status = shard.stub().Stats(context.get(), request, &stats);
  INFO(status.error_message());
  REQUIRE(status.ok());
  stats.clear_server_incarnation();
  for (v1::TableStats& table : *stats.mutable_tables()) {
    table.clear_rejected();
    table.clear_nonfinite_rejected();
    table.clear_bad_blocks();
    table.clear_pull_raw_bytes();
    table.clear_pull_wire_bytes();
    table.clear_push_raw_bytes();
    table.clear_push_wire_bytes();
    for (v1::WorkerStats& worker : *table.mutable_workers()) {
      worker.clear_last_seen_age_s();
      worker.clear_rejected();
    }
    std::sort(table.mutable_workers()->begin(), table.mutable_workers()->end(),
              [](const v1::WorkerStats& a, const v1::WorkerStats& b) {
                return a.worker_id() < b.worker_id();
              });
  }
  std::sort(stats.mutable_tables()->begin(), stats.mutable_tables()->end(),
            [](const v1::TableStats& a, const v1::TableStats& b) {
              return a.info().config().name() < b.info().config().name();
            });
  std::string text;
  google::protobuf::TextFormat::PrintToString(stats, &text);
  return text;
}

std::string DensePart(HostileShard& shard, const char* table, uint64_t count) {
  v1::PullDenseRequest request;
  request.set_table(table);
  request.set_count(count);
  request.set_worker_id(9);
  v1::PullDenseResponse response;
  auto context = shard.Context(Who::kAuditor);
  const grpc::Status status = shard.stub().PullDense(context.get(), request, &response);
  INFO(table << ": " << status.error_message());
  REQUIRE(status.ok());
  return absl::StrCat("values ", table, " version ", response.version(), " step ",
                      response.step(), ":", FloatBits(response.values()), "\n");
}

std::string SparsePart(HostileShard& shard) {
  v1::PullSparseRequest request;
  request.set_table(kSparse);
  request.set_keys(Keys(shard.own_keys()));
  request.set_worker_id(9);
  request.set_with_row_versions(true);
  v1::PullSparseResponse response;
  auto context = shard.Context(Who::kAuditor);
  const grpc::Status status = shard.stub().PullSparse(context.get(), request, &response);
  INFO(status.error_message());
  REQUIRE(status.ok());
  std::string out = absl::StrCat("rows ", kSparse, " version ", response.version(), ":",
                                 FloatBits(response.values()), "\nrow versions");
  for (size_t i = 0; i + 8 <= response.row_versions().size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, response.row_versions().data() + i, 8);
    absl::StrAppend(&out, " ", v);
  }
  return out + "\n";
}

}  // namespace

std::string HostileShard::Digest() {
  std::string digest = StatsPart(*this);
  digest += DensePart(*this, kDense, kDenseHere);
  digest += DensePart(*this, kSync, kSyncHere);
  digest += SparsePart(*this);
  for (absl::string_view line : absl::StrSplit(Metrics(), '\n')) {
    if (Kept(line)) absl::StrAppend(&digest, line, "\n");
  }
  return digest;
}

}  // namespace taups::testing::hostile
