// The ownership map's epoch on the wire (issue 10 part 2): every push and
// pull says the epoch of the map the client routed it by, and a shard at
// another epoch refuses it FAILED_PRECONDITION, naming both, before it
// touches anything; a request that does not say (epoch 0, a stock client)
// is served. Answers (pulls, pushes, GetTable) carry the shard's epoch.
//
// The refusals are checked on the shard's core (ShardCalls over a
// ParameterStore, what both the gRPC edge and the in-process transport
// call), with a digest of every partition before and after; agreement is
// checked between the real client and real shards served over gRPC on
// 127.0.0.1.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <cstring>
#include <string>
#include <vector>

#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "server/parameter_store.h"
#include "server/shard_calls.h"
#include "tests/inproc_cluster.h"
#include "worker/src/grpc_client.h"

namespace taups {
namespace {

constexpr uint64_t kDenseSize = 64;  // 2 shards: shard 0 holds [0, 32)
constexpr uint64_t kHere = 32;
constexpr uint32_t kDim = 4;

std::string Floats(uint64_t n, float value) {
  std::vector<float> v(n, value);
  return std::string(reinterpret_cast<const char*>(v.data()), n * sizeof(float));
}

std::string Keys(const std::vector<uint64_t>& keys) {
  return std::string(reinterpret_cast<const char*>(keys.data()),
                     keys.size() * sizeof(uint64_t));
}

// Keys shard 0 of 2 owns at epoch 1.
std::vector<uint64_t> OwnKeys(size_t n) {
  const OwnershipMap map = OwnershipMap::Initial(2);
  std::vector<uint64_t> keys;
  for (uint64_t k = 1; keys.size() < n; ++k) {
    if (map.SparseOwnerOf(k) == 0) keys.push_back(k);
  }
  return keys;
}

v1::PushDenseRequest DensePush(uint64_t seq, uint64_t epoch, uint32_t slices = 1,
                               uint32_t index = 0) {
  v1::PushDenseRequest r;
  r.set_table("d");
  r.set_offset(index * (kHere / slices));
  r.set_gradient(Floats(kHere / slices, 0.5f));
  r.mutable_origin()->set_worker_id(0);
  r.mutable_origin()->set_worker_incarnation(7);
  r.mutable_origin()->set_seq(seq);
  r.set_slices_in_push(slices);
  r.set_slice_index(index);
  r.set_ownership_epoch(epoch);
  return r;
}

v1::PushSparseRequest SparsePush(uint64_t seq, uint64_t epoch) {
  const std::vector<uint64_t> keys = OwnKeys(3);
  v1::PushSparseRequest r;
  r.set_table("emb");
  r.set_keys(Keys(keys));
  r.set_gradients(Floats(keys.size() * kDim, 0.25f));
  r.mutable_origin()->set_worker_id(0);
  r.mutable_origin()->set_worker_incarnation(7);
  r.mutable_origin()->set_seq(seq);
  r.set_ownership_epoch(epoch);
  return r;
}

v1::PullDenseRequest DensePull(uint64_t epoch) {
  v1::PullDenseRequest r;
  r.set_table("d");
  r.set_offset(0);
  r.set_count(kHere);
  r.set_ownership_epoch(epoch);
  return r;
}

v1::PullSparseRequest SparsePull(uint64_t epoch) {
  v1::PullSparseRequest r;
  r.set_table("emb");
  r.set_keys(Keys(OwnKeys(5)));  // two keys no push created yet
  r.set_ownership_epoch(epoch);
  return r;
}

// Shard 0 of 2, its core, and its two tables.
struct Shard0 {
  Shard0() {
    bool created = false;
    TableConfig dense = TableConfig::Dense("d", kDenseSize);
    dense.optimizer.kind = OptimizerKind::kAdam;
    REQUIRE(store.CreateTable(dense, false, &created).ok());
    TableConfig sparse = TableConfig::Sparse("emb", kDim);
    sparse.optimizer.kind = OptimizerKind::kAdagrad;
    REQUIRE(store.CreateTable(sparse, false, &created).ok());
  }

