// A gradient in GPU memory pushed through Client::PushDenseWith (encoded on
// the device by cuda::DeviceGradient) lands on real shards exactly as the
// same gradient pushed from host memory, error feedback included.
//
// Without a usable CUDA device the test prints "SKIPPED: no CUDA device" and
// returns; CTest reports it as skipped.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <random>
#include <vector>

#include "cuda/cuda_device.h"
#include "cuda/device_gradient.h"
#include "tests/inproc_cluster.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

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
      for (const std::string& t : {host, device}) {
        TableConfig table = TableConfig::Dense(t, n);
        table.optimizer.learning_rate = 0.5f;
        REQUIRE(client->CreateTable(table).ok());
        REQUIRE(client->SetCompression(t, config).ok());
      }
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

}  // namespace
}  // namespace taups
