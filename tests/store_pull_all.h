// Test helper: every value of a dense table of a ParameterStore, pulled
// in one call (which must succeed).
#ifndef TAUPS_TESTS_STORE_PULL_ALL_H_
#define TAUPS_TESTS_STORE_PULL_ALL_H_

#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "server/parameter_store.h"

namespace taups {

inline std::vector<float> PullAll(ParameterStore& store, uint64_t n,
                                  const std::string& table = "w") {
  std::vector<float> out(n);
  REQUIRE(store.PullDense(table, 0, absl::MakeSpan(out)).ok());
  return out;
}

}  // namespace taups

#endif  // TAUPS_TESTS_STORE_PULL_ALL_H_
