// What a request carries: replayed seqs, sizes and shapes that do not fit,
// tables that are not there, non-finite and overflowing values, indices
// and keys outside this shard.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {
namespace {

using Stub = v1::ParameterServer::Stub;
using grpc::StatusCode;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string DenseGradient(uint64_t n, float value = 0.125f) {
  return Floats(std::vector<float>(n, value));
}

// `n` values of 0.1, one of them `bad` at `at`.
std::string WithOne(uint64_t n, uint64_t at, float bad) {
  std::vector<float> values(n, 0.1f);
  values[at] = bad;
  return Floats(values);
}

Case DensePushCase(std::string name, StatusCode code, std::string says,
                   v1::PushDenseRequest request, Who who = Who::kTrainers) {
  return {std::move(name), code, std::move(says), [request, who](HostileShard& s) {
            v1::PushResponse response;
            Outcome out = Send(s, who, &Stub::PushDense, request, &response);
            out.facts = PushFacts(response);
            return out;
          }};
}

Case SparsePushCase(std::string name, StatusCode code, std::string says,
                    v1::PushSparseRequest request) {
  return {std::move(name), code, std::move(says), [request](HostileShard& s) {
            v1::PushResponse response;
            Outcome out = Send(s, Who::kTrainers, &Stub::PushSparse, request, &response);
            out.facts = PushFacts(response);
            return out;
          }};
}

Case DensePullCase(std::string name, StatusCode code, std::string says,
                   v1::PullDenseRequest request, Who who = Who::kTrainers) {
  return {std::move(name), code, std::move(says), [request, who](HostileShard& s) {
            return Send(s, who, &Stub::PullDense, request);
          }};
}

Case SparsePullCase(std::string name, StatusCode code, std::string says,
                    v1::PullSparseRequest request, Who who = Who::kTrainers) {
  return {std::move(name), code, std::move(says), [request, who](HostileShard& s) {
            return Send(s, who, &Stub::PullSparse, request);
          }};
}

}  // namespace

CaseClass ReplayedSeqCases(const HostileShard& shard) {
  CaseClass c{"replayed and reordered push seqs", {}, {}, {}};
  const std::vector<uint64_t>& keys = shard.own_keys();
  c.cases.push_back(DensePushCase("worker 0's applied seq 1 again, other values",
                                  StatusCode::OK, "duplicate=1",
                                  DensePush(kDense, 0, 1, DenseGradient(kDenseHere, 9))));
  c.cases.push_back(DensePushCase("worker 1's applied seq 4 again", StatusCode::OK,
                                  "duplicate=1",
                                  DensePush(kDense, 1, 4, DenseGradient(kDenseHere))));
  c.cases.push_back(DensePushCase("worker 0's sync step-0 push (seq 5) again",
                                  StatusCode::OK, "duplicate=1",
                                  DensePush(kSync, 0, 5, DenseGradient(kSyncHere, 3))));
  v1::PushDenseRequest sliced = DensePush(kDense, 0, 2, DenseGradient(kDenseHere / 2));
  sliced.set_slices_in_push(2);
  c.cases.push_back(DensePushCase("worker 0's seq 2 again as slice 0 of 2",
                                  StatusCode::OK, "duplicate=1", sliced));
  c.cases.push_back(SparsePushCase(
      "worker 0's sparse seq 2 again", StatusCode::OK, "duplicate=1",
      SparsePush(kSparse, 0, 2, keys, Floats(std::vector<float>(keys.size() * kDim, 1)))));
  c.cases.push_back(SparsePushCase(
      "worker 1's sparse seq 3 again with other keys", StatusCode::OK, "duplicate=1",
      SparsePush(kSparse, 1, 3, {keys[0]}, Floats(std::vector<float>(kDim, 2)))));
  return c;
}

