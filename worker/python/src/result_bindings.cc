// What pulls, pushes and stats calls return, as read-only Python objects.
#include <string>
#include <vector>

#include <pybind11/stl.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "taups/client.h"
#include "worker/python/src/bindings.h"

namespace py = pybind11;

namespace taups::python {
namespace {

const char* PyBool(bool b) { return b ? "True" : "False"; }

std::vector<uint64_t> TouchedTaus(const PushResult& r) {
  std::vector<uint64_t> taus;
  for (const ShardPushResult& s : r.shards) {
    if (s.touched) taus.push_back(s.tau);
  }
  return taus;
}

void BindPull(py::module_& m) {
  py::class_<PullInfo>(
      m, "PullInfo",
      "What a pull read. Pass it as `basis` to a later push to measure the "
      "push's staleness against this pull instead of the latest one.")
      .def_property_readonly(
          "shard_versions",
          [](const PullInfo& p) { return p.shard_versions; },
          "table version read on each shard (0 where untouched)")
      .def_property_readonly(
          "shard_touched",
          [](const PullInfo& p) {
            return std::vector<bool>(p.shard_touched.begin(),
                                     p.shard_touched.end());
          })
      .def_readonly("step", &PullInfo::step,
                    "sync/semi_sync: the step the table is gathering")
      .def_readonly("server_incarnation_changed",
                    &PullInfo::server_incarnation_changed)
      .def_readonly("row_versions", &PullInfo::row_versions,
                    "pull_sparse(row_versions=True): each key's row version "
                    "(updates applied to the row), in key order; else empty")
      .def_property_readonly(
          "elapsed_s",
          [](const PullInfo& p) { return absl::ToDoubleSeconds(p.elapsed); },
          "seconds the pull took, waits for the table's policy included")
      .def("__repr__", [](const PullInfo& p) {
        return absl::StrCat("PullInfo(shard_versions=[",
                            absl::StrJoin(p.shard_versions, ", "),
                            "], step=", p.step, ")");
      });
}

void BindPush(py::module_& m) {
  py::class_<ShardPushResult>(m, "ShardPushResult",
                              "One shard's answer to a push.")
      .def_readonly("touched", &ShardPushResult::touched,
                    "False: the push sent this shard nothing")
      .def_readonly("accepted", &ShardPushResult::accepted)
      .def_readonly("tau", &ShardPushResult::tau,
                    "staleness: version now - version the gradient read")
      .def_readonly("lr_factor", &ShardPushResult::lr_factor)
      .def_readonly("new_version", &ShardPushResult::new_version)
      .def_readonly("reject_reason", &ShardPushResult::reject_reason)
      .def("__repr__", [](const ShardPushResult& s) {
        return absl::StrCat("ShardPushResult(touched=", PyBool(s.touched),
                            ", accepted=", PyBool(s.accepted), ", tau=", s.tau,
                            ", new_version=", s.new_version, ")");
      });
  py::class_<PushResult>(m, "PushResult", "Every shard's answer to a push.")
      .def_readonly("shards", &PushResult::shards, "indexed by shard")
      .def_property_readonly("all_accepted", &PushResult::all_accepted,
                             "every touched shard accepted the push")
      .def_property_readonly("max_tau", &PushResult::max_tau)
      .def_property_readonly("mean_tau", &PushResult::mean_tau,
                             "over the touched shards")
      .def_readonly("row_taus", &PushResult::row_taus,
                    "per-key tau when the basis pull had row versions (key "
                    "order); empty otherwise")
      .def_property_readonly("max_row_tau", &PushResult::max_row_tau)
      .def_property_readonly("mean_row_tau", &PushResult::mean_row_tau)
      .def_readonly("deferred", &PushResult::deferred,
                    "accumulated locally (accumulate_steps), nothing sent")
      .def_property_readonly("taus", &TouchedTaus,
                             "tau of each touched shard, in shard order")
      .def("__repr__", [](const PushResult& r) {
        return absl::StrCat("PushResult(all_accepted=",
                            PyBool(r.all_accepted()), ", taus=[",
                            absl::StrJoin(TouchedTaus(r), ", "), "])");
      });
}

void BindStats(py::module_& m) {
  py::class_<WorkerShardStats>(m, "WorkerShardStats",
                               "One worker as one shard sees it.")
      .def_readonly("worker_id", &WorkerShardStats::worker_id)
      .def_readonly("live", &WorkerShardStats::live)
      .def_readonly("clock", &WorkerShardStats::clock)
      .def_readonly("last_seen_age_s", &WorkerShardStats::last_seen_age_s)
      .def_readonly("tau_mean", &WorkerShardStats::tau_mean)
      .def_readonly("tau_max", &WorkerShardStats::tau_max)
      .def_readonly("pushes", &WorkerShardStats::pushes)
      .def_readonly("rejected", &WorkerShardStats::rejected)
      .def_readonly("downweighted", &WorkerShardStats::downweighted)
      .def_readonly("closed_steps_as_last",
                    &WorkerShardStats::closed_steps_as_last)
      .def_readonly("missed_steps", &WorkerShardStats::missed_steps);
  py::class_<TableShardStats>(m, "TableShardStats",
                              "One shard's measurements of one table.")
      .def_readonly("shard", &TableShardStats::shard)
      .def_readonly("version", &TableShardStats::version)
      .def_readonly("pushes", &TableShardStats::pushes)
      .def_readonly("rejected", &TableShardStats::rejected)
      .def_readonly("downweighted", &TableShardStats::downweighted)
      .def_readonly("late", &TableShardStats::late)
      .def_readonly("push_raw_bytes", &TableShardStats::push_raw_bytes)
      .def_readonly("push_wire_bytes", &TableShardStats::push_wire_bytes)
      .def_readonly("pull_raw_bytes", &TableShardStats::pull_raw_bytes)
      .def_readonly("pull_wire_bytes", &TableShardStats::pull_wire_bytes)
      .def_readonly("encoded_pushes", &TableShardStats::encoded_pushes)
      .def_readonly("bad_blocks", &TableShardStats::bad_blocks)
      .def_readonly("tau_mean", &TableShardStats::tau_mean)
      .def_readonly("tau_p50", &TableShardStats::tau_p50)
      .def_readonly("tau_p99", &TableShardStats::tau_p99)
      .def_readonly("tau_max", &TableShardStats::tau_max)
      .def_readonly("steps_closed", &TableShardStats::steps_closed)
      .def_readonly("timeout_closes", &TableShardStats::timeout_closes)
      .def_readonly("step_wait_p50_s", &TableShardStats::step_wait_p50_s)
      .def_readonly("step_wait_p99_s", &TableShardStats::step_wait_p99_s)
      .def_readonly("step_wait_max_s", &TableShardStats::step_wait_max_s)
      .def_readonly("last_straggler", &TableShardStats::last_straggler)
      .def_readonly("live_workers", &TableShardStats::live_workers)
      .def_readonly("dead_workers", &TableShardStats::dead_workers)
      .def_readonly("lease_expirations", &TableShardStats::lease_expirations)
      .def_readonly("workers", &TableShardStats::workers)
      .def_readonly("sparse_rows", &TableShardStats::sparse_rows)
      .def_readonly("sparse_evictions", &TableShardStats::sparse_evictions)
      .def_readonly("sparse_ttl_expired", &TableShardStats::sparse_ttl_expired)
      .def_readonly("sparse_refused", &TableShardStats::sparse_refused)
      .def_readonly("sparse_bytes", &TableShardStats::sparse_bytes)
      .def_readonly("sparse_row_limit", &TableShardStats::sparse_row_limit)
      .def_readonly("row_tau_count", &TableShardStats::row_tau_count)
      .def_readonly("row_tau_mean", &TableShardStats::row_tau_mean)
      .def_readonly("row_tau_p50", &TableShardStats::row_tau_p50)
      .def_readonly("row_tau_p99", &TableShardStats::row_tau_p99)
      .def_readonly("row_tau_max", &TableShardStats::row_tau_max)
      .def("__repr__", [](const TableShardStats& s) {
        return absl::StrCat("TableShardStats(shard=", s.shard,
                            ", version=", s.version, ", pushes=", s.pushes,
                            ", tau_mean=", s.tau_mean, ")");
      });
}

}  // namespace

void BindResults(py::module_& m) {
  BindPull(m);
  BindPush(m);
  BindStats(m);
}

}  // namespace taups::python
