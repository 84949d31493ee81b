// TableCompression::EncodeDense encodes a large push's slices on several
// threads: the blocks and the error-feedback residual must be exactly what
// encoding the slices one after another gives. The residual and the
// accumulation buffer change only by the parts a push delivered: a push that
// cannot be encoded, or whose parts were refused, leaves them as they were.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/codec.h"
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

// Encodes one push of `g` and finishes it with every part delivered.
absl::StatusOr<std::vector<std::string>> PushAll(
    TableCompression& state, const std::vector<float>& g,
    const std::vector<std::pair<uint64_t, uint64_t>>& parts,
    size_t max_threads = 0) {
  std::unique_ptr<PendingDensePush> push = state.StartDense(g, parts);
  REQUIRE(push != nullptr);
  absl::Status encoded = state.EncodeDense(*push, max_threads);
  if (!encoded.ok()) return encoded;
  push->Finish(std::vector<bool>(parts.size(), true));
  return push->blocks();
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
            PushAll(four, g, parts, /*max_threads=*/4);
        absl::StatusOr<std::vector<std::string>> on_auto =
            PushAll(automatic, g, parts);
        absl::StatusOr<std::vector<std::string>> on_one =
            PushAll(one, g, parts, /*max_threads=*/1);
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

TEST_CASE("a push that cannot be encoded leaves the residual as it was") {
  const uint64_t n = uint64_t{1} << 21;
  const auto parts = Parts(n);
  for (size_t threads : {size_t{4}, size_t{1}}) {
    CAPTURE(threads);
    TableCompression state(Config(CodecKind::kInt8, true), 1, n);
    std::vector<float> g = Gradient(n, 5);
    REQUIRE(PushAll(state, g, parts, threads).ok());
    const std::vector<float> before = state.residual();
    // A NaN in the last slice: int8 refuses it, after the earlier slices
    // were encoded.
    g[parts.back().first + 17] = NAN;
    std::unique_ptr<PendingDensePush> push = state.StartDense(g, parts);
    REQUIRE(push != nullptr);
    CHECK(absl::IsInvalidArgument(state.EncodeDense(*push, threads)));
    push.reset();
    const std::vector<float> after = state.residual();
    REQUIRE(after.size() == before.size());
    CHECK(std::memcmp(after.data(), before.data(), 4 * n) == 0);
    // The refused push does not hold the table's turn: the next one encodes.
    g[parts.back().first + 17] = 0.0f;
    CHECK(PushAll(state, g, parts, threads).ok());
    CHECK(state.residual() != before);
  }
}

TEST_CASE("a push stores the residual of the parts it delivered, and only those") {
  const uint64_t n = 4000;
  const std::vector<std::pair<uint64_t, uint64_t>> parts = {
      {0, 1000}, {1000, 1000}, {2000, 2000}};
  TableCompression state(Config(CodecKind::kInt4, true), 2, n);
  const std::vector<float> g1 = Gradient(n, 41);
  REQUIRE(PushAll(state, g1, parts).ok());
  const std::vector<float> before = state.residual();

  const std::vector<float> g2 = Gradient(n, 42);
  std::unique_ptr<PendingDensePush> push = state.StartDense(g2, parts);
  REQUIRE(push != nullptr);
  REQUIRE(state.EncodeDense(*push).ok());
  CHECK(state.residual() == before);  // nothing stored before the answers
  push->Finish({true, false, true});
  const std::vector<float> after = state.residual();
  // The refused part's range is byte for byte what it was; the delivered
  // ones hold corrected - decoded of this push's blocks.
  CHECK(std::memcmp(after.data() + 1000, before.data() + 1000, 4 * 1000) == 0);
  for (size_t p : {size_t{0}, size_t{2}}) {
    const auto [offset, count] = parts[p];
    auto decoded = DecodeToVector(push->blocks()[p], count);
    REQUIRE(decoded.ok());
    for (uint64_t i = 0; i < count; ++i) {
      const float corrected = g2[offset + i] + before[offset + i];
      REQUIRE(after[offset + i] == corrected - (*decoded)[i]);
    }
  }
  // Finishing twice changes nothing.
  push->Finish({true, true, true});
  CHECK(state.residual() == after);
}

TEST_CASE("an undelivered accumulated sum goes back to the buffer") {
  const uint64_t n = 3000;
  const std::vector<std::pair<uint64_t, uint64_t>> parts = {{0, 1000},
                                                            {1000, 2000}};
  CompressionConfig config;
  config.accumulate_steps = 2;
  TableCompression state(config, 0, n);
  const std::vector<float> a = Gradient(n, 1), b = Gradient(n, 2),
                           c = Gradient(n, 3);
  CHECK(state.StartDense(a, parts) == nullptr);  // group filling
  std::unique_ptr<PendingDensePush> push = state.StartDense(b, parts);
  REQUIRE(push != nullptr);
  std::vector<float> sum(n);
  for (uint64_t i = 0; i < n; ++i) sum[i] = 0.0f + a[i] + b[i];
  CHECK(std::vector<float>(push->gradient().begin(), push->gradient().end()) ==
        sum);
  // Accumulation goes on while the push is in flight.
  CHECK(state.StartDense(c, parts) == nullptr);
  push->Finish({true, false});  // the second part was refused
  const std::vector<float> buffer = state.accumulated();
  for (uint64_t i = 0; i < n; ++i) {
    const float expected = i < 1000 ? 0.0f + c[i] : (0.0f + c[i]) + sum[i];
    REQUIRE(buffer[i] == expected);
  }
  CHECK(state.accumulated_count() == 1);  // one push per two calls still
  // A push dropped unfinished (e.g. its encoding failed) gives all back.
  std::unique_ptr<PendingDensePush> next = state.StartDense(a, parts);
  REQUIRE(next != nullptr);
  const std::vector<float> carried(next->gradient().begin(),
                                   next->gradient().end());
  next.reset();
  CHECK(state.accumulated() == carried);
}

}  // namespace
}  // namespace taups
