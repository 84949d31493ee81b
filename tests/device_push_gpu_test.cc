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
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_device.h"
#include "cuda/device_gradient.h"
#include "tests/inproc_cluster.h"
#include "tests/test_skip.h"

namespace taups {
namespace {

// What every case sets up, made once a usable CUDA device is known (the
// cases skip before constructing it): two in-process shards, a client
// cutting pushes into 64 KiB slices (100,003 floats: 4 slices per shard), a
// device buffer of kN floats with its cuda::DeviceGradient, and a seeded
// N(0, 1) source of gradients. Frees the buffer when it dies.
class DevicePush {
 public:
  static constexpr uint64_t kN = 100003;

  DevicePush() : cluster_(2), client_(cluster_.Connect(0, /*slice_bytes=*/1 << 16)) {
    REQUIRE(cudaMalloc(&d_grad_, kN * sizeof(float)) == cudaSuccess);
  }
  ~DevicePush() {
    gradient_.reset();
    cudaFree(d_grad_);
  }

  Client& client() { return *client_; }
  cuda::DeviceGradient& gradient() { return *gradient_; }

  // A new DeviceGradient over the buffer (its residual zero) and the
  // gradients drawn from `seed` again.
  void Restart(uint64_t seed) {
    gradient_.reset();
    auto gradient = cuda::DeviceGradient::Create(d_grad_, kN);
    REQUIRE(gradient.ok());
    gradient_ = *std::move(gradient);
    rng_.seed(seed);
  }

  // Dense tables `names` of kN floats (SGD at 0.5, `staleness`), each
  // pushed with `config`.
  void CreateTables(const std::vector<std::string>& names,
                    const CompressionConfig& config,
                    const StalenessConfig& staleness = {}) {
    for (const std::string& t : names) {
      TableConfig table = TableConfig::Dense(t, kN);
      table.optimizer.learning_rate = 0.5f;
      table.staleness = staleness;
      REQUIRE(client_->CreateTable(table).ok());
      REQUIRE(client_->SetCompression(t, config).ok());
    }
  }

  // The next gradient, also copied into the device buffer.
  std::vector<float> Next() {
    std::vector<float> g(kN);
    for (float& x : g) x = normal_(rng_);
    Upload(g);
    return g;
  }
  void Upload(const std::vector<float>& g) {
    REQUIRE(cudaMemcpy(d_grad_, g.data(), kN * sizeof(float),
                       cudaMemcpyHostToDevice) == cudaSuccess);
  }

  std::vector<float> Pull(const std::string& table) {
    std::vector<float> values(kN);
    REQUIRE(client_->PullDense(table, absl::MakeSpan(values)).ok());
    return values;
  }

  std::vector<float> Residual() const {
    std::vector<float> r(kN);
    REQUIRE(gradient_->CopyResidual(r.data()).ok());
    return r;
  }

 private:
  InProcessCluster cluster_;
  std::unique_ptr<Client> client_;
  float* d_grad_ = nullptr;
  std::unique_ptr<cuda::DeviceGradient> gradient_;
  std::mt19937_64 rng_;
  std::normal_distribution<float> normal_{0.0f, 1.0f};
};

// Bits, so that a NaN or -0 cannot compare equal by accident.
std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  std::memcpy(bits.data(), v.data(), v.size() * sizeof(float));
  return bits;
}

TEST_CASE("a device gradient pushes exactly like the host one") {
  if (cuda::UsableDeviceCount() == 0) {
    TAUPS_SKIP("no CUDA device");
  }
  DevicePush f;
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
      f.CreateTables({host, device}, config);
      f.Restart(/*seed=*/5);
      for (int push = 0; push < 3; ++push) {
        const std::vector<float> g = f.Next();
        REQUIRE(f.client().PushDense(host, g).ok());
        auto pushed = f.client().PushDenseWith(device, f.gradient());
        REQUIRE(pushed.ok());
        REQUIRE(pushed->all_accepted());
      }
      CHECK(f.Pull(host) == f.Pull(device));
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
  DevicePush f;
  CompressionConfig config;
  config.push.codec = CodecKind::kInt8;
  config.error_feedback = true;
  StalenessConfig reject_stale;
  reject_stale.reject_above_tau_max = true;
  reject_stale.tau_max = 0;
  f.CreateTables({"host", "dev"}, config, reject_stale);
  f.Restart(/*seed=*/11);
  Client& client = f.client();

  // Accepted: both tables at version 1 on both shards.
  std::vector<float> g = f.Next();
  REQUIRE(client.PushDense("host", g)->all_accepted());
  REQUIRE(client.PushDenseWith("dev", f.gradient())->all_accepted());
  const std::vector<uint32_t> accepted = Bits(f.Residual());
  bool nonzero = false;
  for (uint32_t b : accepted) nonzero = nonzero || (b & 0x7fffffffu) != 0;
  REQUIRE(nonzero);  // int8 loses something: the residual is not all zero

  // Refused by both shards: computed on version 0, now 1.
  PullInfo stale;
  stale.shard_versions = {0, 0};
  stale.shard_touched = {true, true};
  g = f.Next();
  auto refused_host = client.PushDense("host", g, &stale);
  auto refused_dev = client.PushDenseWith("dev", f.gradient(), &stale);
  REQUIRE(refused_host.ok());
  REQUIRE(refused_dev.ok());
  REQUIRE_FALSE(refused_host->shards[0].accepted);
  REQUIRE_FALSE(refused_dev->shards[0].accepted);
  REQUIRE_FALSE(refused_dev->shards[1].accepted);
  CHECK(Bits(f.Residual()) == accepted);

  // Fails to encode in its last slice: nothing is sent.
  g = f.Next();
  g[DevicePush::kN - 1] = std::nanf("");
  f.Upload(g);
  CHECK_FALSE(client.PushDense("host", g).ok());
  CHECK_FALSE(client.PushDenseWith("dev", f.gradient()).ok());
  CHECK(Bits(f.Residual()) == accepted);

  // The next accepted push adds the residual of the first one on both paths
  // (each pushed after a pull of the table's current values).
  f.Pull("host");
  f.Pull("dev");
  g = f.Next();
  REQUIRE(client.PushDense("host", g)->all_accepted());
  REQUIRE(client.PushDenseWith("dev", f.gradient())->all_accepted());
  CHECK(Bits(f.Residual()) != accepted);
  CHECK(Bits(f.Pull("host")) == Bits(f.Pull("dev")));
}

}  // namespace
}  // namespace taups
