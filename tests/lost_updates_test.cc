// LostUpdates: what a shard restart took back, counted from the versions a
// worker saw before and the first one it saw after.
#include <catch2/catch.hpp>

#include "worker/src/lost_updates.h"

namespace taups {
namespace {

TEST_CASE("a restart counts how far each table's first answer went back") {
  LostUpdates lost(2);
  lost.Saw(1, "w", 1500);
  lost.Saw(1, "w", 1528);
  lost.Saw(1, "e", 90);
  lost.Saw(0, "w", 700);  // another shard: untouched by shard 1's restart
  lost.Restarted(1);
  CHECK(lost.ByShard() == std::vector<uint64_t>{0, 0});  // no answer yet
  lost.Saw(1, "w", 1200);
  CHECK(lost.ByShard() == std::vector<uint64_t>{0, 328});
  lost.Saw(1, "w", 1201);  // later answers of the same incarnation: not again
  lost.Saw(1, "e", 95);    // ahead of what this worker saw: nothing lost
  CHECK(lost.ByShard() == std::vector<uint64_t>{0, 328});
  lost.Saw(1, "w", 0);  // an answer without a version is ignored
  CHECK(lost.ByShard() == std::vector<uint64_t>{0, 328});
}

TEST_CASE("a second restart before a table's first answer keeps the older version") {
  LostUpdates lost(1);
  lost.Saw(0, "w", 40);
  lost.Restarted(0);
  lost.Restarted(0);  // restarted again before "w" was answered
  lost.Saw(0, "w", 30);
  CHECK(lost.ByShard() == std::vector<uint64_t>{10});
  // A later restart counts from what this incarnation answered.
  lost.Saw(0, "w", 35);
  lost.Restarted(0);
  lost.Saw(0, "w", 31);
  CHECK(lost.ByShard() == std::vector<uint64_t>{14});
}

}  // namespace
}  // namespace taups
