#include "server/lent_values.h"

#include <atomic>

namespace taups {
namespace {

std::atomic<int64_t> displaced_lent_bytes{0};

}  // namespace

size_t DisplacedLentBytes() {
  const int64_t bytes = displaced_lent_bytes.load(std::memory_order_relaxed);
  return bytes > 0 ? static_cast<size_t>(bytes) : 0;
}

void CountDisplacedLentBytes(int64_t bytes) {
  displaced_lent_bytes.fetch_add(bytes, std::memory_order_relaxed);
}

}  // namespace taups
