// The smallest useful training loop on tauPS: least-squares regression of
// y = w* . x, with w kept in a dense table on the parameter server.
//
//   minimal_trainer --server=127.0.0.1:7000[,127.0.0.1:7001 ...]
//
// Prints the loss before and after; exits 0 when training cut it at least
// tenfold.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "taups/client.h"

int main(int argc, char** argv) {
  std::vector<std::string> servers;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--server=", 9) == 0) {
      std::string list = argv[i] + 9;
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        servers.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    }
  }
  if (servers.empty()) {
    std::fprintf(stderr, "usage: minimal_trainer --server=host:port[,...]\n");
    return 2;
  }

  taups::ClientOptions options;
  options.servers = servers;
  auto client = taups::Client::Connect(options);
  if (!client.ok()) {
    std::fprintf(stderr, "connect: %s\n", client.status().ToString().c_str());
    return 1;
  }

  constexpr int kDim = 32, kBatch = 64, kSteps = 300;
  taups::TableConfig config = taups::TableConfig::Dense("minimal_w", kDim);
  config.optimizer.learning_rate = 0.05f;
  if (absl::Status s = (*client)->CreateTable(config); !s.ok()) {
    std::fprintf(stderr, "create: %s\n", s.ToString().c_str());
    return 1;
  }

  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<float> truth(kDim);
  for (float& t : truth) t = normal(rng);

  std::vector<float> w(kDim), grad(kDim), x(kDim);
  auto batch_loss = [&](bool with_gradient) {
    std::fill(grad.begin(), grad.end(), 0.0f);
    double loss = 0;
    for (int i = 0; i < kBatch; ++i) {
      float pred = 0, target = 0;
      for (int j = 0; j < kDim; ++j) {
        x[j] = normal(rng);
        pred += w[j] * x[j];
        target += truth[j] * x[j];
      }
      const float err = pred - target;
      loss += err * err / kBatch;
      if (with_gradient) {
        for (int j = 0; j < kDim; ++j) grad[j] += 2 * err * x[j] / kBatch;
      }
    }
    return loss;
  };

  double first = 0, last = 0;
  for (int step = 0; step < kSteps; ++step) {
    auto pulled = (*client)->PullDense("minimal_w", absl::MakeSpan(w));
    if (!pulled.ok()) {
      std::fprintf(stderr, "pull: %s\n", pulled.status().ToString().c_str());
      return 1;
    }
    const double loss = batch_loss(true);
    if (step == 0) first = loss;
    last = loss;
    auto pushed = (*client)->PushDense("minimal_w", grad);
    if (!pushed.ok()) {
      std::fprintf(stderr, "push: %s\n", pushed.status().ToString().c_str());
      return 1;
    }
    (*client)->Clock();
  }
  std::printf("loss %.4f -> %.4f over %d steps\n", first, last, kSteps);
  return last * 10 < first ? 0 : 1;
}
