// AnswerBuffers: the exact sizes asked for, reuse of kept mappings, the
// bound on what is kept, and buffers given back from several threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "server/answer_buffers.h"

namespace taups {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST_CASE("a buffer holds exactly the bytes asked for, writable") {
  auto pool = AnswerBuffers::Create(8 * kMiB);
  for (size_t bytes : {size_t{1}, size_t{4095}, size_t{4096}, 3 * kMiB + 7}) {
    std::unique_ptr<AnswerBuffers::Buffer> buffer = pool->Take(bytes);
    REQUIRE(buffer != nullptr);
    REQUIRE(buffer->bytes().size() == bytes);
    std::memset(buffer->bytes().data(), 0x5a, bytes);
    CHECK(buffer->bytes()[bytes - 1] == 0x5a);
  }
  CHECK(pool->Take(0) == nullptr);
}

TEST_CASE("a freed buffer is reused for the next answer of its size") {
  auto pool = AnswerBuffers::Create(8 * kMiB);
  char* first = nullptr;
  {
    auto buffer = pool->Take(4 * kMiB);
    first = buffer->bytes().data();
    CHECK(pool->kept_bytes() == 0);
    CHECK(pool->lent_bytes() == 4 * kMiB);
  }
  CHECK(pool->kept_bytes() == 4 * kMiB);
  CHECK(pool->lent_bytes() == 0);
  CHECK(pool->mappings_made() == 1);
  for (int i = 0; i < 10; ++i) {
    auto again = pool->Take(4 * kMiB - 100);
    CHECK(again->bytes().data() == first);
    CHECK(pool->kept_bytes() == 0);
    CHECK(pool->lent_bytes() == 4 * kMiB);  // the capacity, not the request
  }
  CHECK(pool->mappings_made() == 1);
  // Too small for a request of more than its capacity, and too large (more
  // than twice) for a small one: both get a mapping of their own.
  auto larger = pool->Take(4 * kMiB + 1);
  CHECK(larger->bytes().data() != first);
  auto smaller = pool->Take(kMiB);
  CHECK(smaller->bytes().data() != first);
  CHECK(pool->mappings_made() == 3);
}

TEST_CASE("no more than keep_bytes are kept; the newest stay") {
  auto pool = AnswerBuffers::Create(8 * kMiB);
  std::vector<std::unique_ptr<AnswerBuffers::Buffer>> out;
  for (int i = 0; i < 4; ++i) out.push_back(pool->Take(3 * kMiB));
  char* newest = out.back()->bytes().data();
  char* second_newest = out[2]->bytes().data();
  for (auto& buffer : out) buffer.reset();  // oldest first: two unmapped
  CHECK(pool->kept_bytes() == 6 * kMiB);
  auto a = pool->Take(3 * kMiB);
  auto b = pool->Take(3 * kMiB);
  const std::vector<char*> reused = {a->bytes().data(), b->bytes().data()};
  CHECK(std::count(reused.begin(), reused.end(), newest) == 1);
  CHECK(std::count(reused.begin(), reused.end(), second_newest) == 1);
  // A buffer larger than keep_bytes is never kept.
  { auto huge = pool->Take(9 * kMiB); }
  CHECK(pool->kept_bytes() == 0);
}

TEST_CASE("buffers taken and given back on several threads") {
  auto pool = AnswerBuffers::Create(16 * kMiB);
  std::vector<std::thread> threads;
  std::vector<int> wrong(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        const size_t bytes = (size_t{64} << 10) * (1 + (i + t) % 8);
        auto buffer = pool->Take(bytes);
        std::memset(buffer->bytes().data(), t, bytes);
        for (size_t k = 0; k < bytes; k += 4096) {
          if (buffer->bytes()[k] != static_cast<char>(t)) ++wrong[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) CHECK(wrong[t] == 0);
  CHECK(pool->kept_bytes() <= 16 * kMiB);
  CHECK(pool->lent_bytes() == 0);
}

TEST_CASE("a buffer outlives the pool that gave it") {
  auto pool = AnswerBuffers::Create(8 * kMiB);
  std::unique_ptr<AnswerBuffers::Buffer> kept = pool->Take(kMiB);
  std::weak_ptr<AnswerBuffers> watch = pool;
  pool.reset();
  CHECK_FALSE(watch.expired());
  std::memset(kept->bytes().data(), 1, kMiB);
  kept.reset();
  CHECK(watch.expired());
}

}  // namespace
}  // namespace taups
