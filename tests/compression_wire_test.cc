// Compressed pushes and pulls through the client library and real shards over
// gRPC: what the server applies is exactly the decoded block, error feedback
// and accumulation behave as documented, the counters report real wire
// bytes, and malformed blocks are refused with INVALID_ARGUMENT while the
// table stays untouched.
#include <catch2/catch.hpp>

#include <grpcpp/grpcpp.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/codec.h"
#include "common/error_feedback.h"
#include "common/shard_map.h"
#include "proto/grpc_credentials.h"
#include "ps.grpc.pb.h"
#include "tests/dense_push_fixtures.h"
#include "tests/inproc_cluster.h"

namespace taups {
namespace {

constexpr float kLr = kSgdRate;

// What the shards decode from a push encoded one block per shard range.
std::vector<float> DecodedPerShard(const std::vector<float>& g,
                                   const CodecOptions& options, uint32_t shards) {
  std::vector<float> out(g.size());
  for (uint32_t s = 0; s < shards; ++s) {
    const Range r = DenseShardRange(g.size(), shards, s);
    std::string block;
    REQUIRE(EncodeBlock(absl::MakeSpan(g).subspan(r.begin, r.size()), options,
                        r.begin, &block).ok());
    auto decoded = DecodeToVector(block, r.size());
    REQUIRE(decoded.ok());
    std::copy(decoded->begin(), decoded->end(), out.begin() + r.begin);
  }
  return out;
}

TEST_CASE("an encoded dense push applies exactly the decoded values") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 5003;
  for (CodecKind codec : {CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8,
                          CodecKind::kInt4, CodecKind::kInt2, CodecKind::kSign,
                          CodecKind::kTopK}) {
    CAPTURE(CodecKindName(codec));
    const std::string table = absl::StrCat("w_", CodecKindName(codec));
    REQUIRE(client->CreateTable(DenseSgd(table, n)).ok());
    CompressionConfig config;
    config.push.codec = codec;
    config.push.bucket_size = 100;
    config.push.topk_ratio = 0.01;
    REQUIRE(client->SetCompression(table, config).ok());
    const std::vector<float> g = RandomGradient(n, 7);
    auto pushed = client->PushDense(table, g);
    REQUIRE(pushed.ok());
    REQUIRE(pushed->all_accepted());
    REQUIRE_FALSE(pushed->deferred);

    const std::vector<float> sent = DecodedPerShard(g, config.push, 2);
    std::vector<float> params(n);
    REQUIRE(client->PullDense(table, absl::MakeSpan(params)).ok());
    for (uint64_t i = 0; i < n; ++i) REQUIRE(params[i] == -kLr * sent[i]);

    auto transfers = client->Transfers(table);
    REQUIRE(transfers.ok());
    uint64_t expected_wire = 0;
    for (uint32_t s = 0; s < 2; ++s) {
      expected_wire += EncodedBytes(config.push, DenseShardRange(n, 2, s).size());
    }
    CHECK(transfers->pushes_sent == 1);
    CHECK(transfers->push_raw_bytes == 4 * n);
    CHECK(transfers->push_wire_bytes == expected_wire);
    CHECK(transfers->pull_wire_bytes == 4 * n);

    // The shards counted the same bytes arriving.
    auto stats = client->Stats(table);
    REQUIRE(stats.ok());
    uint64_t shard_raw = 0, shard_wire = 0, encoded = 0;
    for (const TableShardStats& s : *stats) {
      shard_raw += s.push_raw_bytes;
      shard_wire += s.push_wire_bytes;
      encoded += s.encoded_pushes;
    }
    CHECK(shard_raw == 4 * n);
    CHECK(shard_wire == expected_wire);
    CHECK(encoded == 2);
  }
}

TEST_CASE("error feedback delivers what plain int2 keeps losing") {
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  const uint64_t n = 512;
  // One large value per bucket: nearest int2 rounds the small ones to 0.
  std::vector<float> g(n, 0.1f);
  g[0] = 1.0f;
  auto total_error = [&](bool feedback) {
    const std::string table = feedback ? "ef" : "plain";
    REQUIRE(client->CreateTable(DenseSgd(table, n)).ok());
    CompressionConfig config;
    config.push.codec = CodecKind::kInt2;
    config.error_feedback = feedback;
    REQUIRE(client->SetCompression(table, config).ok());
    const int pushes = 100;
    for (int t = 0; t < pushes; ++t) REQUIRE(client->PushDense(table, g).ok());
    std::vector<float> params(n);
    REQUIRE(client->PullDense(table, absl::MakeSpan(params)).ok());
    double error = 0;
    for (uint64_t i = 0; i < n; ++i) {
      error += std::fabs(-params[i] / kLr - pushes * g[i]);
    }
    return error;
  };
  const double plain = total_error(false);
  const double with_feedback = total_error(true);
  // Plain: 511 values x 100 pushes x 0.1 never arrive (5110). With feedback
  // the gap is the residual, about half a step (~1.0) per value at most.
  CHECK(plain > 5000.0);
  CHECK(with_feedback < 511 * 0.6);
}

TEST_CASE("accumulation sends one push per k calls, carrying their sum") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 1000;
  REQUIRE(client->CreateTable(DenseSgd("acc", n)).ok());
  CompressionConfig config;
  config.accumulate_steps = 3;
  REQUIRE(client->SetCompression("acc", config).ok());
  std::vector<float> sum(n, 0.0f), params(n);
  for (int call = 0; call < 3; ++call) {
    const std::vector<float> g = RandomGradient(n, 100 + call);
    for (uint64_t i = 0; i < n; ++i) sum[i] += g[i];
    auto pushed = client->PushDense("acc", g);
    REQUIRE(pushed.ok());
    CHECK(pushed->deferred == (call < 2));
    auto pulled = client->PullDense("acc", absl::MakeSpan(params));
    REQUIRE(pulled.ok());
    CHECK(pulled->shard_versions[0] == (call < 2 ? 0u : 1u));
  }
  for (uint64_t i = 0; i < n; ++i) REQUIRE(params[i] == -kLr * sum[i]);
  auto transfers = client->Transfers("acc");
  REQUIRE(transfers.ok());
  CHECK(transfers->pushes_sent == 1);
  CHECK(transfers->pushes_deferred == 2);
}

