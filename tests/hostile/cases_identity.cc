// Who is calling: missing and wrong credentials, roles calling what they may
// not, a worker principal acting as another principal's worker ids, and
// registrations the shard must not take.
#include "absl/strings/str_cat.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {
namespace {

using Stub = v1::ParameterServer::Stub;
using grpc::StatusCode;

// A Heartbeat or Leave of `worker`.
template <typename Request>
Request Membership(uint32_t worker, uint64_t incarnation = kIncarnation) {
  Request r;
  r.set_worker_id(worker);
  r.set_worker_incarnation(incarnation);
  return r;
}

// One well-formed request of every RPC, as worker `worker` where the RPC
// names one: what a legitimate caller with the right credential may send.
struct Rpc {
  std::string name;
  std::function<Outcome(HostileShard&, Who)> send;
};

std::vector<Rpc> EveryRpc(const HostileShard& shard, uint32_t worker) {
  const std::vector<uint64_t> keys = {shard.own_keys()[0], shard.own_keys()[1]};
  const std::string row_gradients = Floats(std::vector<float>(2 * kDim, 0.25f));
  return {
      {"CreateTable",
       [](HostileShard& s, Who who) {
         v1::CreateTableRequest r;
         r.mutable_config()->set_name("intruder");
         r.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
         r.mutable_config()->set_dense_size(4);
         return Send(s, who, &Stub::CreateTable, r);
       }},
      {"GetTable",
       [](HostileShard& s, Who who) {
         v1::GetTableRequest r;
         r.set_name(kDense);
         return Send(s, who, &Stub::GetTable, r);
       }},
      {"PullDense",
       [worker](HostileShard& s, Who who) {
         return Send(s, who, &Stub::PullDense, DensePull(kDense, worker, 0, 4));
       }},
      {"PushDense",
       [worker](HostileShard& s, Who who) {
         return Send(s, who, &Stub::PushDense,
                     DensePush(kSync, worker, 900, Floats(std::vector<float>(kSyncHere, 1))));
       }},
      {"PullSparse",
       [worker, keys](HostileShard& s, Who who) {
         return Send(s, who, &Stub::PullSparse, SparsePull(kSparse, worker, keys));
       }},
      {"PushSparse",
       [worker, keys, row_gradients](HostileShard& s, Who who) {
         return Send(s, who, &Stub::PushSparse,
                     SparsePush(kSparse, worker, 900, keys, row_gradients));
       }},
      {"Register",
       [worker](HostileShard& s, Who who) {
         return Send(s, who, &Stub::Register, Registration(worker, kMaxLeaseS, 5));
       }},
      {"Heartbeat",
       [worker](HostileShard& s, Who who) {
         return Send(s, who, &Stub::Heartbeat, Membership<v1::HeartbeatRequest>(worker));
       }},
      {"Leave",
       [worker](HostileShard& s, Who who) {
         return Send(s, who, &Stub::Leave, Membership<v1::LeaveRequest>(worker));
       }},
      {"SetConsistency",
       [](HostileShard& s, Who who) {
         v1::SetConsistencyRequest r;
         r.set_table(kSync);
         r.mutable_consistency()->set_kind(v1::CONSISTENCY_ASYNC);
         return Send(s, who, &Stub::SetConsistency, r);
       }},
      {"SetConsistency delay compensation",
       [](HostileShard& s, Who who) {
         v1::SetConsistencyRequest r;
         r.set_table(kDense);
         r.mutable_consistency()->set_kind(v1::CONSISTENCY_ASYNC);
         r.mutable_staleness()->set_delay_compensation(true);
         return Send(s, who, &Stub::SetConsistency, r);
       }},
      {"Stats",
       [](HostileShard& s, Who who) {
         return Send(s, who, &Stub::Stats, v1::StatsRequest());
       }},
      {"DropTable",
       [](HostileShard& s, Who who) {
         v1::DropTableRequest r;
         r.set_name(kDense);
         return Send(s, who, &Stub::DropTable, r);
       }},
      {"Checkpoint",
       [](HostileShard& s, Who who) {
         return Send(s, who, &Stub::Checkpoint, v1::CheckpointRequest());
       }},
      // Evicting worker 1 would close sync step 0 without it.
      {"EvictWorker",
       [](HostileShard& s, Who who) {
         v1::EvictWorkerRequest r;
         r.set_worker_id(1);
         return Send(s, who, &Stub::EvictWorker, r);
       }},
      {"EvictWorker drain",
       [](HostileShard& s, Who who) {
         v1::EvictWorkerRequest r;
         r.set_worker_id(1);
         r.set_drain(true);
         return Send(s, who, &Stub::EvictWorker, r);
       }},
      {"ShardStatus",
       [](HostileShard& s, Who who) {
         return Send(s, who, &Stub::ShardStatus, v1::ShardStatusRequest());
       }},
      // Would restore step 0 in place (the suite's shard has no checkpoint
      // dir, so an admin gets FAILED_PRECONDITION; others must not get there).
      {"Rollback",
       [](HostileShard& s, Who who) {
         v1::RollbackRequest r;
         r.set_step(0);
         return Send(s, who, &Stub::Rollback, r);
       }},
  };
}

bool IsWorkerRpc(const std::string& name) {
  for (const char* rpc : {"PullDense", "PushDense", "PullSparse", "PushSparse",
                          "Register", "Heartbeat", "Leave"}) {
    if (name == rpc) return true;
  }
  return false;
}

bool IsAdminRpc(const std::string& name) {
  return name == "CreateTable" || name == "DropTable" || name == "Checkpoint" ||
         name == "Rollback" || name.rfind("SetConsistency", 0) == 0 ||
         name.rfind("EvictWorker", 0) == 0;
}

Case Denied(const std::string& name, Who who, const Rpc& rpc, StatusCode code,
            const std::string& says) {
  return {name, code, says, [who, send = rpc.send](HostileShard& s) { return send(s, who); }};
}

}  // namespace

