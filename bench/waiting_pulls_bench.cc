// waiting_pulls_bench: what pulls waiting for a sync step cost a ps_server
// process, and how fast they are released. Per count N it starts a shard
// (its own process), parks N pulls with no deadline on a sync table of two
// workers, and reads the server's threads and resident memory from /proc;
// then releases them by closing the step (both workers push) and, parked
// again, by cancelling every call. The reference, measured in the same
// run on the same shard (after the rest): N pulls of an async table, which
// never wait, from the first sent to the last answered.
//
//   waiting_pulls_bench --pulls=1000,10000
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/server_process.h"
#include "httplib.h"
#include "ps.grpc.pb.h"
#include "tests/dense_pull_flood.h"

ABSL_FLAG(std::string, pulls, "1000,10000", "Waiting pulls to measure, comma-separated.");
ABSL_FLAG(std::string, dir, "/tmp", "Scratch directory for the server's log.");

namespace taups::bench {
namespace {

constexpr uint64_t kSize = 64;

// n pulls of `table` by worker 0 at `clock`, in flight at once.
class Pulls : public DensePullFlood {
 public:
  Pulls(v1::ParameterServer::Stub* stub, const std::string& table, int n,
        uint64_t clock)
      : DensePullFlood(stub, table, kSize, /*worker=*/0, clock, n) {}
  void Cancel() { CancelAll(); }
  // Waits for every answer; how many were OK.
  int Wait() {
    AllDone(absl::InfiniteDuration());
    return Count(grpc::StatusCode::OK);
  }
};

absl::Status Check(const grpc::Status& status, const char* what) {
  if (status.ok()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", status.error_message()));
}

struct Shard {
  std::unique_ptr<ServerProcess> process;
  std::unique_ptr<v1::ParameterServer::Stub> stub;
  int metrics_port = 0;

  absl::Status CreateTable(const std::string& name, v1::ConsistencyKind kind) {
    v1::CreateTableRequest request;
    v1::TableConfig* config = request.mutable_config();
    config->set_name(name);
    config->set_kind(v1::TABLE_KIND_DENSE);
    config->set_dense_size(kSize);
    config->mutable_consistency()->set_kind(kind);
    config->mutable_consistency()->set_num_workers(2);
    v1::CreateTableResponse response;
    grpc::ClientContext context;
    return Check(stub->CreateTable(&context, request, &response), "CreateTable");
  }
  absl::Status Register(uint32_t worker) {
    v1::RegisterRequest request;
    request.set_worker_id(worker);
    request.set_worker_incarnation(1);
    v1::RegisterResponse response;
    grpc::ClientContext context;
    return Check(stub->Register(&context, request, &response), "Register");
  }
  absl::Status Push(uint32_t worker, uint64_t clock) {
    v1::PushDenseRequest request;
    request.set_table("sync");
    const std::vector<float> ones(kSize, 1.0f);
    request.set_gradient(ones.data(), ones.size() * sizeof(float));
    request.mutable_origin()->set_worker_id(worker);
    request.mutable_origin()->set_worker_incarnation(1);
    request.mutable_origin()->set_seq(clock + 1);
    request.set_clock(clock);
    v1::PushResponse response;
    grpc::ClientContext context;
    return Check(stub->PushDense(&context, request, &response), "PushDense");
  }
  // taups_waiting_pulls from /metrics (-1 if unreadable).
  double Waiting() const {
    httplib::Client http("127.0.0.1", metrics_port);
    auto res = http.Get("/metrics");
    if (!res) return -1;
    const std::string name = "\ntaups_waiting_pulls ";
    const size_t at = res->body.find(name);
    if (at == std::string::npos) return -1;
    const size_t begin = at + name.size();
    double value = -1;
    if (!absl::SimpleAtod(res->body.substr(begin, res->body.find('\n', begin) - begin),
                          &value)) {
      return -1;
    }
    return value;
  }
  absl::Duration WaitingReaches(double want) const {
    const absl::Time start = absl::Now();
    while (Waiting() != want) absl::SleepFor(absl::Milliseconds(1));
    return absl::Now() - start;
  }
};

absl::StatusOr<Shard> StartShard(const std::string& dir, int n) {
  Shard shard;
  const std::string metrics_file = absl::StrCat(dir, "/waiting_pulls_bench.metrics");
  std::remove(metrics_file.c_str());
  absl::StatusOr<std::unique_ptr<ServerProcess>> process = ServerProcess::Start(
      OwnBinaryDir() + "/ps_server",
      {absl::StrCat("--max_waiting_calls=", 2 * n),
       absl::StrCat("--max_waiting_per_worker=", 2 * n), "--max_wait_s=600",
       "--lease_s=60",
       "--stats_interval_s=0", "--metrics_port=0",
       "--metrics_port_file=" + metrics_file},
      dir, "waiting_pulls_bench.server.log");
  if (!process.ok()) return process.status();
  shard.process = std::move(*process);
  for (int i = 0; i < 2000 && shard.metrics_port == 0; ++i) {
    FILE* f = std::fopen(metrics_file.c_str(), "r");
    if (f != nullptr) {
      if (std::fscanf(f, "%d", &shard.metrics_port) != 1) shard.metrics_port = 0;
      std::fclose(f);
    }
    if (shard.metrics_port == 0) absl::SleepFor(absl::Milliseconds(10));
  }
  if (shard.metrics_port == 0) return absl::UnavailableError("no metrics port");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  shard.stub = v1::ParameterServer::NewStub(grpc::CreateCustomChannel(
      shard.process->address(), grpc::InsecureChannelCredentials(), args));
  for (absl::Status s : {shard.CreateTable("sync", v1::CONSISTENCY_SYNC),
                         shard.CreateTable("async", v1::CONSISTENCY_ASYNC),
                         shard.Register(0), shard.Register(1)}) {
    if (!s.ok()) return s;
  }
  return shard;
}

double Ms(absl::Duration d) { return absl::ToDoubleMilliseconds(d); }

absl::Status Measure(const std::string& dir, int n) {
  absl::StatusOr<Shard> started = StartShard(dir, n);
  if (!started.ok()) return started.status();
  Shard& shard = *started;

  absl::StatusOr<ProcessUsage> before = shard.process->Usage();
  if (!before.ok()) return before.status();
  // Parked: step 0 open, pulls at clock 1.
  auto parked = std::make_unique<Pulls>(shard.stub.get(), "sync", n, 1);
  shard.WaitingReaches(n);
  absl::StatusOr<ProcessUsage> waiting = shard.process->Usage();
  if (!waiting.ok()) return waiting.status();
  absl::Time start = absl::Now();
  if (absl::Status s = shard.Push(0, 0); !s.ok()) return s;
  if (absl::Status s = shard.Push(1, 0); !s.ok()) return s;
  int ok = parked->Wait();
  const absl::Duration by_step = absl::Now() - start;
  if (ok != n) return absl::InternalError("released pulls failed");
  parked.reset();

  // Parked again (step 1 open, clock 2), then every call cancelled: until
  // the shard counts none waiting.
  parked = std::make_unique<Pulls>(shard.stub.get(), "sync", n, 2);
  shard.WaitingReaches(n);
  start = absl::Now();
  parked->Cancel();
  parked->Wait();
  shard.WaitingReaches(0);
  const absl::Duration by_cancel = absl::Now() - start;
  parked.reset();

  // Reference, last so the figures above are of a fresh shard: n pulls that
  // never wait, from send to the last answer.
  start = absl::Now();
  ok = Pulls(shard.stub.get(), "async", n, 1).Wait();
  const absl::Duration ready_pulls = absl::Now() - start;
  if (ok != n) return absl::InternalError("reference pulls failed");

  const double rss_per_call =
      static_cast<double>(waiting->rss_bytes - before->rss_bytes) / n;
  std::printf(
      "| %6d | %3lld -> %3lld | %7.1f MiB -> %7.1f MiB | %6.0f B | %9.0f | "
      "%8.1f ms (%.2fx) | %8.1f ms (%.2fx) | %8.1f ms |\n",
      n, static_cast<long long>(before->threads),
      static_cast<long long>(waiting->threads), before->rss_bytes / 1048576.0,
      waiting->rss_bytes / 1048576.0, rss_per_call,
      rss_per_call > 0 ? (1 << 30) / rss_per_call : 0.0, Ms(by_step),
      Ms(by_step) / Ms(ready_pulls), Ms(by_cancel),
      Ms(by_cancel) / Ms(ready_pulls), Ms(ready_pulls));
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::printf(
      "| pulls  | server threads | server RSS before -> parked | RSS/call | "
      "calls/GiB | release: step closed (x ref) | release: cancelled (x ref) | "
      "ref: n async pulls |\n|---|---|---|---|---|---|---|---|\n");
  for (absl::string_view count : absl::StrSplit(absl::GetFlag(FLAGS_pulls), ',')) {
    int n = 0;
    if (!absl::SimpleAtoi(count, &n) || n <= 0) {
      std::fprintf(stderr, "bad --pulls entry '%s'\n", std::string(count).c_str());
      return 2;
    }
    absl::Status measured = taups::bench::Measure(absl::GetFlag(FLAGS_dir), n);
    if (!measured.ok()) {
      std::fprintf(stderr, "%s\n", measured.ToString().c_str());
      return 1;
    }
  }
  return 0;
}
