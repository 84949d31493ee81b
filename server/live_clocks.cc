#include "server/live_clocks.h"

#include <algorithm>
#include <limits>

namespace taups {

uint64_t LiveClocks::ClockOf(uint32_t worker) const {
  auto it = clocks_.find(worker);
  return it == clocks_.end() ? 0 : it->second;
}

void LiveClocks::SetLive(const std::vector<uint32_t>& live) {
  live_ = absl::flat_hash_set<uint32_t>(live.begin(), live.end());
  Recount();
}

uint64_t LiveClocks::Raise(uint32_t worker, uint64_t clock) {
  auto [it, added] = clocks_.try_emplace(worker, 0);
  const uint64_t before = it->second;
  if (clock <= before) return before;
  it->second = clock;
  if (live_.contains(worker)) {
    Uncount(before);
    ++live_per_clock_[clock];
  }
  return clock;
}

void LiveClocks::ReplaceClocks(const std::map<uint32_t, uint64_t>& clocks) {
  clocks_ = absl::flat_hash_map<uint32_t, uint64_t>(clocks.begin(),
                                                     clocks.end());
  Recount();
}

uint64_t LiveClocks::MinLive(int64_t excluding) const {
  auto it = live_per_clock_.begin();
  if (it == live_per_clock_.end()) return std::numeric_limits<uint64_t>::max();
  // Only when the excluded worker is the one live worker at the smallest
  // clock does the answer move to the next clock.
  if (excluding >= 0 && excluding <= std::numeric_limits<uint32_t>::max()) {
    const uint32_t worker = static_cast<uint32_t>(excluding);
    if (it->second == 1 && live_.contains(worker) &&
        ClockOf(worker) == it->first) {
      ++it;
      if (it == live_per_clock_.end()) {
        return std::numeric_limits<uint64_t>::max();
      }
    }
  }
  return it->first;
}

std::vector<uint32_t> LiveClocks::LiveAt(uint64_t clock) const {
  std::vector<uint32_t> at;
  for (uint32_t w : live_) {
    if (ClockOf(w) == clock) at.push_back(w);
  }
  std::sort(at.begin(), at.end());
  return at;
}

void LiveClocks::Recount() {
  live_per_clock_.clear();
  for (uint32_t w : live_) ++live_per_clock_[ClockOf(w)];
}

void LiveClocks::Uncount(uint64_t clock) {
  auto it = live_per_clock_.find(clock);
  if (--it->second == 0) live_per_clock_.erase(it);
}

}  // namespace taups
