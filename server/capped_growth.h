// Growing per-row storage without overshooting a row limit.
//
// std::vector doubles its capacity as it grows, so a stripe limited to n
// rows could hold capacity for almost 2n. GrowCapped grows geometrically
// too, but never reserves past `limit` elements (0 = no limit), so storage
// for a bounded stripe never exceeds what its limit allows.
//
// Pure function of its arguments; thread-compatible.
#ifndef TAUPS_SERVER_CAPPED_GROWTH_H_
#define TAUPS_SERVER_CAPPED_GROWTH_H_

#include <algorithm>
#include <cstddef>
#include <vector>

namespace taups {

// Resizes `v` to `size` elements (>= v.size()), new ones value-initialized.
template <typename T>
void GrowCapped(std::vector<T>& v, size_t size, size_t limit) {
  if (size > v.capacity()) {
    size_t capacity = std::max<size_t>(size, std::max<size_t>(16, 2 * v.capacity()));
    if (limit > 0) capacity = std::max(size, std::min(capacity, limit));
    v.reserve(capacity);
  }
  v.resize(size);
}

}  // namespace taups

#endif  // TAUPS_SERVER_CAPPED_GROWTH_H_
