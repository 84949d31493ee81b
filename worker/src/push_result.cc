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

uint64_t PushResult::max_row_tau() const {
  uint64_t tau = 0;
  for (const ShardPushResult& s : shards) {
    if (s.touched && s.row_tau_rows > 0) tau = std::max(tau, s.row_tau_max);
  }
  return tau;
}

double PushResult::mean_row_tau() const {
  double sum = 0;
  uint64_t rows = 0;
  for (const ShardPushResult& s : shards) {
    if (!s.touched) continue;
    sum += s.row_tau_mean * static_cast<double>(s.row_tau_rows);
    rows += s.row_tau_rows;
  }
  return rows == 0 ? 0.0 : sum / static_cast<double>(rows);
}

}  // namespace taups
