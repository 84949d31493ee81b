// ps_worker --row_tau's bookkeeping: which ids are head ids (the per-field
// rank cutoffs against a brute-force count), how a push's per-row τ is
// grouped (a duplicated key counts once, unknown rows are skipped, the
// table-level τ kept apart), and the "row_tau" object of the JSON summary.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "taups/client.h"
#include "taups/table_config.h"
#include "worker/trainer/ctr_schema.h"
#include "worker/trainer/head_tail_row_tau.h"
#include "worker/trainer/training_summary.h"
#include "worker/trainer/zipf_sampler.h"

namespace taups::trainer {
namespace {

CtrSchema SmallSchema() {
  CtrSchema schema;
  schema.cardinalities = {3, 1000, 50000};
  schema.zipf_exponent = 1.1;
  return schema;
}

PushResult RowTaus(std::vector<uint64_t> taus, std::vector<uint64_t> shard_taus) {
  PushResult result;
  for (uint64_t tau : shard_taus) {
    ShardPushResult shard;
    shard.touched = true;
    shard.accepted = true;
    shard.tau = tau;
    result.shards.push_back(shard);
  }
  result.row_taus = std::move(taus);
  return result;
}

TEST_CASE("head cutoffs count the ids at or above the probability threshold",
          "[trainer][ctr][row_tau]") {
  const CtrSchema schema = SmallSchema();
  for (double threshold : {1.0 / 256, 0.01, 0.3, 1e-6}) {
    auto cutoffs = HeadRankCutoffs(schema, threshold);
    REQUIRE(cutoffs.ok());
    REQUIRE(cutoffs->size() == 3);
    for (int f = 0; f < 3; ++f) {
      auto zipf = ZipfSampler::Create(schema.cardinalities[f], 1.1);
      REQUIRE(zipf.ok());
      uint32_t brute = 0;
      for (uint32_t id = 0; id < schema.cardinalities[f]; ++id) {
        if (zipf->Probability(id) >= threshold) ++brute;
      }
      CHECK((*cutoffs)[f] == brute);
    }
  }
  // Every id of the 3-id field is in more than 1 of 256 examples: all head.
  // The big fields keep only a few dozen head ids.
  auto cutoffs = HeadRankCutoffs(schema, 1.0 / 256);
  REQUIRE(cutoffs.ok());
  CHECK((*cutoffs)[0] == 3);
  CHECK((*cutoffs)[1] > 5);
  CHECK((*cutoffs)[1] < 100);
  CHECK((*cutoffs)[2] < (*cutoffs)[1]);  // mass spread over more ids
  // A threshold above every probability leaves no head.
  auto none = HeadRankCutoffs(schema, 1.0);
  REQUIRE(none.ok());
  CHECK(*none == std::vector<uint32_t>{0, 0, 0});

  CHECK(absl::IsInvalidArgument(HeadRankCutoffs(schema, 0.0).status()));
  CHECK(absl::IsInvalidArgument(HeadRankCutoffs(schema, 1.5).status()));
  CtrSchema empty;
  CHECK(absl::IsInvalidArgument(HeadRankCutoffs(empty, 0.01).status()));
}

TEST_CASE("row tau is grouped by head and tail ids, once per row per push",
          "[trainer][ctr][row_tau]") {
  // Field 0: ids 0, 1 head; field 1: id 0 head; field 2 (no cutoff): tail.
  HeadTailRowTau groups({2, 1}, 0.25);
  CHECK(groups.head_ids() == 3);
  CHECK(groups.IsHead(EmbeddingKey(0, 1)));
  CHECK_FALSE(groups.IsHead(EmbeddingKey(0, 2)));
  CHECK(groups.IsHead(EmbeddingKey(1, 0)));
  CHECK_FALSE(groups.IsHead(EmbeddingKey(1, 1)));
  CHECK_FALSE(groups.IsHead(EmbeddingKey(2, 0)));

  const uint64_t h0 = EmbeddingKey(0, 0), h1 = EmbeddingKey(1, 0);
  const uint64_t t0 = EmbeddingKey(0, 7), t1 = EmbeddingKey(2, 0);
  // h0 three times (one row: counted once), t0 twice, an unknown row.
  const std::vector<uint64_t> keys = {h0, t0, h0, h1, t0, h0, t1, EmbeddingKey(1, 9)};
  groups.Add(keys, RowTaus({6, 0, 6, 10, 0, 6, 2, kUnknownRowVersion}, {9, 11}));
  CHECK(groups.head().count() == 2);  // h0, h1
  CHECK(groups.head().mean() == Approx(8.0));
  CHECK(groups.head().max() == 10.0);
  CHECK(groups.tail().count() == 2);  // t0, t1 (the unknown row skipped)
  CHECK(groups.tail().mean() == Approx(1.0));
  CHECK(groups.tail().max() == 2.0);
  CHECK(groups.table().count() == 2);
  CHECK(groups.table().mean() == Approx(10.0));

  // A push without per-row τ adds only its table-level τ; a result whose
  // row_taus do not match the keys is not read either.
  groups.Add(keys, RowTaus({}, {4}));
  groups.Add(keys, RowTaus({1, 2}, {}));
  CHECK(groups.head().count() == 2);
  CHECK(groups.tail().count() == 2);
  CHECK(groups.table().count() == 3);
  CHECK(groups.table().max() == 11.0);

  // 100 more pushes of one tail row: τ 1 ninety-nine times, then 50 once.
  for (int i = 0; i < 100; ++i) {
    groups.Add(std::vector<uint64_t>{t1}, RowTaus({i == 99 ? 50u : 1u}, {}));
  }
  const RowTauSummary summary = groups.Summary();
  CHECK(summary.head_ids == 3);
  CHECK(summary.head_min_probability == 0.25);
  CHECK(summary.tail.count == 102);
  CHECK(summary.tail.max == 50.0);
  // 102 values: 0, 2, 99 x 1, 50 -> the 101st smallest (p99) is 2.
  CHECK(summary.tail.p99 == 2.0);
  CHECK(summary.tail.mean == Approx((0 + 2 + 99 + 50) / 102.0));
  CHECK(summary.tail.p50 == 1.0);
  CHECK(summary.tail.zero_share == Approx(1.0 / 102));
  CHECK(summary.head.p50 == 6.0);
  CHECK(summary.head.p99 == 10.0);
  CHECK(summary.head.zero_share == 0.0);
  // Table-level tau of the 3 pushes that carried one: 9, 11, 4.
  CHECK(groups.Describe() ==
        "head mean 8.00 p50 6 p99 10 max 10 (2 rows), "
        "tail mean 1.48 p50 1 p99 2 max 50 (102 rows); "
        "table mean 8.00 p50 9 p99 11 max 11 (3 shard pushes)");
}

TEST_CASE("the JSON summary carries row_tau only when measured",
          "[trainer][ctr][row_tau]") {
  TrainingSummary summary;
  summary.model = "ctr";
  CHECK(summary.ToJson().find("row_tau") == std::string::npos);
  RowTauSummary row_tau;
  row_tau.head_min_probability = 0.5;
  row_tau.head_ids = 12;
  row_tau.head = {4, 0, 3.5, 3, 7, 9};
  row_tau.tail = {100, 0.75, 0.25, 0, 1, 3};
  row_tau.table = {8, 0.125, 5, 5, 6, 6};
  summary.row_tau = row_tau;
  const std::string json = summary.ToJson();
  CHECK(json.find(
            ",\"row_tau\":{\"head_min_prob\":0.5,\"head_ids\":12,"
            "\"head\":{\"count\":4,\"zero\":0,\"mean\":3.5,\"p50\":3,"
            "\"p99\":7,\"max\":9},"
            "\"tail\":{\"count\":100,\"zero\":0.75,\"mean\":0.25,"
            "\"p50\":0,\"p99\":1,\"max\":3},"
            "\"table\":{\"count\":8,\"zero\":0.125,\"mean\":5,\"p50\":5,"
            "\"p99\":6,\"max\":6}}}") !=
        std::string::npos);
}

}  // namespace
}  // namespace taups::trainer
