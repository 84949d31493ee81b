#include "taups/client.h"

#include <algorithm>

namespace taups {

bool PushResult::all_accepted() const {
  return std::all_of(shards.begin(), shards.end(), [](const ShardPushResult& s) {
    return !s.touched || s.accepted;
  });
}

uint64_t PushResult::max_tau() const {
  uint64_t tau = 0;
  for (const ShardPushResult& s : shards) {
    if (s.touched) tau = std::max(tau, s.tau);
  }
  return tau;
}

double PushResult::mean_tau() const {
  double sum = 0;
  int touched = 0;
  for (const ShardPushResult& s : shards) {
    if (!s.touched) continue;
    sum += static_cast<double>(s.tau);
    ++touched;
  }
  return touched == 0 ? 0.0 : sum / touched;
}

}  // namespace taups
