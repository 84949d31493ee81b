// All-or-nothing and exactly-once pushes over a real gRPC server: a k-slice
// push with one bad slice at any position, for every codec, changes nothing;
// the same push sent again (same origin) is answered, not applied again.
#include <catch2/catch.hpp>
#include <grpcpp/grpcpp.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/codec.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "tests/inproc_cluster.h"

namespace taups {
namespace {

constexpr uint64_t kN = 4096;
constexpr uint32_t kSlices = 4;

std::vector<float> RandomGradient(uint64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(n);
  for (float& v : g) v = normal(rng);
  return g;
}

// The wire bytes of values [begin, end) under `codec` (raw float32 for kNone).
std::string SliceBytes(const std::vector<float>& g, uint64_t begin, uint64_t end,
                       CodecKind codec) {
  const absl::Span<const float> part(g.data() + begin, end - begin);
  if (codec == CodecKind::kNone) {
    return std::string(reinterpret_cast<const char*>(part.data()),
                       part.size() * sizeof(float));
  }
  CodecOptions options;
  options.codec = codec;
  options.bucket_size = 64;
  options.topk_count = 16;
  std::string block;
  REQUIRE(EncodeBlock(part, options, begin, &block).ok());
  return block;
}

// A slice the shard must refuse: a truncated block, or for raw float32 a NaN.
std::string Spoil(std::string bytes, CodecKind codec) {
  if (codec == CodecKind::kNone) {
    const float nan = std::nanf("");
    std::memcpy(bytes.data() + 8, &nan, sizeof(nan));
    return bytes;
  }
  bytes.pop_back();
  return bytes;
}

struct Digest {
  std::vector<float> values;
  uint64_t version = 0;
  bool operator==(const Digest&) const = default;
};

Digest DigestOf(Client& client) {
  Digest d;
  d.values.resize(kN);
  auto info = client.PullDense("w", absl::MakeSpan(d.values));
  REQUIRE(info.ok());
  d.version = info->shard_versions[0];
  return d;
}

class RawPusher {
 public:
  explicit RawPusher(const std::string& address)
      : stub_(v1::ParameterServer::NewStub(
            *OpenChannel(address, ChannelSecurity{}))) {}
  grpc::Status Push(uint64_t seq, uint32_t index, const std::string& bytes,
                    bool encoded, v1::PushResponse* response) {
    grpc::ClientContext context;
    v1::PushDenseRequest request;
    request.set_table("w");
    request.set_offset(index * (kN / kSlices));
    request.set_gradient(bytes);
    request.set_encoded(encoded);
    request.mutable_origin()->set_worker_id(7);
    request.mutable_origin()->set_worker_incarnation(77);
    request.mutable_origin()->set_seq(seq);
    request.set_slices_in_push(kSlices);
    request.set_slice_index(index);
    return stub_->PushDense(&context, request, response);
  }

 private:
  std::unique_ptr<v1::ParameterServer::Stub> stub_;
};

TEST_CASE("a push with one bad slice at any position changes nothing, for every codec") {
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  TableConfig config = TableConfig::Dense("w", kN);
  config.optimizer.kind = OptimizerKind::kAdam;
  config.optimizer.learning_rate = 0.01f;
  REQUIRE(client->CreateTable(config).ok());
  REQUIRE(client->PushDense("w", RandomGradient(kN, 1)).ok());  // some history
  RawPusher raw(cluster.addresses[0]);
  uint64_t seq = 1;
  const uint64_t per = kN / kSlices;
  for (CodecKind codec :
       {CodecKind::kNone, CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8,
        CodecKind::kInt4, CodecKind::kInt2, CodecKind::kSign, CodecKind::kTopK}) {
    for (uint32_t bad = 0; bad < kSlices; ++bad) {
      const std::string codec_name = CodecKindName(codec);
      CAPTURE(codec_name, bad);
      const Digest before = DigestOf(*client);
      const std::vector<float> g = RandomGradient(kN, seq + 100);
      ++seq;
      for (uint32_t i = 0; i < kSlices; ++i) {
        std::string bytes = SliceBytes(g, i * per, (i + 1) * per, codec);
        if (i == bad) bytes = Spoil(std::move(bytes), codec);
        v1::PushResponse response;
        const grpc::Status status =
            raw.Push(seq, i, bytes, codec != CodecKind::kNone, &response);
        if (i < bad) {
          REQUIRE(status.ok());
          REQUIRE(response.staged());
        } else {
          REQUIRE(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
          if (i > bad) {
            REQUIRE(status.error_message().find(absl::StrCat(
                        "slice ", bad, " of ", kSlices)) != std::string::npos);
          }
        }
      }
      REQUIRE(DigestOf(*client) == before);
    }
    // The same codec's good push still applies, once, however often it is sent.
    const Digest before = DigestOf(*client);
    const std::vector<float> g = RandomGradient(kN, 999);
    ++seq;
    for (int copy = 0; copy < 2; ++copy) {
      for (uint32_t i = 0; i < kSlices; ++i) {
        v1::PushResponse response;
        REQUIRE(raw.Push(seq, i, SliceBytes(g, i * per, (i + 1) * per, codec),
                         codec != CodecKind::kNone, &response)
                    .ok());
        REQUIRE(response.duplicate() == (copy == 1));
        REQUIRE(response.staged() == (copy == 0 && i + 1 < kSlices));
        if (!response.staged()) {
          REQUIRE(response.accepted());
          REQUIRE(response.new_version() == before.version + 1);
        }
      }
    }
    const Digest after = DigestOf(*client);
    REQUIRE(after.version == before.version + 1);
    REQUIRE(after.values != before.values);
  }
}

}  // namespace
}  // namespace taups