TEST_CASE("compressed pulls return the encoded parameters") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint64_t n = 3001;
  REQUIRE(client->CreateTable(DenseSgd("p", n)).ok());
  const std::vector<float> g = RandomGradient(n, 11);
  REQUIRE(client->PushDense("p", g).ok());
  std::vector<float> exact(n);
  REQUIRE(client->PullDense("p", absl::MakeSpan(exact)).ok());
  for (CodecKind codec : {CodecKind::kFp16, CodecKind::kBf16, CodecKind::kInt8}) {
    CAPTURE(CodecKindName(codec));
    CompressionConfig config;
    config.pull = codec;
    config.pull_bucket_size = 64;
    REQUIRE(client->SetCompression("p", config).ok());
    std::vector<float> pulled(n);
    REQUIRE(client->PullDense("p", absl::MakeSpan(pulled)).ok());
    CodecOptions options;
    options.codec = codec;
    options.bucket_size = 64;
    const std::vector<float> expected = DecodedPerShard(exact, options, 2);
    for (uint64_t i = 0; i < n; ++i) REQUIRE(pulled[i] == expected[i]);
    auto transfers = client->Transfers("p");
    REQUIRE(transfers.ok());
    CHECK(transfers->pull_raw_bytes == 4 * n);
    CHECK(transfers->pull_wire_bytes < (codec == CodecKind::kInt8 ? 1.1 * n : 2.1 * n));
  }
}

TEST_CASE("sparse rows travel encoded both ways, one bucket per row") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0);
  const uint32_t dim = 8;
  TableConfig table = TableConfig::Sparse("emb", dim);
  table.optimizer.learning_rate = kLr;
  table.initializer.kind = InitializerKind::kZeros;
  REQUIRE(client->CreateTable(table).ok());
  CompressionConfig config;
  config.push.codec = CodecKind::kInt8;
  config.push.bucket_size = 0;  // per row
  REQUIRE(client->SetCompression("emb", config).ok());
  const std::vector<uint64_t> keys = {3, 99, 12345, 7, 1u << 30};
  const std::vector<float> g = RandomGradient(keys.size() * dim, 13);
  REQUIRE(client->PushSparse("emb", keys, g).ok());

  config.push.codec = CodecKind::kNone;
  config.pull = CodecKind::kBf16;
  REQUIRE(client->SetCompression("emb", config).ok());
  std::vector<float> rows(keys.size() * dim);
  REQUIRE(client->PullSparse("emb", keys, absl::MakeSpan(rows)).ok());
  for (size_t r = 0; r < keys.size(); ++r) {
    // Each row was its own int8 bucket; then bf16 on the way back.
    CodecOptions row_options;
    row_options.codec = CodecKind::kInt8;
    row_options.bucket_size = dim;
    std::string block;
    REQUIRE(EncodeBlock(absl::MakeSpan(g).subspan(r * dim, dim), row_options, 0,
                        &block).ok());
    auto sent = DecodeToVector(block, dim);
    REQUIRE(sent.ok());
    for (uint32_t k = 0; k < dim; ++k) {
      const float server = -kLr * (*sent)[k];
      REQUIRE(std::fabs(rows[r * dim + k] - server) <= std::fabs(server) * 0x1p-8f);
    }
  }
  CompressionConfig feedback;
  feedback.error_feedback = true;
  CHECK(client->SetCompression("emb", feedback).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(client->SetCompression("nope", CompressionConfig{}).code() ==
        absl::StatusCode::kNotFound);
  // Bucket size 0 means "one bucket per row": meaningless for a dense table.
  REQUIRE(client->CreateTable(TableConfig::Dense("dense", 10)).ok());
  CompressionConfig per_row;
  per_row.push.codec = CodecKind::kInt8;
  per_row.push.bucket_size = 0;
  CHECK(client->SetCompression("dense", per_row).code() ==
        absl::StatusCode::kInvalidArgument);
  per_row.push.codec = CodecKind::kBf16;  // no scales: the bucket is unused
  CHECK(client->SetCompression("dense", per_row).ok());
}

