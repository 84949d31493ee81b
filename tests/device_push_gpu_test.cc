// A gradient in GPU memory pushed through Client::PushDenseWith (encoded on
// the device by cuda::DeviceGradient) lands on real shards exactly as the
// same gradient pushed from host memory, error feedback included; and its
// device residual changes only when a push is accepted (issue 10 part 3), as
// the host path's does.
//
// Without a usable CUDA device the test prints "SKIPPED: no CUDA device" and
// returns; CTest reports it as skipped.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cmath>
#include <random>
#include <vector>

#include "cuda/cuda_device.h"
#include "cuda/device_gradient.h"
#include "tests/inproc_cluster.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

// Dense tables `names` of `n` floats (SGD at 0.5, `staleness`), each pushed
// with `config`.
void CreateCompressed(Client& client, const std::vector<std::string>& names,
                      uint64_t n, const CompressionConfig& config,
                      const StalenessConfig& staleness = {}) {
  for (const std::string& t : names) {
    TableConfig table = TableConfig::Dense(t, n);
    table.optimizer.learning_rate = 0.5f;
    table.staleness = staleness;
    REQUIRE(client.CreateTable(table).ok());
    REQUIRE(client.SetCompression(t, config).ok());
  }
}

TEST_CASE("a device gradient pushes exactly like the host one") {
  if (cuda::UsableDeviceCount() == 0) {
    TAUPS_SKIP("no CUDA device");
  }
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0, /*slice_bytes=*/1 << 16);
  const uint64_t n = 100003;
  for (CodecKind codec : {CodecKind::kInt8, CodecKind::kInt2, CodecKind::kSign,
                          CodecKind::kTopK, CodecKind::kBf16}) {
    for (bool feedback : {false, true}) {
      CAPTURE(CodecKindName(codec), feedback);
      CompressionConfig config;
      config.push.codec = codec;
      config.push.topk_ratio = 0.01;
      config.push.rounding = Rounding::kStochastic;
      config.error_feedback = feedback;
      const std::string host = absl::StrCat("host_", CodecKindName(codec), feedback);
      const std::string device = absl::StrCat("dev_", CodecKindName(codec), feedback);
      CreateCompressed(*client, {host, device}, n, config);
      float* d_grad = nullptr;
      REQUIRE(cudaMalloc(&d_grad, n * sizeof(float)) == cudaSuccess);
      auto gradient = cuda::DeviceGradient::Create(d_grad, n);
      REQUIRE(gradient.ok());
      std::mt19937_64 rng(5);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      for (int push = 0; push < 3; ++push) {
        std::vector<float> g(n);
        for (float& x : g) x = normal(rng);
        REQUIRE(cudaMemcpy(d_grad, g.data(), n * sizeof(float),
                           cudaMemcpyHostToDevice) == cudaSuccess);
        REQUIRE(client->PushDense(host, g).ok());
        auto pushed = client->PushDenseWith(device, **gradient);
        REQUIRE(pushed.ok());
        REQUIRE(pushed->all_accepted());
      }
      std::vector<float> a(n), b(n);
      REQUIRE(client->PullDense(host, absl::MakeSpan(a)).ok());
      REQUIRE(client->PullDense(device, absl::MakeSpan(b)).ok());
      CHECK(a == b);
      gradient->reset();
      cudaFree(d_grad);
    }
  }
}

