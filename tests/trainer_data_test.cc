// IDX reader, Fashion-MNIST loader and the per-worker shard sampler.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "worker/trainer/fashion_mnist.h"
#include "worker/trainer/idx_reader.h"
#include "worker/trainer/shard_sampler.h"
#include "tests/test_skip.h"

namespace taups::trainer {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/taups_trainer_" +
         name;
}

std::vector<uint8_t> IdxBytes(uint8_t type, const std::vector<uint32_t>& dims,
                              const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    out.push_back(d >> 24);
    out.push_back(d >> 16);
    out.push_back(d >> 8);
    out.push_back(d);
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

void WritePlain(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void WriteGzip(const std::string& path, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
          static_cast<int>(bytes.size()));
  gzclose(f);
}

TEST_CASE("IDX reader reads plain and gzip files", "[trainer][data]") {
  // 3 images of 2x2, pixel values 0..11.
  std::vector<uint8_t> pixels(12);
  for (int i = 0; i < 12; ++i) pixels[i] = static_cast<uint8_t>(i * 20);
  const auto bytes = IdxBytes(0x08, {3, 2, 2}, pixels);
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    const std::string path = TempPath(gz ? "images.gz" : "images");
    gz ? WriteGzip(path, bytes) : WritePlain(path, bytes);
    auto array = ReadIdxUbyte(path, 3);
    REQUIRE(array.ok());
    CHECK(array->dims == std::vector<uint32_t>{3, 2, 2});
    CHECK(array->data == pixels);
    // Asking for another rank is an error.
    CHECK(absl::IsInvalidArgument(ReadIdxUbyte(path, 1).status()));
    std::remove(path.c_str());
  }
}

TEST_CASE("IDX reader rejects malformed files", "[trainer][data]") {
  const std::string path = TempPath("bad.idx");
  SECTION("missing file") {
    CHECK(absl::IsNotFound(ReadIdxUbyte(TempPath("does_not_exist"), 1).status()));
  }
  SECTION("wrong type byte (int32 data)") {
    WritePlain(path, IdxBytes(0x0C, {2}, {0, 0, 0, 1, 0, 0, 0, 2}));
    CHECK(absl::IsInvalidArgument(ReadIdxUbyte(path, 1).status()));
  }
  SECTION("nonzero leading magic bytes") {
    auto bytes = IdxBytes(0x08, {2}, {1, 2});
    bytes[0] = 1;
    WritePlain(path, bytes);
    CHECK(absl::IsInvalidArgument(ReadIdxUbyte(path, 1).status()));
  }
  SECTION("zero dimension") {
    WritePlain(path, IdxBytes(0x08, {0}, {}));
    CHECK(absl::IsInvalidArgument(ReadIdxUbyte(path, 1).status()));
  }
  SECTION("truncated payload") {
    WriteGzip(path, IdxBytes(0x08, {5}, {1, 2, 3}));
    auto r = ReadIdxUbyte(path, 1);
    CHECK(absl::IsDataLoss(r.status()));
    CHECK(r.status().message().find("truncated") != std::string::npos);
  }
  SECTION("trailing bytes") {
    WritePlain(path, IdxBytes(0x08, {2}, {1, 2, 3}));
    CHECK(absl::IsDataLoss(ReadIdxUbyte(path, 1).status()));
  }
  SECTION("truncated header") {
    WritePlain(path, {0, 0, 8, 1, 0, 0});
    CHECK(absl::IsDataLoss(ReadIdxUbyte(path, 1).status()));
  }
  SECTION("huge dimensions") {
    WritePlain(path, IdxBytes(0x08, {65536, 65536, 2}, {}));
    CHECK(absl::IsInvalidArgument(ReadIdxUbyte(path, 3).status()));
  }
  std::remove(path.c_str());
}

TEST_CASE("Image dataset scales pixels and validates labels", "[trainer][data]") {
  const std::string images = TempPath("ds_images");
  const std::string labels = TempPath("ds_labels");
  WritePlain(images, IdxBytes(0x08, {2, 1, 2}, {0, 255, 51, 102}));
  SECTION("valid") {
    WritePlain(labels, IdxBytes(0x08, {2}, {3, 9}));
    auto set = LoadIdxImageDataset(images, labels, 10);
    REQUIRE(set.ok());
    CHECK(set->num_examples == 2);
    CHECK(set->feature_dim() == 2);
    CHECK(set->pixels == std::vector<float>{0.0f, 1.0f, 0.2f, 0.4f});
    CHECK(set->features(1)[0] == 0.2f);
    CHECK(set->labels == std::vector<uint8_t>{3, 9});
  }
  SECTION("label out of range") {
    WritePlain(labels, IdxBytes(0x08, {2}, {3, 10}));
    CHECK(absl::IsInvalidArgument(LoadIdxImageDataset(images, labels, 10).status()));
  }
  SECTION("count mismatch") {
    WritePlain(labels, IdxBytes(0x08, {3}, {1, 2, 3}));
    CHECK(absl::IsInvalidArgument(LoadIdxImageDataset(images, labels, 10).status()));
  }
  std::remove(images.c_str());
  std::remove(labels.c_str());
}