CaseClass CredentialCases(const HostileShard& shard) {
  CaseClass c{"missing or wrong credentials", {}, {}, {}};
  for (const Rpc& rpc : EveryRpc(shard, 0)) {
    c.cases.push_back(Denied(rpc.name + " without a credential", Who::kNobody, rpc,
                             StatusCode::UNAUTHENTICATED, "no credential"));
    c.cases.push_back(Denied(rpc.name + " with a made-up token", Who::kUnknownToken,
                             rpc, StatusCode::UNAUTHENTICATED, "unknown bearer token"));
  }
  for (const Rpc& rpc : EveryRpc(shard, 0)) {
    if (rpc.name != "PushDense" && rpc.name != "Register" && rpc.name != "DropTable") {
      continue;
    }
    c.cases.push_back(Denied(rpc.name + " with Basic auth", Who::kBasicAuth, rpc,
                             StatusCode::UNAUTHENTICATED, "is not 'Bearer <token>'"));
    c.cases.push_back(Denied(rpc.name + " with an empty bearer token", Who::kEmptyBearer,
                             rpc, StatusCode::UNAUTHENTICATED, "unknown bearer token"));
  }
  // (A TLS shard's plaintext case is in cases_tls.cc: it fails to connect.)
  if (shard.pki() == nullptr)
  c.cases.push_back({"a plaintext client on the local-credentials port",
                     StatusCode::UNAUTHENTICATED, "no credential",
                     [](HostileShard& s) {
                       grpc::ClientContext context;
                       context.set_deadline(std::chrono::system_clock::now() +
                                            std::chrono::seconds(3));
                       v1::PushDenseRequest r = DensePush(
                           kDense, 0, 901, Floats(std::vector<float>(kDenseHere, 1)));
                       v1::PushResponse response;
                       return Outcome{s.plaintext_stub().PushDense(&context, r, &response), ""};
                     }});
  return c;
}

CaseClass RoleCases(const HostileShard& shard) {
  CaseClass c{"wrong role", {}, {}, {}};
  for (const Rpc& rpc : EveryRpc(shard, 0)) {
    if (IsWorkerRpc(rpc.name) || IsAdminRpc(rpc.name)) {
      c.cases.push_back(Denied("reader calls " + rpc.name, Who::kReader, rpc,
                               StatusCode::PERMISSION_DENIED,
                               "principal 'dash' (role reader) may not call"));
    }
    if (IsWorkerRpc(rpc.name)) {
      c.cases.push_back(Denied("admin calls " + rpc.name, Who::kAdmin, rpc,
                               StatusCode::PERMISSION_DENIED,
                               "principal 'ops' (role admin) may not call"));
    }
    if (IsAdminRpc(rpc.name) || rpc.name == "ShardStatus") {
      c.cases.push_back(Denied("worker calls " + rpc.name, Who::kTrainers, rpc,
                               StatusCode::PERMISSION_DENIED,
                               "principal 'trainers' (role worker) may not call"));
    }
  }
  return c;
}

CaseClass AdminTargetCases(const HostileShard&) {
  CaseClass c{"admin calls on what is not there", {}, {}, {}};
  const auto evict = [](uint32_t worker, bool drain) {
    return [worker, drain](HostileShard& s) {
      v1::EvictWorkerRequest r;
      r.set_worker_id(worker);
      r.set_drain(drain);
      return Send(s, Who::kAdmin, &Stub::EvictWorker, r);
    };
  };
  c.cases.push_back({"checkpoint of a shard without --checkpoint_dir",
                     StatusCode::FAILED_PRECONDITION, "runs without --checkpoint_dir",
                     [](HostileShard& s) {
                       return Send(s, Who::kAdmin, &Stub::Checkpoint,
                                   v1::CheckpointRequest());
                     }});
  c.cases.push_back({"rollback of a shard without --checkpoint_dir",
                     StatusCode::FAILED_PRECONDITION, "it has no checkpoints to roll back to",
                     [](HostileShard& s) {
                       v1::RollbackRequest r;
                       r.set_step(4);
                       return Send(s, Who::kAdmin, &Stub::Rollback, r);
                     }});
  // A drain of a stranger would bar the id from registering: refused too.
  for (bool drain : {false, true}) {
    const std::string how = drain ? "drain" : "evict";
    c.cases.push_back({how + " of a worker that never registered", StatusCode::NOT_FOUND,
                       "worker 40 never registered with shard 0", evict(40, drain)});
    c.cases.push_back({how + " of the worker id past --max_workers",
                       StatusCode::RESOURCE_EXHAUSTED, "(--max_workers)",
                       evict(kMaxWorkers, drain)});
    c.cases.push_back({how + " of worker 2^32-1", StatusCode::RESOURCE_EXHAUSTED,
                       "(--max_workers)", evict(UINT32_MAX, drain)});
  }
  return c;
}

