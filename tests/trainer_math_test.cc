// MathBackend: CPU GEMM against a naive reference, argument checking, device
// selection, and CPU vs CUDA agreement (skipped without a CUDA device).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "worker/trainer/cpu_math_backend.h"
#include "worker/trainer/deterministic_rng.h"
#include "worker/trainer/math_backend.h"
#include "tests/test_skip.h"

namespace taups::trainer {
namespace {

struct GemmCase {
  Transpose ta, tb;
  int m, n, k;
  int pad;  // extra floats per row beyond the row length
  float alpha, beta;
};

// Row-major matrix with leading dimension ld, filled with U(-1, 1).
struct Matrix {
  int rows, cols, ld;
  std::vector<float> data;
  Matrix(int r, int c, int pad, Rng& rng)
      : rows(r), cols(c), ld(c + pad), data(static_cast<size_t>(r) * (c + pad)) {
    for (float& x : data) x = rng.UniformSymmetric(1.0f);
  }
};

// Double-precision reference: C = alpha op(A) op(B) + beta C.
std::vector<double> Reference(const GemmCase& g, const Matrix& a,
                              const Matrix& b, const Matrix& c) {
  std::vector<double> out(static_cast<size_t>(g.m) * g.n);
  for (int i = 0; i < g.m; ++i) {
    for (int j = 0; j < g.n; ++j) {
      double sum = 0.0;
      for (int p = 0; p < g.k; ++p) {
        const double av = g.ta == Transpose::kYes ? a.data[p * a.ld + i]
                                                  : a.data[i * a.ld + p];
        const double bv = g.tb == Transpose::kYes ? b.data[j * b.ld + p]
                                                  : b.data[p * b.ld + j];
        sum += av * bv;
      }
      const double old = g.beta == 0.0f ? 0.0 : g.beta * c.data[i * c.ld + j];
      out[i * g.n + j] = g.alpha * sum + old;
    }
  }
  return out;
}

struct Operands {
  Matrix a, b, c;
  Operands(const GemmCase& g, Rng& rng)
      : a(g.ta == Transpose::kYes ? g.k : g.m, g.ta == Transpose::kYes ? g.m : g.k,
          g.pad, rng),
        b(g.tb == Transpose::kYes ? g.n : g.k, g.tb == Transpose::kYes ? g.k : g.n,
          g.pad, rng),
        c(g.m, g.n, g.pad, rng) {}
};

absl::Status Run(MathBackend& backend, const GemmCase& g, const Operands& in,
                 std::vector<float>& c) {
  c = in.c.data;
  return backend.Sgemm(g.ta, g.tb, g.m, g.n, g.k, g.alpha, in.a.data.data(),
                       in.a.ld, in.b.data.data(), in.b.ld, g.beta, c.data(),
                       in.c.ld);
}

std::vector<GemmCase> Cases() {
  std::vector<GemmCase> cases;
  for (Transpose ta : {Transpose::kNo, Transpose::kYes}) {
    for (Transpose tb : {Transpose::kNo, Transpose::kYes}) {
      cases.push_back({ta, tb, 7, 5, 3, 0, 1.0f, 0.0f});
      cases.push_back({ta, tb, 33, 17, 65, 3, 0.5f, 2.0f});
      cases.push_back({ta, tb, 64, 128, 784, 0, 1.0f, 1.0f});
      cases.push_back({ta, tb, 1, 1, 1, 1, -1.0f, 0.25f});
    }
  }
  return cases;
}

TEST_CASE("CPU Sgemm matches a double-precision reference", "[trainer][math]") {
  CpuMathBackend cpu;
  Rng rng(42);
  for (const GemmCase& g : Cases()) {
    CAPTURE(static_cast<int>(g.ta), static_cast<int>(g.tb), g.m, g.n, g.k,
            g.pad, g.alpha, g.beta);
    Operands in(g, rng);
    std::vector<float> c;
    REQUIRE(Run(cpu, g, in, c).ok());
    const std::vector<double> want = Reference(g, in.a, in.b, in.c);
    for (int i = 0; i < g.m; ++i) {
      for (int j = 0; j < g.n; ++j) {
        REQUIRE(c[i * in.c.ld + j] ==
                Approx(want[i * g.n + j]).margin(1e-4 * std::sqrt(g.k)));
      }
      // Padding between rows is never written.
      for (int j = g.n; j < in.c.ld; ++j) {
        REQUIRE(c[i * in.c.ld + j] == in.c.data[i * in.c.ld + j]);
      }
    }
  }
}

TEST_CASE("CPU Sgemm with beta 0 ignores NaN in C; k 0 scales C",
          "[trainer][math]") {
  CpuMathBackend cpu;
  const float a[2] = {1, 2}, b[2] = {3, 4};
  float c[4];
  std::fill(c, c + 4, std::numeric_limits<float>::quiet_NaN());
  // (2x1)(1x2) outer product.
  REQUIRE(cpu.Sgemm(Transpose::kNo, Transpose::kNo, 2, 2, 1, 1.0f, a, 1, b, 2,
                    0.0f, c, 2)
              .ok());
  CHECK(c[0] == 3.0f);
  CHECK(c[1] == 4.0f);
  CHECK(c[2] == 6.0f);
  CHECK(c[3] == 8.0f);
  REQUIRE(cpu.Sgemm(Transpose::kNo, Transpose::kNo, 2, 2, 0, 1.0f, a, 1, b, 2,
                    0.5f, c, 2)
              .ok());
  CHECK(c[0] == 1.5f);
  CHECK(c[3] == 4.0f);
}

TEST_CASE("Sgemm rejects bad arguments", "[trainer][math]") {
  CpuMathBackend cpu;
  float buf[16] = {};
  CHECK(absl::IsInvalidArgument(cpu.Sgemm(Transpose::kNo, Transpose::kNo, -1,
                                          2, 2, 1, buf, 2, buf, 2, 0, buf, 2)));
  // lda < k for a non-transposed A.
  CHECK(absl::IsInvalidArgument(cpu.Sgemm(Transpose::kNo, Transpose::kNo, 2, 2,
                                          3, 1, buf, 2, buf, 2, 0, buf, 2)));
  // ldc < n.
  CHECK(absl::IsInvalidArgument(cpu.Sgemm(Transpose::kNo, Transpose::kNo, 2, 3,
                                          2, 1, buf, 2, buf, 3, 0, buf, 2)));
  CHECK(absl::IsInvalidArgument(cpu.Sgemm(Transpose::kNo, Transpose::kNo, 2, 2,
                                          2, 1, nullptr, 2, buf, 2, 0, buf, 2)));
}

TEST_CASE("Device flag parsing and backend selection", "[trainer][math]") {
  CHECK(*ParseDeviceKind("auto") == DeviceKind::kAuto);
  CHECK(*ParseDeviceKind("cpu") == DeviceKind::kCpu);
  CHECK(*ParseDeviceKind("cuda") == DeviceKind::kCuda);
  CHECK(absl::IsInvalidArgument(ParseDeviceKind("gpu").status()));

  auto cpu = CreateMathBackend(DeviceKind::kCpu);
  REQUIRE(cpu.ok());
  CHECK((*cpu)->name() == "cpu");

  auto automatic = CreateMathBackend(DeviceKind::kAuto);
  REQUIRE(automatic.ok());
  CHECK((*automatic)->name() == (CudaDeviceAvailable() ? "cuda" : "cpu"));

  auto cuda = CreateMathBackend(DeviceKind::kCuda);
  if (CudaDeviceAvailable()) {
    REQUIRE(cuda.ok());
    CHECK((*cuda)->name() == "cuda");
  } else {
    REQUIRE(absl::IsFailedPrecondition(cuda.status()));
    CHECK(cuda.status().message().find("--device=cpu") != std::string::npos);
  }
}

TEST_CASE("CPU and CUDA Sgemm agree", "[trainer][math][cuda]") {
  if (!CudaDeviceAvailable()) {
    TAUPS_SKIP("no usable CUDA device (or no CUDA in this build); "
               "CPU/CUDA GEMM agreement not checked");
  }
  auto cuda = CreateMathBackend(DeviceKind::kCuda);
  REQUIRE(cuda.ok());
  INFO("device: " << (*cuda)->description());
  CpuMathBackend cpu;
  Rng rng(7);
  // Twice over the cases, so the second round reuses the device buffers.
  for (int round = 0; round < 2; ++round) {
    for (const GemmCase& g : Cases()) {
      CAPTURE(round, static_cast<int>(g.ta), static_cast<int>(g.tb), g.m, g.n,
              g.k, g.pad, g.alpha, g.beta);
      Operands in(g, rng);
      std::vector<float> c_cpu, c_gpu;
      REQUIRE(Run(cpu, g, in, c_cpu).ok());
      REQUIRE(Run(**cuda, g, in, c_gpu).ok());
      for (size_t i = 0; i < c_cpu.size(); ++i) {
        REQUIRE(c_gpu[i] == Approx(c_cpu[i]).margin(1e-4 * std::sqrt(g.k)));
      }
    }
  }
}

}  // namespace
}  // namespace taups::trainer
