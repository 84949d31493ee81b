// TableCompression::EncodeDense encodes a large push's slices on several
// threads: the blocks and the error-feedback residual must be exactly what
// encoding the slices one after another gives, and a push that cannot be
// encoded must leave the residual as the one-after-another loop leaves it.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/codec.h"
#include "common/error_feedback.h"
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
  INFO("hardware threads: " << std::thread::hardware_concurrency());
  const uint64_t n = uint64_t{1} << 21;
  const auto parts = Parts(n);
  for (CodecKind codec : {CodecKind::kInt2, CodecKind::kSign, CodecKind::kTopK,
                          CodecKind::kFp16}) {
    for (bool feedback : {false, true}) {
      CAPTURE(CodecKindName(codec), feedback);
      TableCompression compression(Config(codec, feedback), 3, n);
      // The reference: the same per-push options, slice after slice.
      ErrorFeedback reference(n);
      TableCompression options_source(Config(codec, feedback), 3, n);
      for (int push = 0; push < 3; ++push) {
        const std::vector<float> g = Gradient(n, 10 + push);
        absl::StatusOr<std::vector<std::string>> blocks =
            compression.EncodeDense(g, parts);
        REQUIRE(blocks.ok());
        REQUIRE(blocks->size() == parts.size());
        // Same push index, so the same seed and ratio as `compression` used.
        absl::StatusOr<std::vector<std::string>> one_thread =
            options_source.EncodeDense(g, parts, /*max_threads=*/1);
        REQUIRE(one_thread.ok());
        CHECK(*blocks == *one_thread);
        if (feedback) {
          CHECK(compression.residual() == options_source.residual());
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
  REQUIRE(parallel.EncodeDense(g, parts).ok());
  REQUIRE(serial.EncodeDense(g, parts, /*max_threads=*/1).ok());
  // A NaN in the fifth slice: int8 refuses it.
  g[parts[4].first + 17] = NAN;
  const absl::StatusOr<std::vector<std::string>> refused =
      parallel.EncodeDense(g, parts);
  const absl::StatusOr<std::vector<std::string>> refused_too =
      serial.EncodeDense(g, parts, /*max_threads=*/1);
  REQUIRE(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status() == refused_too.status());
  CHECK(parallel.residual() == serial.residual());
}

}  // namespace
}  // namespace taups
