// TableCompression::EncodeDense encodes a large push's slices on several
// threads: the blocks and the error-feedback residual must be exactly what
// encoding the slices one after another gives, and a push that cannot be
// encoded must leave the residual as the one-after-another loop leaves it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "worker/src/table_compression.h"

namespace taups {
namespace {

std::vector<float> Gradient(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1e-3f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// 2^21 values in 9 uneven slices: large enough for several threads.
std::vector<std::pair<uint64_t, uint64_t>> Parts(uint64_t n) {
  std::vector<std::pair<uint64_t, uint64_t>> parts;
  const uint64_t step = n / 9 + 1001;
  for (uint64_t offset = 0; offset < n; offset += step) {
    parts.emplace_back(offset, std::min(step, n - offset));
  }
  return parts;
}

CompressionConfig Config(CodecKind codec, bool error_feedback) {
  CompressionConfig config;
  config.push.codec = codec;
  config.push.rounding = Rounding::kStochastic;
  config.push.bucket_size = 512;
  config.push.topk_ratio = 0.01;
  config.error_feedback = error_feedback;
  return config;
}

TEST_CASE("a push's slices encode in parallel exactly as one after another") {
  const uint64_t n = uint64_t{1} << 21;
  const auto parts = Parts(n);
  for (CodecKind codec : {CodecKind::kInt2, CodecKind::kSign, CodecKind::kTopK,
                          CodecKind::kFp16}) {
    for (bool feedback : {false, true}) {
      CAPTURE(CodecKindName(codec), feedback);
      // Four threads, as many as help here, and one: same pushes, same push
      // numbers, so the same seeds and ratios.
      TableCompression four(Config(codec, feedback), 3, n);
      TableCompression automatic(Config(codec, feedback), 3, n);
      TableCompression one(Config(codec, feedback), 3, n);
      for (int push = 0; push < 3; ++push) {
        const std::vector<float> g = Gradient(n, 10 + push);
        absl::StatusOr<std::vector<std::string>> on_four =
            four.EncodeDense(g, parts, /*max_threads=*/4);
        absl::StatusOr<std::vector<std::string>> on_auto =
            automatic.EncodeDense(g, parts);
        absl::StatusOr<std::vector<std::string>> on_one =
            one.EncodeDense(g, parts, /*max_threads=*/1);
        REQUIRE(on_four.ok());
        REQUIRE(on_auto.ok());
        REQUIRE(on_one.ok());
        REQUIRE(on_one->size() == parts.size());
        CHECK(*on_four == *on_one);
        CHECK(*on_auto == *on_one);
        if (feedback) {
          CHECK(four.residual() == one.residual());
          CHECK(automatic.residual() == one.residual());
          CHECK_FALSE(one.residual().empty());
        }
      }
    }
  }
}

TEST_CASE("a push that cannot be encoded leaves the residual as the loop does") {
  const uint64_t n = uint64_t{1} << 21;
  const auto parts = Parts(n);
  TableCompression parallel(Config(CodecKind::kInt8, true), 1, n);
  TableCompression serial(Config(CodecKind::kInt8, true), 1, n);
  std::vector<float> g = Gradient(n, 5);
  REQUIRE(parallel.EncodeDense(g, parts, /*max_threads=*/4).ok());
  REQUIRE(serial.EncodeDense(g, parts, /*max_threads=*/1).ok());
  // A NaN in the fifth slice: int8 refuses it.
  g[parts[4].first + 17] = NAN;
  const absl::StatusOr<std::vector<std::string>> refused =
      parallel.EncodeDense(g, parts, /*max_threads=*/4);
  const absl::StatusOr<std::vector<std::string>> refused_too =
      serial.EncodeDense(g, parts, /*max_threads=*/1);
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status() == refused_too.status());
  CHECK(parallel.residual() == serial.residual());
}

}  // namespace
}  // namespace taups