// A SliceEncoder over host memory, as a GPU one would encode on the device.
class HostSliceEncoder final : public SliceEncoder {
 public:
  explicit HostSliceEncoder(std::vector<float> gradient)
      : gradient_(std::move(gradient)), feedback_(gradient_.size()) {}
  uint64_t size() const override { return gradient_.size(); }
  absl::Status EncodeSlice(uint64_t offset, uint64_t count,
                           const CodecOptions& options, bool error_feedback,
                           std::string* block) override {
    ++slices_;
    absl::Span<const float> part = absl::MakeSpan(gradient_).subspan(offset, count);
    return error_feedback ? feedback_.EncodeRange(part, offset, options, block)
                          : EncodeBlock(part, options, offset, block);
  }
  int slices() const { return slices_; }

 private:
  std::vector<float> gradient_;
  ErrorFeedback feedback_;
  int slices_ = 0;
};

TEST_CASE("a self-encoding gradient pushes exactly like a host one") {
  InProcessCluster cluster(2);
  auto client = cluster.Connect(0, /*slice_bytes=*/4096);
  const uint64_t n = 5000;
  CompressionConfig config;
  config.push.codec = CodecKind::kInt4;
  config.push.bucket_size = 64;
  config.error_feedback = true;
  for (const char* table : {"host", "encoder"}) {
    REQUIRE(client->CreateTable(DenseSgd(table, n)).ok());
    REQUIRE(client->SetCompression(table, config).ok());
  }
  HostSliceEncoder encoder(RandomGradient(n, 23));
  for (int push = 0; push < 3; ++push) {
    const std::vector<float> g = RandomGradient(n, 23);
    REQUIRE(client->PushDense("host", g).ok());
    auto pushed = client->PushDenseWith("encoder", encoder);
    REQUIRE(pushed.ok());
    REQUIRE(pushed->all_accepted());
  }
  CHECK(encoder.slices() >= 3 * 5);  // 4 KiB slices: several per shard
  std::vector<float> a(n), b(n);
  REQUIRE(client->PullDense("host", absl::MakeSpan(a)).ok());
  REQUIRE(client->PullDense("encoder", absl::MakeSpan(b)).ok());
  CHECK(a == b);
  HostSliceEncoder wrong_size(std::vector<float>(n + 1, 0.0f));
  CHECK(client->PushDenseWith("host", wrong_size).status().code() ==
        absl::StatusCode::kInvalidArgument);
  config.accumulate_steps = 2;
  REQUIRE(client->SetCompression("encoder", config).ok());
  CHECK(client->PushDenseWith("encoder", encoder).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

// --- the server's refusals --------------------------------------------------

std::string Block(const std::vector<float>& values, CodecKind codec,
                  uint64_t topk = 0) {
  CodecOptions options;
  options.codec = codec;
  options.bucket_size = 16;
  options.topk_count = topk;
  std::string block;
  REQUIRE(EncodeBlock(values, options, 0, &block).ok());
  return block;
}

TEST_CASE("malformed blocks get INVALID_ARGUMENT and leave the table as it was") {
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  const uint64_t n = 64;
  REQUIRE(client->CreateTable(DenseSgd("w", n)).ok());
  TableConfig sparse = TableConfig::Sparse("emb", 4);
  REQUIRE(client->CreateTable(sparse).ok());
  const std::vector<float> g = RandomGradient(n, 17);
  REQUIRE(client->PushDense("w", g).ok());  // version 1, known values
  std::vector<float> before(n);
  REQUIRE(client->PullDense("w", absl::MakeSpan(before)).ok());

  auto stub = v1::ParameterServer::NewStub(
      *OpenChannel(cluster.addresses[0], ChannelSecurity{}));
  auto push_dense = [&](const std::string& bytes) {
    grpc::ClientContext context;
    v1::PushDenseRequest request;
    request.set_table("w");
    request.set_gradient(bytes);
    request.set_encoded(true);
    v1::PushResponse response;
    return stub->PushDense(&context, request, &response);
  };
  std::string int8 = Block(g, CodecKind::kInt8);
  std::string bad_magic = int8;
  bad_magic[0] = 'Z';
  std::string zero_step = int8;
  std::memset(zero_step.data() + 32, 0, 4);
  std::string truncated = int8.substr(0, int8.size() - 1);
  std::string topk = Block(g, CodecKind::kTopK, 4);
  std::string topk_out_of_range = topk;
  const uint32_t past_end = n;
  std::memcpy(topk_out_of_range.data() + 32 + 12, &past_end, 4);
  std::string raw_not_a_block = std::string(reinterpret_cast<const char*>(g.data()), 4 * n);
  const std::vector<float> too_many(n + 1, 0.5f);
  for (const auto& [what, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"bad magic", bad_magic},
           {"zero step", zero_step},
           {"truncated", truncated},
           {"top-k index past the end", topk_out_of_range},
           {"raw floats flagged as a block", raw_not_a_block},
           {"more values than the shard holds", Block(too_many, CodecKind::kFp16)},
           {"empty", ""}}) {
    CAPTURE(what);
    grpc::Status status = push_dense(bytes);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message().find("PushDense gradient") != std::string::npos);
  }
  {
    grpc::ClientContext context;
    v1::PushSparseRequest request;
    request.set_table("emb");
    const uint64_t key = 5;
    request.set_keys(std::string(reinterpret_cast<const char*>(&key), 8));
    std::vector<float> row(5, 1.0f);  // 5 values for a dim-4 row
    request.set_gradients(Block(row, CodecKind::kInt8));
    request.set_encoded(true);
    v1::PushResponse response;
    CHECK(stub->PushSparse(&context, request, &response).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    // A top-k block of one entry that declares 2^26 + 1 values for a sparse
    // push whose keys x dim would allow them: refused before any allocation
    // by the shard's --max_block_values (2^26).
    TableConfig wide = TableConfig::Sparse("wide", 4096);
    REQUIRE(client->CreateTable(wide).ok());
    std::vector<uint64_t> keys(16385);
    for (uint64_t k = 0; k < keys.size(); ++k) keys[k] = k;
    std::string block(32 + 8, '\0');
    BlockHeader header;
    header.codec = CodecKind::kTopK;
    header.element_count = (uint64_t{1} << 26) + 1;
    header.entry_count = 1;
    WriteHeader(header, block.data());
    const float one = 1.0f;
    std::memcpy(block.data() + 36, &one, 4);
    grpc::ClientContext context;
    v1::PushSparseRequest request;
    request.set_table("wide");
    request.set_keys(std::string(reinterpret_cast<const char*>(keys.data()), 8 * keys.size()));
    request.set_gradients(block);
    request.set_encoded(true);
    v1::PushResponse response;
    grpc::Status status = stub->PushSparse(&context, request, &response);
    // Within what the keys hold, over what the shard decodes (a limit).
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(status.error_message().find("--max_block_values") != std::string::npos);
  }
  for (auto [codec, bucket] : std::vector<std::pair<v1::Codec, uint32_t>>{
           {v1::CODEC_SIGN, 16}, {v1::CODEC_TOPK, 16}, {v1::CODEC_INT8, 0},
           {static_cast<v1::Codec>(42), 16}}) {
    grpc::ClientContext context;
    v1::PullDenseRequest request;
    request.set_table("w");
    request.set_count(n);
    request.set_pull_codec(codec);
    request.set_pull_bucket_size(bucket);
    v1::PullDenseResponse response;
    CHECK(stub->PullDense(&context, request, &response).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
  }

  auto stats = client->Stats("w");
  REQUIRE(stats.ok());
  CHECK((*stats)[0].bad_blocks == 7);
  CHECK((*stats)[0].encoded_pushes == 0);

  std::vector<float> after(n);
  auto info = client->PullDense("w", absl::MakeSpan(after));
  REQUIRE(info.ok());
  CHECK(info->shard_versions[0] == 1);
  CHECK(after == before);
  std::vector<float> row(4);
  auto sparse_info = client->PullSparse("emb", std::vector<uint64_t>{5}, absl::MakeSpan(row));
  REQUIRE(sparse_info.ok());
  CHECK(sparse_info->shard_versions[0] == 0);
}

}  // namespace
}  // namespace taups