  // Everything a partition holds (values, optimizer state, row versions,
  // the policy's state and version, the dedup window's shape, mutations
  // applied), per table, and the bytes of staged slices.
  struct Digest {
    std::vector<TableSnapshot> tables;
    std::vector<PolicySnapshot> policies;
    std::vector<std::vector<uint64_t>> windows;  // per table: uses, then per
                                                 // incarnation seqs kept
    std::vector<uint64_t> applied;
    uint64_t staged_bytes = 0;
    bool operator==(const Digest&) const = default;
  };
  Digest Now() const {
    Digest d;
    for (const char* table : {"d", "emb"}) {
      const PartitionSnapshot s = (*store.PartitionOf(table))->Snapshot();
      d.tables.push_back(s.table);
      d.policies.push_back(s.policy);
      d.applied.push_back(s.applied);
      std::vector<uint64_t> window = {s.dedup.uses};
      for (const auto& inc : s.dedup.incarnations) {
        window.push_back(inc.forgotten_through);
        for (const auto& [seq, answer] : inc.answers) window.push_back(seq);
      }
      d.windows.push_back(window);
    }
    d.staged_bytes = store.Resources().staged_bytes;
    return d;
  }

  ParameterStore store{0, 2};
  ShardCalls calls{&store, 11};
};

void RequireEpochRefusal(const absl::Status& status) {
  INFO(status.ToString());
  REQUIRE(status.code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(status.message().find(
              "routed by ownership map epoch 2, but shard 0 is at ownership epoch 1") !=
          std::string::npos);
}

TEST_CASE("a request routed by another epoch is refused and changes nothing") {
  Shard0 shard;
  // Some legitimate state first: a push to each table, and slice 0 of a
  // two-slice push staged.
  v1::PushResponse answer;
  REQUIRE(shard.calls.PushDense(DensePush(1, 1), &answer).ok());
  REQUIRE(answer.accepted());
  REQUIRE(shard.calls.PushSparse(SparsePush(2, 1), &answer).ok());
  REQUIRE(answer.accepted());
  REQUIRE(shard.calls.PushDense(DensePush(3, 1, 2, 0), &answer).ok());
  REQUIRE(answer.staged());
  const Shard0::Digest before = shard.Now();
  REQUIRE(before.staged_bytes > 0);

  v1::PushResponse push;
  v1::PullDenseResponse dense;
  v1::PullSparseResponse sparse;
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  RequireEpochRefusal(shard.calls.PushDense(DensePush(4, 2), &push));
  RequireEpochRefusal(shard.calls.PushSparse(SparsePush(5, 2), &push));
  RequireEpochRefusal(shard.calls.PullDense(DensePull(2), deadline, &dense));
  RequireEpochRefusal(shard.calls.PullSparse(SparsePull(2), deadline, &sparse));
  // The staged push's last slice under another epoch: refused for the
  // epoch, and the staged slice is not dropped with it.
  RequireEpochRefusal(shard.calls.PushDense(DensePush(3, 2, 2, 1), &push));
  // A malformed block under another epoch: the epoch is what is wrong
  // (the block is never read), and again nothing of push 3 is refused.
  v1::PushDenseRequest bad = DensePush(3, 2, 2, 1);
  bad.set_encoded(true);
  bad.set_gradient("not a block");
  RequireEpochRefusal(shard.calls.PushDense(bad, &push));
  // A range this shard does not hold at epoch 1 (as a later map might give
  // it): refused for the epoch, not as OUT_OF_RANGE.
  v1::PullDenseRequest far = DensePull(2);
  far.set_offset(kHere);
  RequireEpochRefusal(shard.calls.PullDense(far, deadline, &dense));
  // Straight into the store, as an edge that builds PushMeta itself would.
  PushMeta meta;
  meta.origin = PushOrigin{0, 7, 6};
  meta.ownership_epoch = 2;
  const std::vector<float> g(kHere, 1.0f);
  RequireEpochRefusal(shard.store.PushDense("d", 0, g, meta).status());
  // A refusal of push 3's last slice reported under another epoch is not
  // one of this shard's: push 3 stays staged.
  PushMeta last = meta;
  last.origin.seq = 3;
  last.slices = 2;
  last.slice_index = 1;
  shard.store.RefusePush("d", last, absl::InvalidArgumentError("bad slice"));
  std::vector<float> out(kHere);
  PullContext ctx;
  ctx.ownership_epoch = 2;
  RequireEpochRefusal(shard.store.PullDense("d", 0, absl::MakeSpan(out), ctx).status());

  REQUIRE(shard.Now() == before);

  // Push 3 is still whole: its last slice at the right epoch applies it.
  REQUIRE(shard.calls.PushDense(DensePush(3, 1, 2, 1), &answer).ok());
  REQUIRE(answer.accepted());
  REQUIRE(answer.new_version() == 2);
  REQUIRE(answer.ownership_epoch() == 1);
}

TEST_CASE("a request that does not say its epoch is served") {
  Shard0 shard;
  v1::PushResponse push;
  REQUIRE(shard.calls.PushDense(DensePush(1, 0), &push).ok());
  REQUIRE(push.accepted());
  REQUIRE(push.new_version() == 1);
  REQUIRE(push.ownership_epoch() == 1);
  REQUIRE(shard.calls.PushSparse(SparsePush(2, 0), &push).ok());
  REQUIRE(push.accepted());
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  v1::PullDenseResponse dense;
  REQUIRE(shard.calls.PullDense(DensePull(0), deadline, &dense).ok());
  REQUIRE(dense.version() == 1);
  REQUIRE(dense.ownership_epoch() == 1);
  // Adam's first step moves every value by about -lr.
  float first;
  std::memcpy(&first, dense.values().data(), sizeof(first));
  REQUIRE(first < 0.0f);
  v1::PullSparseResponse sparse;
  REQUIRE(shard.calls.PullSparse(SparsePull(0), deadline, &sparse).ok());
  REQUIRE(sparse.ownership_epoch() == 1);
  REQUIRE(sparse.values().size() == 5 * kDim * sizeof(float));
}

TEST_CASE("the client and the shards agree on the ownership epoch over gRPC") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  GrpcClient& grpc = dynamic_cast<GrpcClient&>(*client);
  REQUIRE(client->CreateTable(TableConfig::Dense("d", kDenseSize)).ok());
  REQUIRE(client->CreateTable(TableConfig::Sparse("emb", kDim)).ok());
  const uint64_t epoch = grpc.Ownership()->epoch();
  REQUIRE(epoch == 1);

  // The client's requests say its epoch and are served on both shards.
  std::vector<float> values(kDenseSize);
  REQUIRE(client->PullDense("d", absl::MakeSpan(values)).ok());
  auto pushed = client->PushDense("d", std::vector<float>(kDenseSize, 0.1f));
  REQUIRE(pushed.ok());
  REQUIRE(pushed->all_accepted());
  const std::vector<uint64_t> keys = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> rows(keys.size() * kDim);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  REQUIRE(client->PushSparse("emb", keys, std::vector<float>(rows.size(), 0.1f))
              ->all_accepted());

  // Every shard answers with the client's epoch; another is refused there
  // too, with the same code over the wire.
  for (uint32_t s = 0; s < 2; ++s) {
    auto stub = v1::ParameterServer::NewStub(
        *OpenChannel(cluster.addresses[s], ChannelSecurity{}));
    v1::GetTableRequest get;
    get.set_name("d");
    v1::GetTableResponse table;
    grpc::ClientContext c1;
    REQUIRE(stub->GetTable(&c1, get, &table).ok());
    REQUIRE(table.ownership_epoch() == epoch);

    v1::PullDenseRequest pull;
    pull.set_table("d");
    pull.set_offset(s * kHere);
    pull.set_count(kHere);
    pull.set_ownership_epoch(epoch);
    v1::PullDenseResponse answer;
    grpc::ClientContext c2;
    REQUIRE(stub->PullDense(&c2, pull, &answer).ok());
    REQUIRE(answer.ownership_epoch() == epoch);
    REQUIRE(answer.version() == 1);

    pull.set_ownership_epoch(epoch + 1);
    grpc::ClientContext c3;
    const grpc::Status refused = stub->PullDense(&c3, pull, &answer);
    REQUIRE(refused.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    REQUIRE(refused.error_message().find(absl::StrCat(
                "epoch 2, but shard ", s, " is at ownership epoch 1")) !=
            std::string::npos);
  }
}

}  // namespace
}  // namespace taups
