// Client::PushDenseWith commits an encoder's error-feedback residual only
// for the parts the shards accepted (issue 10 part 3): the client core tells
// the encoder, after the answers, which parts were delivered
// (SliceEncoder::FinishPush), and never for a push that failed to encode.
// The encoder here keeps its residual in host memory the way
// cuda::DeviceGradient keeps it on the device (encode from the committed
// residual into a pending one, commit in FinishPush), so the core's side of
// the contract is checked without a GPU; tests/device_push_gpu_test.cc
// checks the device encoder itself.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/codec.h"
#include "common/error_feedback.h"
#include "tests/inproc_cluster.h"

namespace taups {
namespace {

class StagingEncoder final : public SliceEncoder {
 public:
  explicit StagingEncoder(uint64_t n) : gradient(n), committed(n), pending(n) {}
  uint64_t size() const override { return gradient.size(); }
  absl::Status EncodeSlice(uint64_t offset, uint64_t count,
                           const CodecOptions& options, bool error_feedback,
                           std::string* block) override {
    const absl::Span<const float> part =
        absl::MakeConstSpan(gradient).subspan(offset, count);
    if (!error_feedback) return EncodeBlock(part, options, offset, block);
    // Encoded from the committed residual; what it leaves goes to pending.
    ErrorFeedback feedback(committed.size());
    feedback.Store(0, committed);
    std::vector<float> after(count);
    absl::Status status = feedback.EncodeRangeInto(part, offset, options, block,
                                                   absl::MakeSpan(after));
    if (!status.ok()) return status;
    std::copy(after.begin(), after.end(), pending.begin() + offset);
    return absl::OkStatus();
  }
  void FinishPush(const std::vector<std::pair<uint64_t, uint64_t>>& parts,
                  const std::vector<bool>& delivered) override {
    ++finished;
    last_parts = parts;
    last_delivered = delivered;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (!delivered[i]) continue;
      std::copy_n(pending.begin() + parts[i].first, parts[i].second,
                  committed.begin() + parts[i].first);
    }
  }

  std::vector<float> gradient, committed, pending;
  int finished = 0;
  std::vector<std::pair<uint64_t, uint64_t>> last_parts;
  std::vector<bool> last_delivered;
};

std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

TEST_CASE("an encoder's residual commits only where a shard accepted") {
  InProcessCluster cluster(2);
  // 2 x 2,500 floats in 4 KiB slices: 3 slices per shard.
  auto client = cluster.Connect(0, /*slice_bytes=*/4096);
  const uint64_t n = 5000;
  TableConfig table = TableConfig::Dense("w", n);
  table.staleness.reject_above_tau_max = true;
  table.staleness.tau_max = 0;
  REQUIRE(client->CreateTable(table).ok());
  CompressionConfig config;
  config.push.codec = CodecKind::kInt8;
  config.push.bucket_size = 64;
  config.error_feedback = true;
  REQUIRE(client->SetCompression("w", config).ok());

  StagingEncoder encoder(n);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto refill = [&] {
    for (float& x : encoder.gradient) x = normal(rng);
  };

  // Accepted everywhere: every part commits.
  refill();
  auto first = client->PushDenseWith("w", encoder);
  REQUIRE(first.ok());
  REQUIRE(first->all_accepted());
  REQUIRE(encoder.finished == 1);
  REQUIRE(encoder.last_parts.size() == 6);
  REQUIRE(encoder.last_delivered == std::vector<bool>(6, true));
  REQUIRE(Bits(encoder.committed) == Bits(encoder.pending));
  const std::vector<float> after_first = encoder.committed;

  // Shard 0 accepts (its basis is its version now), shard 1 refuses (tau 1):
  // only shard 0's three parts commit.
  std::vector<float> values(n);
  PullInfo basis;
  basis.shard_versions = {1, 0};
  basis.shard_touched = {true, true};
  refill();
  auto split = client->PushDenseWith("w", encoder, &basis);
  REQUIRE(split.ok());
  REQUIRE(split->shards[0].accepted);
  REQUIRE_FALSE(split->shards[1].accepted);
  REQUIRE(encoder.finished == 2);
  REQUIRE(encoder.last_delivered ==
          std::vector<bool>{true, true, true, false, false, false});
  const uint64_t half = n / 2;  // shard 1 holds [2500, 5000)
  REQUIRE(encoder.last_parts[3].first == half);
  for (uint64_t i = 0; i < n; ++i) {
    const float expected = i < half ? encoder.pending[i] : after_first[i];
    if (std::memcmp(&encoder.committed[i], &expected, sizeof(float)) != 0) {
      FAIL("element " << i << ": committed " << encoder.committed[i]
                      << ", expected " << expected);
    }
  }
  const std::vector<float> after_split = encoder.committed;

  // A NaN in the last slice: int8 refuses to encode it after five slices
  // were encoded; nothing is sent, FinishPush is not called, nothing moves.
  refill();
  encoder.gradient[n - 1] = std::nanf("");
  CHECK(client->PushDenseWith("w", encoder).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(encoder.finished == 2);
  CHECK(Bits(encoder.committed) == Bits(after_split));

  // The turn was given back: the next push encodes and commits.
  REQUIRE(client->PullDense("w", absl::MakeSpan(values)).ok());
  refill();
  auto last = client->PushDenseWith("w", encoder);
  REQUIRE(last.ok());
  CHECK(last->all_accepted());
  CHECK(encoder.finished == 3);
}

}  // namespace
}  // namespace taups
