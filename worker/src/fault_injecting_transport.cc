#include "worker/src/fault_injecting_transport.h"

#include "absl/strings/str_cat.h"

namespace taups {
namespace {

bool IsPush(Rpc rpc) { return rpc == Rpc::kPushDense || rpc == Rpc::kPushSparse; }

// What the caller of a call whose answer was lost sees.
absl::Status LostAnswer(Rpc rpc) {
  const std::string what =
      absl::StrCat(RpcName(rpc), ": answer lost by the fault injector");
  return IsPush(rpc) ? absl::DeadlineExceededError(what)
                     : absl::UnavailableError(what);
}

}  // namespace

FaultInjectingTransport::FaultInjectingTransport(
    std::unique_ptr<ShardTransport> inner, const TransportFaults& faults)
    : inner_(std::move(inner)), faults_(faults), rng_(faults.seed) {}

FaultInjectingTransport::~FaultInjectingTransport() {
  // The timer thread still runs here, so held-back copies go out and end.
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int64_t* n) { return *n == 0; }, &own_calls_));
}

FaultCounts FaultInjectingTransport::counts() const {
  absl::MutexLock lock(&mu_);
  return counts_;
}

FaultInjectingTransport::Draw FaultInjectingTransport::DrawFaults() {
  absl::MutexLock lock(&mu_);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const auto upto = [&](absl::Duration max) {
    return max * unit(rng_);
  };
  Draw draw;
  draw.duplicate = unit(rng_) < faults_.duplicate;
  draw.duplicate_after = upto(faults_.max_delay);
  draw.delay = unit(rng_) < faults_.delay;
  draw.delay_for = upto(faults_.max_delay);
  draw.lose_answer = unit(rng_) < faults_.lose_answer;
  ++counts_.calls;
  counts_.duplicated += draw.duplicate;
  counts_.delayed += draw.delay;
  counts_.answers_lost += draw.lose_answer;
  return draw;
}

void FaultInjectingTransport::BeginOwnCall() {
  absl::MutexLock lock(&mu_);
  ++own_calls_;
}

void FaultInjectingTransport::EndOwnCall() {
  absl::MutexLock lock(&mu_);
  --own_calls_;
}

void FaultInjectingTransport::Send(Rpc rpc, absl::Duration timeout,
                                   const google::protobuf::Message& request,
                                   google::protobuf::Message* response,
                                   Done done) {
  const Draw draw = DrawFaults();
  if (draw.duplicate) {
    // Copied now: the caller's request may be gone when the copy leaves.
    std::shared_ptr<google::protobuf::Message> copy(request.New());
    copy->CopyFrom(request);
    std::shared_ptr<google::protobuf::Message> answer(response->New());
    BeginOwnCall();
    timer_.RunAfter(draw.duplicate_after,
                    [this, rpc, timeout, copy, answer](bool cancelled) {
                      if (!cancelled) SendCopy(rpc, timeout, copy, answer);
                      EndOwnCall();
                    });
  }
  if (!draw.delay) {
    return Forward(rpc, timeout, request, response, draw.lose_answer,
                   std::move(done));
  }
  BeginOwnCall();
  timer_.RunAfter(draw.delay_for, [this, rpc, timeout, &request, response,
                                   lose = draw.lose_answer,
                                   done = std::move(done)](bool cancelled) {
    if (cancelled) {
      done(absl::UnavailableError("the fault injector is closing"));
    } else {
      Forward(rpc, timeout, request, response, lose, done);
    }
    EndOwnCall();
  });
}

void FaultInjectingTransport::Forward(Rpc rpc, absl::Duration timeout,
                                      const google::protobuf::Message& request,
                                      google::protobuf::Message* response,
                                      bool lose_answer, Done done) {
  if (!lose_answer) {
    return inner_->Send(rpc, timeout, request, response, std::move(done));
  }
  // Served into a response of our own, which is then dropped.
  std::shared_ptr<google::protobuf::Message> dropped(response->New());
  BeginOwnCall();
  inner_->Send(rpc, timeout, request, dropped.get(),
               [this, rpc, dropped, done = std::move(done)](absl::Status) {
                 done(LostAnswer(rpc));
                 EndOwnCall();
               });
}

void FaultInjectingTransport::SendCopy(
    Rpc rpc, absl::Duration timeout,
    std::shared_ptr<const google::protobuf::Message> copy,
    std::shared_ptr<google::protobuf::Message> answer) {
  BeginOwnCall();
  inner_->Send(rpc, timeout, *copy, answer.get(),
               [this, copy, answer](absl::Status) { EndOwnCall(); });
}

}  // namespace taups
