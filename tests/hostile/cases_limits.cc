// Budgets and caps: the memory budget, tables per shard, workers per table,
// and pulls waiting for their policy (per worker and in all). The flood
// class parks legitimate waiting pulls first; the cases are the pull one
// past each cap, which must be refused at once whether the shard holds a
// thread per waiting pull or parks it.
#include <condition_variable>
#include <mutex>
#include <thread>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {
namespace {

using Stub = v1::ParameterServer::Stub;
using grpc::StatusCode;

Case Pull(std::string name, Who who, v1::PullDenseRequest request, std::string says) {
  return {std::move(name), StatusCode::RESOURCE_EXHAUSTED, std::move(says),
          [who, request](HostileShard& s) { return Send(s, who, &Stub::PullDense, request); }};
}

Case Create(std::string name, v1::TableConfig config, std::string says) {
  return {std::move(name), StatusCode::RESOURCE_EXHAUSTED, std::move(says),
          [config](HostileShard& s) {
            v1::CreateTableRequest request;
            *request.mutable_config() = config;
            return Send(s, Who::kAdmin, &Stub::CreateTable, request);
          }};
}

v1::TableConfig DenseOf(const std::string& name, uint64_t size) {
  v1::TableConfig config;
  config.set_name(name);
  config.set_kind(v1::TABLE_KIND_DENSE);
  config.set_dense_size(size);
  return config;
}

// Pulls of sync step 1 that wait (step 0 stays open), sent asynchronously;
// Cancel() cancels them, waits for their answers and checks that every one
// was still waiting until then. Their deadline is far past any class's run:
// with 8 s, as it once was, a class slowed past 8 s (ASan on a loaded
// machine) had its parked pulls end on their own mid-class, and its digest
// moved from taups_waiting_pulls 4 to 0 with no hostile request to blame.
constexpr auto kParkedDeadline = std::chrono::minutes(10);

class ParkedPulls {
 public:
  ParkedPulls() = default;
  ParkedPulls(const ParkedPulls&) = delete;
  ParkedPulls& operator=(const ParkedPulls&) = delete;
  // A test that failed before its teardown still lets every call finish
  // before the buffers its callbacks write go away.
  ~ParkedPulls() {
    for (auto& call : calls_) call->context->TryCancel();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait_for(lock, std::chrono::seconds(20), [this] { return pending_ == 0; });
  }
  void Start(HostileShard& shard, Who who, uint32_t worker, int count) {
    for (int i = 0; i < count; ++i) {
      auto call = std::make_unique<Call>();
      call->context = shard.Context(who, kParkedDeadline);
      call->request = DensePull(kSync, worker, 0, kSyncHere);
      call->request.set_clock(1);
      Call* raw = call.get();
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++pending_;
      }
      shard.stub().async()->PullDense(raw->context.get(), &raw->request, &raw->response,
                                      [this](grpc::Status status) {
                                        std::lock_guard<std::mutex> lock(mu_);
                                        if (status.error_code() == StatusCode::CANCELLED) {
                                          ++cancelled_;
                                        }
                                        absl::StrAppend(&answers_, status.error_code(), " ",
                                                        status.error_message(), "; ");
                                        --pending_;
                                        done_.notify_all();
                                      });
      calls_.push_back(std::move(call));
    }
  }
  std::string answers() {
    std::lock_guard<std::mutex> lock(mu_);
    return answers_;
  }
  void Cancel() {
    for (auto& call : calls_) call->context->TryCancel();
    std::unique_lock<std::mutex> lock(mu_);
    REQUIRE(done_.wait_for(lock, std::chrono::seconds(20), [this] { return pending_ == 0; }));
    INFO("parked pulls' answers: " << answers_);
    CHECK(cancelled_ == calls_.size());  // none ended before its cancel
    calls_.clear();
    cancelled_ = 0;
  }

 private:
  struct Call {
    std::unique_ptr<grpc::ClientContext> context;
    v1::PullDenseRequest request;
    v1::PullDenseResponse response;
  };
  std::mutex mu_;
  std::string answers_;  // of the calls that ended, for failure messages
  std::condition_variable done_;
  int pending_ = 0;
  size_t cancelled_ = 0;  // answers CANCELLED: still parked when cancelled
  std::vector<std::unique_ptr<Call>> calls_;
};

// Waits until the shard counts `n` waiting pulls.
void AwaitWaiting(HostileShard& shard, double n, ParkedPulls& parked) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (shard.Metric("taups_waiting_pulls") != n &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  INFO("parked pulls that ended: " << parked.answers());
  REQUIRE(shard.Metric("taups_waiting_pulls") == n);
}

}  // namespace