CaseClass SpoofedIdentityCases(const HostileShard& shard) {
  CaseClass c{"spoofed identity", {}, {}, {}};
  // "others" (workers 4-7) acting as worker 0 and 1 of "trainers": a push
  // as worker 1 would close sync step 0, a Leave would drop worker 0 from
  // the barrier, a Register would give it a new incarnation.
  for (uint32_t victim : {0u, 1u}) {
    for (const Rpc& rpc : EveryRpc(shard, victim)) {
      if (!IsWorkerRpc(rpc.name)) continue;
      if (victim == 1 && rpc.name != "PushDense" && rpc.name != "Leave") continue;
      c.cases.push_back(Denied(absl::StrCat("others ", rpc.name, " as worker ", victim),
                               Who::kOthers, rpc, StatusCode::PERMISSION_DENIED,
                               absl::StrCat("'others' acts as workers 4-7, not worker ",
                                            victim)));
    }
  }
  for (uint32_t victim : {4u, 9u, 3000000000u}) {
    for (const Rpc& rpc : EveryRpc(shard, victim)) {
      if (rpc.name != "PushDense" && rpc.name != "Register") continue;
      c.cases.push_back(Denied(
          absl::StrCat("trainers ", rpc.name, " as worker ", victim), Who::kTrainers,
          rpc, StatusCode::PERMISSION_DENIED,
          absl::StrCat("'trainers' acts as workers 0-3, not worker ", victim)));
    }
  }
  for (const Rpc& rpc : EveryRpc(shard, 0)) {
    if (rpc.name != "PushDense" && rpc.name != "PushSparse") continue;
    c.cases.push_back(Denied("auditor " + rpc.name + " as worker 0", Who::kAuditor, rpc,
                             StatusCode::PERMISSION_DENIED,
                             "'auditor' acts as workers 9-9, not worker 0"));
  }
  return c;
}

CaseClass FakeRegistrationCases(const HostileShard&) {
  CaseClass c{"fake registration", {}, {}, {}};
  struct Lease {
    const char* name;
    uint32_t worker;
    double lease_s;
    const char* says;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Lease leases[] = {
      {"a lease just over --max_lease_s", 2, kMaxLeaseS + 0.5, "(--max_lease_s)"},
      {"a one-hour lease", 2, 3600, "(--max_lease_s)"},
      {"a one-hour lease re-registering live worker 0", 0, 3600, "(--max_lease_s)"},
      {"a 1e308 s lease", 3, 1e308, "(--max_lease_s)"},
      {"an infinite lease", 2, inf, "must be a finite number of seconds"},
      {"a NaN lease", 2, nan, "must be a finite number of seconds"},
      {"a negative lease", 0, -1, "must be a finite number of seconds"},
  };
  for (const Lease& l : leases) {
    c.cases.push_back({absl::StrCat("Register worker ", l.worker, " with ", l.name),
                       StatusCode::INVALID_ARGUMENT, l.says,
                       [l](HostileShard& s) {
                         return Send(s, Who::kTrainers, &Stub::Register,
                                     Registration(l.worker, l.lease_s, 1234));
                       }});
  }
  c.cases.push_back({"Heartbeat of live worker 0 with a made-up incarnation",
                     StatusCode::OK, "known=0", [](HostileShard& s) {
                       v1::HeartbeatResponse response;
                       Outcome out =
                           Send(s, Who::kTrainers, &Stub::Heartbeat,
                                Membership<v1::HeartbeatRequest>(0, kIncarnation + 1), &response);
                       out.facts = absl::StrCat("known=", response.known());
                       return out;
                     }});
  c.cases.push_back({"Heartbeat of never-registered worker 3", StatusCode::OK, "known=0",
                     [](HostileShard& s) {
                       v1::HeartbeatResponse response;
                       Outcome out = Send(s, Who::kTrainers, &Stub::Heartbeat,
                                          Membership<v1::HeartbeatRequest>(3), &response);
                       out.facts = absl::StrCat("known=", response.known());
                       return out;
                     }});
  c.cases.push_back({"Leave of live worker 1 with a made-up incarnation", StatusCode::OK,
                     "known=0", [](HostileShard& s) {
                       v1::LeaveResponse response;
                       Outcome out = Send(s, Who::kTrainers, &Stub::Leave,
                                          Membership<v1::LeaveRequest>(1, kIncarnation + 7),
                                          &response);
                       out.facts = absl::StrCat("known=", response.known());
                       return out;
                     }});
  return c;
}

}  // namespace taups::testing::hostile