CaseClass ForgottenSeqCases(const HostileShard&) {
  CaseClass c{"reordered seqs past the dedup window", {}, {}, {}};
  // Legitimate: worker 0 pushes 'dense' 70 more times (seqs 201-270), more
  // than the 64 answers the shard keeps per worker incarnation, so seqs up
  // to 206 are let go: one of them may have been applied, and arriving now
  // it must be refused rather than applied (again).
  c.setup = [](HostileShard& s) {
    for (uint64_t seq = 201; seq <= 270; ++seq) {
      v1::PushResponse response;
      REQUIRE(Send(s, Who::kTrainers, &Stub::PushDense,
                   DensePush(kDense, 0, seq, DenseGradient(kDenseHere, 0.001f)), &response)
                  .status.ok());
      REQUIRE(response.accepted());
    }
  };
  for (uint64_t seq : {1, 2, 150, 206}) {
    c.cases.push_back(DensePushCase(
        absl::StrCat("worker 0's seq ", seq, ", let go"), StatusCode::FAILED_PRECONDITION,
        absl::StrCat("push ", seq, " of worker 0 is older than this shard remembers (it "
                     "keeps answers past push 206)"),
        DensePush(kDense, 0, seq, DenseGradient(kDenseHere))));
  }
  c.cases.push_back(DensePushCase("worker 0's seq 207, still remembered", StatusCode::OK,
                                  "duplicate=1",
                                  DensePush(kDense, 0, 207, DenseGradient(kDenseHere))));
  return c;
}

CaseClass ShapeCases(const HostileShard& shard) {
  CaseClass c{"wrong sizes, offsets and shapes", {}, {}, {}};
  const std::vector<uint64_t> two = {shard.own_keys()[0], shard.own_keys()[1]};
  c.cases.push_back(DensePushCase("PushDense of 3 bytes", StatusCode::INVALID_ARGUMENT,
                                  "multiple of 4",
                                  DensePush(kDense, 0, 0, std::string(3, '\1'))));
  c.cases.push_back(DensePushCase("PushDense of 33 floats to a 32-float part",
                                  StatusCode::OUT_OF_RANGE, "are not all on shard 0",
                                  DensePush(kDense, 0, 0, DenseGradient(kDenseHere + 1))));
  c.cases.push_back(DensePushCase("PushDense of no values", StatusCode::INVALID_ARGUMENT,
                                  "empty range", DensePush(kDense, 0, 0, "")));
  c.cases.push_back(DensePullCase("PullDense of 0 values", StatusCode::INVALID_ARGUMENT,
                                  "empty range", DensePull(kDense, 0, 0, 0)));
  c.cases.push_back(DensePullCase("PullDense of 33 values", StatusCode::OUT_OF_RANGE,
                                  "are not all on shard 0",
                                  DensePull(kDense, 0, 0, kDenseHere + 1)));
  for (int64_t extra : {-1, 1}) {
    c.cases.push_back(SparsePushCase(
        absl::StrCat("PushSparse of 2 keys with 2 x dim ", extra > 0 ? "+" : "-",
                     " 1 floats"),
        StatusCode::INVALID_ARGUMENT, "",
        SparsePush(kSparse, 0, 0, two,
                   Floats(std::vector<float>(2 * kDim + extra, 0.5f)))));
  }
  v1::PushSparseRequest ragged_keys =
      SparsePush(kSparse, 0, 0, two, Floats(std::vector<float>(2 * kDim, 0.5f)));
  ragged_keys.mutable_keys()->pop_back();
  c.cases.push_back(SparsePushCase("PushSparse with 15 bytes of keys",
                                   StatusCode::INVALID_ARGUMENT, "multiple of 8",
                                   ragged_keys));
  v1::PullSparseRequest ragged_pull = SparsePull(kSparse, 0, two);
  ragged_pull.mutable_keys()->append("\1\2\3\4");
  c.cases.push_back(SparsePullCase("PullSparse with 20 bytes of keys",
                                   StatusCode::INVALID_ARGUMENT, "multiple of 8",
                                   ragged_pull));
  v1::PushSparseRequest bases =
      SparsePush(kSparse, 0, 0, two, Floats(std::vector<float>(2 * kDim, 0.5f)));
  bases.set_row_base_versions(Keys({1}));
  c.cases.push_back(SparsePushCase("PushSparse with 1 row base version for 2 keys",
                                   StatusCode::INVALID_ARGUMENT, "1 row base versions for 2 keys",
                                   bases));
  v1::PushDenseRequest slice = DensePush(kDense, 0, 950, DenseGradient(kDenseHere / 2));
  slice.set_slices_in_push(2);
  slice.set_slice_index(2);
  c.cases.push_back(DensePushCase("PushDense slice 2 of 2", StatusCode::INVALID_ARGUMENT,
                                  "slice index 2 of a push of 2 slices", slice));
  v1::PushDenseRequest too_many = DensePush(kDense, 0, 951, DenseGradient(1));
  too_many.set_slices_in_push(kDenseHere + 1);
  c.cases.push_back(DensePushCase("PushDense as one of 33 slices of a 32-float part",
                                  StatusCode::INVALID_ARGUMENT, "slices for a push of at most",
                                  too_many));
  v1::PullDenseRequest codec = DensePull(kDense, 0, 0, 4);
  codec.set_pull_codec(static_cast<v1::Codec>(99));
  c.cases.push_back(DensePullCase("PullDense with codec 99", StatusCode::INVALID_ARGUMENT,
                                  "", codec));
  v1::PullDenseRequest bucket = DensePull(kDense, 0, 0, 4);
  bucket.set_pull_codec(v1::CODEC_INT8);
  bucket.set_pull_bucket_size(1u << 31);
  c.cases.push_back(DensePullCase("PullDense int8 with a 2^31 bucket",
                                  StatusCode::INVALID_ARGUMENT, "", bucket));
  return c;
}