TEST_CASE("Pixel standardisation gives zero mean and unit variance",
          "[trainer][data]") {
  ImageDataset set;
  set.num_examples = 2;
  set.rows = 1;
  set.cols = 2;
  set.pixels = {0.0f, 0.5f, 1.0f, 0.5f};  // mean 0.5, stddev sqrt(0.125)
  const PixelMoments m = ComputePixelMoments(set);
  CHECK(m.mean == Approx(0.5));
  CHECK(m.stddev == Approx(std::sqrt(0.125)));
  StandardizePixels(m, set);
  CHECK(set.pixels[0] == Approx(-std::sqrt(2.0)));
  CHECK(set.pixels[1] == Approx(0.0).margin(1e-7));
  CHECK(set.pixels[2] == Approx(std::sqrt(2.0)));
  // A constant image set keeps stddev 1 (no division by zero).
  ImageDataset flat;
  flat.pixels = {0.3f, 0.3f};
  CHECK(ComputePixelMoments(flat).stddev == 1.0f);
}

TEST_CASE("Real Fashion-MNIST files load with the documented sizes",
          "[trainer][data][dataset]") {
  auto train = LoadFashionMnist(kDefaultFashionMnistDir, DatasetSplit::kTrain);
  if (absl::IsNotFound(train.status())) {
    TAUPS_SKIP(kDefaultFashionMnistDir
               << " not present (install dataset-fashion-mnist)");
  }
  REQUIRE(train.ok());
  CHECK(train->num_examples == 60000);
  CHECK(train->feature_dim() == 784);
  auto test = LoadFashionMnist(kDefaultFashionMnistDir, DatasetSplit::kTest);
  REQUIRE(test.ok());
  CHECK(test->num_examples == 10000);
  // Balanced classes: 1000 test examples each.
  std::vector<int> counts(10, 0);
  for (uint8_t y : test->labels) ++counts[y];
  for (int c : counts) CHECK(c == 1000);
  float lo = 1, hi = 0;
  for (float p : test->pixels) {
    lo = std::min(lo, p);
    hi = std::max(hi, p);
  }
  CHECK(lo == 0.0f);
  CHECK(hi == 1.0f);
}

TEST_CASE("Shard sampler partitions examples and reshuffles per epoch",
          "[trainer][data]") {
  constexpr int kExamples = 103;
  std::vector<std::vector<int>> epochs_by_worker;
  std::set<int> seen_all;
  for (uint32_t w = 0; w < 3; ++w) {
    auto sampler = ShardSampler::Create(kExamples, w, 3, /*seed=*/5);
    REQUIRE(sampler.ok());
    const int shard = sampler->shard_size();
    CHECK(shard == (kExamples - static_cast<int>(w) + 2) / 3);
    std::vector<int> epoch0, batch;
    // One epoch in batches of 4 (the last batch spills into epoch 1).
    while (static_cast<int>(epoch0.size()) < shard) {
      sampler->NextBatch(4, batch);
      REQUIRE(batch.size() == 4);
      epoch0.insert(epoch0.end(), batch.begin(), batch.end());
    }
    std::vector<int> first(epoch0.begin(), epoch0.begin() + shard);
    std::set<int> unique(first.begin(), first.end());
    CHECK(static_cast<int>(unique.size()) == shard);  // each once per epoch
    for (int i : first) {
      CHECK(i % 3 == static_cast<int>(w));
      CHECK(seen_all.insert(i).second);  // disjoint across workers
    }
    // Same seed: same order. The next epoch differs in order.
    auto again = ShardSampler::Create(kExamples, w, 3, 5);
    std::vector<int> replay;
    again->NextBatch(shard, replay);
    CHECK(replay == first);
    std::vector<int> next_epoch;
    again->NextBatch(shard, next_epoch);
    CHECK(next_epoch != first);
    CHECK(std::set<int>(next_epoch.begin(), next_epoch.end()) == unique);
    CHECK(again->epoch() == 1);
  }
  CHECK(static_cast<int>(seen_all.size()) == kExamples);
  CHECK(absl::IsInvalidArgument(ShardSampler::Create(2, 3, 4, 1).status()));
  CHECK(absl::IsInvalidArgument(ShardSampler::Create(10, 4, 4, 1).status()));
}

}  // namespace
}  // namespace taups::trainer
