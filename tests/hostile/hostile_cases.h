// The hostile-input suite's table: classes of hostile or malformed
// requests, each case a request built from proto/ps.proto's messages, the
// exact status code the shard must answer and a piece of its message.
//
// A class may first do something legitimate (`setup`: e.g. park pulls that
// wait, so that the next one is one too many); the suite takes the shard's
// digest after the setup, sends each case, checks its answer, and compares
// the digest again after every case. A class's `teardown` undoes what its
// setup left pending (cancels parked calls and waits for the shard to let
// them go); the digest after it must equal the one before the setup.
//
// For a case whose right answer is OK (a replayed push is answered as a
// duplicate, a heartbeat of a made-up incarnation is told "not known"),
// `facts` names the fields of the answer that prove nothing was done, and
// `says` must be found there instead of in the error message.
#ifndef TAUPS_TESTS_HOSTILE_HOSTILE_CASES_H_
#define TAUPS_TESTS_HOSTILE_HOSTILE_CASES_H_

#include <functional>
#include <string>
#include <vector>

#include "tests/hostile/hostile_shard.h"

namespace taups::testing::hostile {

struct Outcome {
  grpc::Status status;
  std::string facts;  // for OK answers: "duplicate=1 accepted=1", ...
};

struct Case {
  std::string name;
  grpc::StatusCode code;
  std::string says;
  std::function<Outcome(HostileShard&)> send;
};

struct CaseClass {
  std::string name;
  std::vector<Case> cases;
  std::function<void(HostileShard&)> setup;     // may be empty
  std::function<void(HostileShard&)> teardown;  // may be empty
};

// Sends `request` with `who`'s credential through the generated stub.
template <typename Request, typename Response>
Outcome Send(HostileShard& shard, Who who,
             grpc::Status (v1::ParameterServer::Stub::*method)(
                 grpc::ClientContext*, const Request&, Response*),
             const Request& request, Response* response = nullptr) {
  Response ignored;
  auto context = shard.Context(who);
  Outcome out;
  out.status = (shard.stub(who).*method)(context.get(), request,
                                      response != nullptr ? response : &ignored);
  return out;
}

// Requests as a worker sends them (seq 0 = not deduplicated).
v1::PushDenseRequest DensePush(const std::string& table, uint32_t worker,
                               uint64_t seq, const std::string& gradient,
                               uint64_t offset = 0);
v1::PullDenseRequest DensePull(const std::string& table, uint32_t worker,
                               uint64_t offset, uint64_t count);
v1::PushSparseRequest SparsePush(const std::string& table, uint32_t worker,
                                 uint64_t seq, const std::vector<uint64_t>& keys,
                                 const std::string& gradients);
v1::PullSparseRequest SparsePull(const std::string& table, uint32_t worker,
                                 const std::vector<uint64_t>& keys);
v1::RegisterRequest Registration(uint32_t worker, double lease_s,
                                 uint64_t incarnation = kIncarnation);
// A dense push's answer as facts.
std::string PushFacts(const v1::PushResponse& response);

// The classes, in the order the suite runs them (cases_*.cc).
CaseClass CredentialCases(const HostileShard& shard);
CaseClass RoleCases(const HostileShard& shard);
CaseClass AdminTargetCases(const HostileShard& shard);
CaseClass SpoofedIdentityCases(const HostileShard& shard);
CaseClass FakeRegistrationCases(const HostileShard& shard);
CaseClass ReplayedSeqCases(const HostileShard& shard);
CaseClass ForgottenSeqCases(const HostileShard& shard);
CaseClass ShapeCases(const HostileShard& shard);
CaseClass UnknownTableCases(const HostileShard& shard);
CaseClass NonFiniteCases(const HostileShard& shard);
CaseClass OutOfRangeCases(const HostileShard& shard);
CaseClass BadBlockCases(const HostileShard& shard);
CaseClass OversizedCases(const HostileShard& shard);
CaseClass BudgetCases(const HostileShard& shard);
CaseClass TableCountCases(const HostileShard& shard);
CaseClass WaitingPerWorkerCases(const HostileShard& shard);
CaseClass WaitingInAllCases(const HostileShard& shard);
// Only for a TLS shard (empty otherwise): cases_tls.cc.
CaseClass TlsCases(const HostileShard& shard);

}  // namespace taups::testing::hostile

#endif  // TAUPS_TESTS_HOSTILE_HOSTILE_CASES_H_