CaseClass UnknownTableCases(const HostileShard& shard) {
  CaseClass c{"unknown tables", {}, {}, {}};
  const std::vector<uint64_t> one = {shard.own_keys()[0]};
  c.cases.push_back(DensePushCase("PushDense to 'nope'", StatusCode::NOT_FOUND,
                                  "no table 'nope'",
                                  DensePush("nope", 0, 960, DenseGradient(4))));
  c.cases.push_back(DensePushCase("PushDense to ''", StatusCode::NOT_FOUND, "no table",
                                  DensePush("", 0, 961, DenseGradient(4))));
  c.cases.push_back(DensePushCase("PushDense to 'Dense' (case differs)",
                                  StatusCode::NOT_FOUND, "no table 'Dense'",
                                  DensePush("Dense", 0, 962, DenseGradient(4))));
  v1::PushDenseRequest encoded = DensePush("nope", 0, 963, "TPSC");
  encoded.set_encoded(true);
  c.cases.push_back(DensePushCase("encoded PushDense to 'nope'", StatusCode::NOT_FOUND,
                                  "no table 'nope'", encoded));
  c.cases.push_back(DensePullCase("PullDense of 'nope'", StatusCode::NOT_FOUND,
                                  "no table 'nope'", DensePull("nope", 0, 0, 4)));
  c.cases.push_back(SparsePullCase("PullSparse of 'nope'", StatusCode::NOT_FOUND,
                                   "no table 'nope'", SparsePull("nope", 0, one)));
  c.cases.push_back(SparsePushCase(
      "PushSparse to 'nope'", StatusCode::NOT_FOUND, "no table 'nope'",
      SparsePush("nope", 0, 964, one, Floats(std::vector<float>(kDim, 1)))));
  c.cases.push_back(DensePushCase("PushDense to sparse table 'emb'",
                                  StatusCode::INVALID_ARGUMENT, "use the sparse calls",
                                  DensePush(kSparse, 0, 965, DenseGradient(4))));
  c.cases.push_back(SparsePullCase("PullSparse of dense table 'dense'",
                                   StatusCode::INVALID_ARGUMENT, "use the dense calls",
                                   SparsePull(kDense, 0, one)));
  c.cases.push_back({"GetTable 'nope'", StatusCode::NOT_FOUND, "no table 'nope'",
                     [](HostileShard& s) {
                       v1::GetTableRequest r;
                       r.set_name("nope");
                       return Send(s, Who::kReader, &Stub::GetTable, r);
                     }});
  c.cases.push_back({"Stats of 'nope'", StatusCode::NOT_FOUND, "no table 'nope'",
                     [](HostileShard& s) {
                       v1::StatsRequest r;
                       r.set_table("nope");
                       return Send(s, Who::kReader, &Stub::Stats, r);
                     }});
  c.cases.push_back({"SetConsistency of 'nope'", StatusCode::NOT_FOUND, "no table 'nope'",
                     [](HostileShard& s) {
                       v1::SetConsistencyRequest r;
                       r.set_table("nope");
                       r.mutable_consistency()->set_kind(v1::CONSISTENCY_ASYNC);
                       return Send(s, Who::kAdmin, &Stub::SetConsistency, r);
                     }});
  c.cases.push_back({"DropTable 'nope'", StatusCode::NOT_FOUND, "no table 'nope'",
                     [](HostileShard& s) {
                       v1::DropTableRequest r;
                       r.set_name("nope");
                       return Send(s, Who::kAdmin, &Stub::DropTable, r);
                     }});
  return c;
}