CaseClass BudgetCases(const HostileShard& shard) {
  CaseClass c{"budget exhaustion: memory and workers per table", {}, {}, {}};
  // This shard's part of a 3.5M-float table is 7 MiB: within the per-table
  // limit (the 8 MiB budget) but past what the tables' 7 MiB share has left.
  c.cases.push_back(Create("CreateTable of a 7 MiB part", DenseOf("big", 3.5 * (1 << 20)),
                           "--memory_budget_mb"));
  v1::TableConfig rows;
  rows.set_name("rows");
  rows.set_kind(v1::TABLE_KIND_SPARSE);
  rows.set_dim(64);
  rows.set_sparse_max_rows(22000);  // 328 bytes a row: 6.9 MiB
  c.cases.push_back(Create("CreateTable of 22,000 sparse rows of dim 64", rows,
                           "--memory_budget_mb"));
  v1::TableConfig over = DenseOf("over", 5 * (1 << 20));
  c.cases.push_back(Create("CreateTable of a 10 MiB part", over, "--max_table_mb"));
  // Every table holds state for workers 0, 1 and the auditor: a fourth
  // worker of any principal is one too many.
  const std::string seats = "(--max_workers_per_table = 3)";
  c.cases.push_back(Pull("worker 2 pulls 'dense'", Who::kTrainers,
                         DensePull(kDense, 2, 0, 4), seats));
  c.cases.push_back(Pull("worker 4 pulls 'sync'", Who::kOthers,
                         DensePull(kSync, 4, 0, kSyncHere), seats));
  c.cases.push_back({"worker 3 pushes 'dense'", StatusCode::RESOURCE_EXHAUSTED, seats,
                     [](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PushDense,
                                   DensePush(kDense, 3, 1, Floats(std::vector<float>(kDenseHere, 1))));
                     }});
  c.cases.push_back({"worker 5 pushes 'emb'", StatusCode::RESOURCE_EXHAUSTED, seats,
                     [keys = shard.own_keys()](HostileShard& s) {
                       return Send(s, Who::kOthers, &Stub::PushSparse,
                                   SparsePush(kSparse, 5, 1, keys,
                                              Floats(std::vector<float>(keys.size() * kDim, 1))));
                     }});
  c.cases.push_back({"worker 62 pulls 'emb'", StatusCode::RESOURCE_EXHAUSTED, seats,
                     [keys = shard.own_keys()](HostileShard& s) {
                       return Send(s, Who::kFar, &Stub::PullSparse, SparsePull(kSparse, 62, keys));
                     }});
  return c;
}

CaseClass TableCountCases(const HostileShard&) {
  CaseClass c{"budget exhaustion: tables per shard", {}, {}, {}};
  // Legitimate: two more small tables make the five --max_tables allows.
  c.setup = [](HostileShard& s) {
    for (const char* name : {"filler1", "filler2"}) {
      v1::CreateTableRequest request;
      *request.mutable_config() = DenseOf(name, 4);
      REQUIRE(Send(s, Who::kAdmin, &Stub::CreateTable, request).status.ok());
    }
  };
  c.cases.push_back(Create("a sixth CreateTable", DenseOf("sixth", 4),
                           "which allows 5 tables (--max_tables)"));
  c.cases.push_back(Create("a sixth CreateTable, sparse", [] {
                      v1::TableConfig t;
                      t.set_name("sixth_sparse");
                      t.set_kind(v1::TABLE_KIND_SPARSE);
                      t.set_dim(2);
                      t.set_sparse_max_rows(64);
                      return t;
                    }(),
                    "(--max_tables)"));
  return c;
}

// Parks `per_worker0` waiting pulls of worker 0 and `per_worker1` of
// worker 1 for the class's cases; the teardown cancels them.
void ParkDuring(CaseClass& c, int per_worker0, int per_worker1) {
  auto parked = std::make_shared<ParkedPulls>();
  c.setup = [parked, per_worker0, per_worker1](HostileShard& s) {
    parked->Start(s, Who::kTrainers, 0, per_worker0);
    parked->Start(s, Who::kTrainers, 1, per_worker1);
    AwaitWaiting(s, per_worker0 + per_worker1, *parked);
  };
  c.teardown = [parked](HostileShard& s) {
    parked->Cancel();
    AwaitWaiting(s, 0, *parked);
  };
}

v1::PullDenseRequest StepPull(uint32_t worker, uint64_t clock) {
  v1::PullDenseRequest r = DensePull(kSync, worker, 0, kSyncHere);
  r.set_clock(clock);
  return r;
}

CaseClass WaitingPerWorkerCases(const HostileShard&) {
  // Worker 0 holds its 3 waiting pulls, worker 1 one: 4 of the 5 in all.
  CaseClass c{"waiting-call floods: one worker", {}, {}, {}};
  ParkDuring(c, kMaxWaitingPerWorker, 1);
  for (uint64_t clock : {1, 2, 9}) {
    c.cases.push_back(Pull(absl::StrCat("worker 0's fourth waiting pull, for step ", clock),
                           Who::kTrainers, StepPull(0, clock), "--max_waiting_per_worker"));
  }
  return c;
}

CaseClass WaitingInAllCases(const HostileShard&) {
  // Worker 0 holds 3, worker 1 two: the 5 the shard holds in all.
  CaseClass c{"waiting-call floods: in all", {}, {}, {}};
  ParkDuring(c, kMaxWaitingPerWorker, kMaxWaitingCalls - kMaxWaitingPerWorker);
  c.cases.push_back(Pull("worker 1's third waiting pull", Who::kTrainers, StepPull(1, 1),
                         "beside 5 waiting pulls, the most this shard holds "
                         "(--max_waiting_calls)"));
  c.cases.push_back(Pull("worker 1 waiting for step 5", Who::kTrainers, StepPull(1, 5),
                         "(--max_waiting_calls)"));
  c.cases.push_back(Pull("the auditor's first waiting pull", Who::kAuditor, StepPull(9, 1),
                         "(--max_waiting_calls)"));
  return c;
}

}  // namespace taups::testing::hostile