// A push a shard refuses (stale: tau 1 > tau_max 0 on both shards) and one
// that fails to encode (a NaN in its last slice: int8 refuses it after the
// earlier slices were encoded) leave the device residual bit for bit as the
// last accepted push left it; the next accepted push then lands exactly as
// the host path's, whose residual is transactional too.
TEST_CASE("a refused device push leaves the device residual as it was") {
  if (cuda::UsableDeviceCount() == 0) {
    TAUPS_SKIP("no CUDA device");
  }
  InProcessCluster cluster(2);
  // 2 shards x 50,002 floats in 16,384-float slices: 4 slices per shard.
  auto client = cluster.Connect(0, /*slice_bytes=*/1 << 16);
  const uint64_t n = 100003;
  CompressionConfig config;
  config.push.codec = CodecKind::kInt8;
  config.error_feedback = true;
  StalenessConfig reject_stale;
  reject_stale.reject_above_tau_max = true;
  reject_stale.tau_max = 0;
  CreateCompressed(*client, {"host", "dev"}, n, config, reject_stale);
  float* d_grad = nullptr;
  REQUIRE(cudaMalloc(&d_grad, n * sizeof(float)) == cudaSuccess);
  auto gradient = cuda::DeviceGradient::Create(d_grad, n);
  REQUIRE(gradient.ok());
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto next = [&] {
    std::vector<float> g(n);
    for (float& x : g) x = normal(rng);
    REQUIRE(cudaMemcpy(d_grad, g.data(), n * sizeof(float),
                       cudaMemcpyHostToDevice) == cudaSuccess);
    return g;
  };
  auto residual = [&] {
    std::vector<float> r(n);
    REQUIRE((*gradient)->CopyResidual(r.data()).ok());
    return r;
  };
  // Bits, so that a NaN or -0 cannot compare equal by accident.
  auto bits = [](const std::vector<float>& v) {
    return std::vector<uint32_t>(reinterpret_cast<const uint32_t*>(v.data()),
                                 reinterpret_cast<const uint32_t*>(v.data()) + v.size());
  };

  // Accepted: both tables at version 1 on both shards.
  std::vector<float> g = next();
  REQUIRE(client->PushDense("host", g)->all_accepted());
  REQUIRE(client->PushDenseWith("dev", **gradient)->all_accepted());
  const std::vector<uint32_t> accepted = bits(residual());
  bool nonzero = false;
  for (uint32_t b : accepted) nonzero = nonzero || (b & 0x7fffffffu) != 0;
  REQUIRE(nonzero);  // int8 loses something: the residual is not all zero

  // Refused by both shards: computed on version 0, now 1.
  PullInfo stale;
  stale.shard_versions = {0, 0};
  stale.shard_touched = {true, true};
  g = next();
  auto refused_host = client->PushDense("host", g, &stale);
  auto refused_dev = client->PushDenseWith("dev", **gradient, &stale);
  REQUIRE(refused_host.ok());
  REQUIRE(refused_dev.ok());
  REQUIRE_FALSE(refused_host->shards[0].accepted);
  REQUIRE_FALSE(refused_dev->shards[0].accepted);
  REQUIRE_FALSE(refused_dev->shards[1].accepted);
  CHECK(bits(residual()) == accepted);

  // Fails to encode in its last slice: nothing is sent.
  g = next();
  g[n - 1] = std::nanf("");
  REQUIRE(cudaMemcpy(d_grad, g.data(), n * sizeof(float),
                     cudaMemcpyHostToDevice) == cudaSuccess);
  CHECK_FALSE(client->PushDense("host", g).ok());
  CHECK_FALSE(client->PushDenseWith("dev", **gradient).ok());
  CHECK(bits(residual()) == accepted);

  // The next accepted push adds the residual of the first one on both paths.
  std::vector<float> a(n), b(n);
  REQUIRE(client->PullDense("host", absl::MakeSpan(a)).ok());
  REQUIRE(client->PullDense("dev", absl::MakeSpan(b)).ok());
  g = next();
  REQUIRE(client->PushDense("host", g)->all_accepted());
  REQUIRE(client->PushDenseWith("dev", **gradient)->all_accepted());
  CHECK(bits(residual()) != accepted);
  REQUIRE(client->PullDense("host", absl::MakeSpan(a)).ok());
  REQUIRE(client->PullDense("dev", absl::MakeSpan(b)).ok());
  CHECK(bits(a) == bits(b));
  gradient->reset();
  cudaFree(d_grad);
}

}  // namespace
}  // namespace taups