CaseClass NonFiniteCases(const HostileShard& shard) {
  CaseClass c{"NaN, Inf and near-max values", {}, {}, {}};
  struct Bad {
    const char* name;
    uint64_t at;
    float value;
    const char* says;
  };
  const Bad bads[] = {
      {"NaN first", 0, kNaN, "gradient element 0 is nan"},
      {"NaN last", kDenseHere - 1, kNaN, "gradient element 31 is nan"},
      {"+Inf", 5, kInf, "gradient element 5 is inf"},
      {"-Inf", 6, -kInf, "gradient element 6 is -inf"},
  };
  for (const Bad& b : bads) {
    c.cases.push_back(DensePushCase(absl::StrCat("PushDense with ", b.name),
                                    StatusCode::INVALID_ARGUMENT, b.says,
                                    DensePush(kDense, 0, 0, WithOne(kDenseHere, b.at, b.value))));
  }
  c.cases.push_back(DensePushCase(
      "worker 1's sync push with NaN (would close step 0)", StatusCode::INVALID_ARGUMENT,
      "is nan", DensePush(kSync, 1, 970, WithOne(kSyncHere, 2, kNaN))));
  const std::vector<uint64_t>& keys = shard.own_keys();
  for (float bad : {kNaN, -kInf}) {
    std::vector<float> rows(keys.size() * kDim, 0.1f);
    rows.back() = bad;
    c.cases.push_back(SparsePushCase(
        absl::StrCat("PushSparse with ", std::isnan(bad) ? "NaN" : "-Inf", " last"),
        StatusCode::INVALID_ARGUMENT, "NaN/Inf gradients are refused",
        SparsePush(kSparse, 0, 0, keys, Floats(rows))));
  }
  // Finite gradients that would overflow what they update: adagrad's
  // accumulator (g^2 = 1e40 is past float's 3.4e38) and adam's second
  // moment. (A 1e20 push to adam is fine: 0.001 g^2 = 1e37 still fits, and
  // its step is bounded by the learning rate.)
  const std::string overflow =
      "would make parameters or optimizer state non-finite (gradient too large for the "
      "values it meets); nothing was applied";
  for (float big : {1e20f, 3.4e38f}) {
    std::vector<float> rows(keys.size() * kDim, 0.1f);
    rows[2] = big;
    c.cases.push_back(SparsePushCase(absl::StrCat("PushSparse of ", big, " to adagrad"),
                                     StatusCode::INVALID_ARGUMENT, overflow,
                                     SparsePush(kSparse, 0, 0, keys, Floats(rows))));
  }
  for (float big : {3.4e38f, -3.4e38f}) {
    c.cases.push_back(DensePushCase(absl::StrCat("PushDense of ", big, " to adam"),
                                    StatusCode::INVALID_ARGUMENT, overflow,
                                    DensePush(kDense, 0, 0, WithOne(kDenseHere, 3, big))));
  }
  for (double norm : {std::nan(""), -1.0, std::numeric_limits<double>::infinity()}) {
    v1::PushDenseRequest r = DensePush(kDense, 0, 0, DenseGradient(kDenseHere));
    r.set_push_norm_sq(norm);
    c.cases.push_back(DensePushCase(absl::StrCat("PushDense with push_norm_sq ", norm),
                                    StatusCode::INVALID_ARGUMENT,
                                    "push_norm_sq must be finite and >= 0", r));
  }
  return c;
}

