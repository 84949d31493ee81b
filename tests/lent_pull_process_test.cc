// Dense pulls answered from the table's own memory (DenseTable::Lend),
// against a real ps_server process and stock gRPC stubs: while one caller
// pushes as fast as it can, two others pull the whole table, and every
// answer must show each lock block as one moment saw it, however long gRPC
// took to send it. A push that wrote a block in place while an answer was
// being sent from it would show up as a block with two values in it.
//
// The table starts at zeros and every push adds -1 to every value (SGD at
// rate 1, gradients of ones), so a block seen at one moment holds one value,
// a whole number, and later answers never see a larger one.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "ps.grpc.pb.h"
#include "tests/process_harness.h"

namespace taups::testing {
namespace {

constexpr uint64_t kBlock = 65536;             // DenseTable::kBlockSize
constexpr uint64_t kSize = 6 * kBlock + 4321;  // 7 blocks, the last short

std::unique_ptr<v1::ParameterServer::Stub> StubFor(const Shard& shard) {
  return v1::ParameterServer::NewStub(
      grpc::CreateChannel(shard.address(), grpc::InsecureChannelCredentials()));
}

grpc::Status Push(v1::ParameterServer::Stub& stub, const std::string& ones,
                  uint64_t seq) {
  v1::PushDenseRequest request;
  request.set_table("w");
  request.set_gradient(ones);
  request.mutable_origin()->set_worker_id(0);
  request.mutable_origin()->set_worker_incarnation(1);
  request.mutable_origin()->set_seq(seq);
  v1::PushResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub.PushDense(&context, request, &response);
}

// What one pull answer showed: blocks holding two values, and the lowest
// value it held (the most pushes it saw).
struct Seen {
  int torn_blocks = 0;
  int not_whole = 0;
  float lowest = 0.0f;
};

Seen Check(const std::string& bytes) {
  std::vector<float> values(kSize);
  std::memcpy(values.data(), bytes.data(), kSize * sizeof(float));
  Seen seen;
  for (uint64_t begin = 0; begin < kSize; begin += kBlock) {
    const uint64_t end = std::min(kSize, begin + kBlock);
    const float first = values[begin];
    for (uint64_t i = begin; i < end; ++i) {
      if (values[i] != first) {
        ++seen.torn_blocks;
        break;
      }
    }
    if (first != std::floor(first)) ++seen.not_whole;
    seen.lowest = std::min(seen.lowest, first);
  }
  return seen;
}

TEST_CASE("pulls sent from the table's memory stay whole while pushes race them") {
  TempDir dir;
  std::vector<Shard> shards =
      StartShards(dir.path(), 1, {"--stats_interval_s=0", "--lease_s=60"});
  auto stub = StubFor(shards[0]);
  {
    v1::CreateTableRequest create;
    v1::TableConfig* config = create.mutable_config();
    config->set_name("w");
    config->set_kind(v1::TABLE_KIND_DENSE);
    config->set_dense_size(kSize);
    config->mutable_optimizer()->set_kind(v1::OPTIMIZER_SGD);
    config->mutable_optimizer()->set_learning_rate(1.0f);
    config->mutable_initializer()->set_kind(v1::INIT_ZEROS);
    v1::CreateTableResponse created;
    grpc::ClientContext context;
    REQUIRE(stub->CreateTable(&context, create, &created).ok());
    v1::RegisterRequest request;
    request.set_worker_id(0);
    request.set_worker_incarnation(1);
    v1::RegisterResponse registered;
    grpc::ClientContext register_context;
    REQUIRE(stub->Register(&register_context, request, &registered).ok());
  }

  constexpr int kPushes = 150;
  std::atomic<bool> pushing{true};
  std::atomic<int> push_failures{0};
  std::thread pusher([&] {
    auto own = StubFor(shards[0]);
    std::vector<float> ones(kSize, 1.0f);
    const std::string bytes(reinterpret_cast<const char*>(ones.data()),
                            kSize * sizeof(float));
    for (uint64_t seq = 1; seq <= kPushes; ++seq) {
      if (!Push(*own, bytes, seq).ok()) ++push_failures;
    }
    pushing.store(false);
  });
  std::atomic<int> answers{0}, torn{0}, not_whole{0}, went_back{0}, failed{0};
  std::vector<std::thread> pullers;
  for (int p = 0; p < 2; ++p) {
    pullers.emplace_back([&, p] {
      auto own = StubFor(shards[0]);
      float lowest_so_far = 0.0f;
      // Until the pushes are done and 20 answers came, but never forever:
      // a shard that stops answering fails the checks below instead.
      const absl::Time give_up = absl::Now() + absl::Seconds(60);
      while ((pushing.load() || answers.load() < 20) && failed.load() < 100 &&
             absl::Now() < give_up) {
        v1::PullDenseRequest request;
        request.set_table("w");
        request.set_count(kSize);
        request.set_worker_id(1 + p);
        v1::PullDenseResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(10));
        if (!own->PullDense(&context, request, &response).ok() ||
            response.values().size() != kSize * sizeof(float)) {
          ++failed;
          continue;
        }
        const Seen seen = Check(response.values());
        torn += seen.torn_blocks;
        not_whole += seen.not_whole;
        // A later answer of one caller never sees fewer pushes in the
        // block that saw the most.
        if (seen.lowest > lowest_so_far) ++went_back;
        lowest_so_far = std::min(lowest_so_far, seen.lowest);
        ++answers;
      }
    });
  }
  pusher.join();
  for (std::thread& t : pullers) t.join();

  INFO(answers.load() << " answers");
  CHECK(push_failures.load() == 0);
  CHECK(failed.load() == 0);
  CHECK(answers.load() >= 20);
  CHECK(torn.load() == 0);
  CHECK(not_whole.load() == 0);
  CHECK(went_back.load() == 0);
  // After the last push every block holds -kPushes.
  v1::PullDenseRequest request;
  request.set_table("w");
  request.set_count(kSize);
  request.set_worker_id(1);
  v1::PullDenseResponse response;
  grpc::ClientContext context;
  REQUIRE(stub->PullDense(&context, request, &response).ok());
  REQUIRE(response.values().size() == kSize * sizeof(float));
  std::vector<float> final_values(kSize);
  std::memcpy(final_values.data(), response.values().data(),
              kSize * sizeof(float));
  CHECK(final_values == std::vector<float>(kSize, -static_cast<float>(kPushes)));
}

}  // namespace
}  // namespace taups::testing