CaseClass OutOfRangeCases(const HostileShard& shard) {
  CaseClass c{"out-of-range indices, keys and worker ids", {}, {}, {}};
  const std::vector<uint64_t>& foreign = shard.foreign_keys();
  const uint64_t own = shard.own_keys()[0];
  c.cases.push_back(SparsePullCase("PullSparse of a key of shard 1",
                                   StatusCode::INVALID_ARGUMENT, "", SparsePull(kSparse, 0, {foreign[0]})));
  c.cases.push_back(SparsePushCase(
      "PushSparse of a key of shard 1 after an own key", StatusCode::INVALID_ARGUMENT, "",
      SparsePush(kSparse, 0, 0, {own, foreign[1]}, Floats(std::vector<float>(2 * kDim, 1)))));
  c.cases.push_back(SparsePushCase(
      "PushSparse with a key twice", StatusCode::INVALID_ARGUMENT, "",
      SparsePush(kSparse, 0, 0, {own, own}, Floats(std::vector<float>(2 * kDim, 1)))));
  c.cases.push_back(DensePushCase("PushDense at offset 32 (shard 1's range)",
                                  StatusCode::OUT_OF_RANGE, "which holds [0, 32)",
                                  DensePush(kDense, 0, 0, DenseGradient(4), kDenseHere)));
  c.cases.push_back(DensePushCase("PushDense straddling offsets 31-32",
                                  StatusCode::OUT_OF_RANGE, "which holds [0, 32)",
                                  DensePush(kDense, 0, 0, DenseGradient(2), kDenseHere - 1)));
  c.cases.push_back(DensePushCase("PushDense at offset 2^64 - 1 (wraps)",
                                  StatusCode::OUT_OF_RANGE, "which holds [0, 32)",
                                  DensePush(kDense, 0, 0, DenseGradient(2), ~uint64_t{0})));
  c.cases.push_back(DensePullCase("PullDense at offset 32", StatusCode::OUT_OF_RANGE,
                                  "which holds [0, 32)", DensePull(kDense, 0, kDenseHere, 4)));
  c.cases.push_back(DensePullCase("PullDense of 2 at offset 2^64 - 1",
                                  StatusCode::OUT_OF_RANGE, "which holds [0, 32)",
                                  DensePull(kDense, 0, ~uint64_t{0}, 2)));
  c.cases.push_back(DensePullCase("PullDense of 2^63 at offset 2^63",
                                  StatusCode::INVALID_ARGUMENT, "more than a table may hold",
                                  DensePull(kDense, 0, uint64_t{1} << 63, uint64_t{1} << 63)));
  // Routed by an ownership map this shard is not at (it is at epoch 1).
  const std::string epoch_says =
      "routed by ownership map epoch 2, but shard 0 is at ownership epoch 1";
  v1::PushDenseRequest other_epoch = DensePush(kDense, 0, 990, DenseGradient(kDenseHere));
  other_epoch.set_ownership_epoch(2);
  c.cases.push_back(DensePushCase("PushDense routed by ownership epoch 2",
                                  StatusCode::FAILED_PRECONDITION, epoch_says, other_epoch));
  v1::PullSparseRequest other_epoch_pull = SparsePull(kSparse, 0, {own});
  other_epoch_pull.set_ownership_epoch(2);
  c.cases.push_back(SparsePullCase("PullSparse routed by ownership epoch 2",
                                   StatusCode::FAILED_PRECONDITION, epoch_says,
                                   other_epoch_pull));
  // Worker ids the shard does not serve (--max_workers=64), by the
  // principal that owns them.
  c.cases.push_back({"Register worker 64", StatusCode::RESOURCE_EXHAUSTED, "(--max_workers)",
                     [](HostileShard& s) {
                       return Send(s, Who::kFar, &Stub::Register, Registration(64, 10));
                     }});
  c.cases.push_back(DensePullCase("PullDense as worker 65", StatusCode::RESOURCE_EXHAUSTED,
                                  "(--max_workers)", DensePull(kDense, 65, 0, 4), Who::kFar));
  c.cases.push_back(DensePushCase("PushDense as worker 66", StatusCode::RESOURCE_EXHAUSTED,
                                  "(--max_workers)",
                                  DensePush(kDense, 66, 1, DenseGradient(kDenseHere)),
                                  Who::kFar));
  c.cases.push_back(SparsePullCase("PullSparse as worker 64", StatusCode::RESOURCE_EXHAUSTED,
                                   "(--max_workers)", SparsePull(kSparse, 64, {own}),
                                   Who::kFar));
  return c;
}

}  // namespace taups::testing::hostile
