// Encoded blocks that are malformed, and lengths declared far past what
// the shard allows (common/codec_format.h has the block layout).
#include <cstring>

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "tests/hostile/hostile_cases.h"

namespace taups::testing::hostile {
namespace {

using Stub = v1::ParameterServer::Stub;
using grpc::StatusCode;

// A valid block of `n` values (0.01 i - 0.1) under `codec`.
std::string Block(CodecKind codec, uint64_t n, uint32_t bucket = 16) {
  std::vector<float> values(n);
  for (uint64_t i = 0; i < n; ++i) values[i] = 0.01f * static_cast<float>(i) - 0.1f;
  CodecOptions options;
  options.codec = codec;
  options.bucket_size = bucket;
  options.topk_count = 4;
  std::string block;
  REQUIRE(EncodeBlock(values, options, 0, &block).ok());
  return block;
}

template <typename T>
std::string Patched(std::string block, size_t offset, T value) {
  // A patch past the block's end would be a bug of this file, not a case.
  REQUIRE(offset <= block.size());
  REQUIRE(sizeof(value) <= block.size() - offset);
  std::memcpy(&block[offset], &value, sizeof(value));
  return block;
}

Case EncodedDense(std::string name, StatusCode code, std::string says, std::string block,
                  const char* table = kDense) {
  v1::PushDenseRequest request = DensePush(table, 0, 0, std::move(block));
  request.set_encoded(true);
  return {std::move(name), code, std::move(says), [request](HostileShard& s) {
            return Send(s, Who::kTrainers, &Stub::PushDense, request);
          }};
}

}  // namespace

CaseClass BadBlockCases(const HostileShard& shard) {
  CaseClass c{"bad codec blocks", {}, {}, {}};
  const std::string fp16 = Block(CodecKind::kFp16, kDenseHere);
  const std::string int8 = Block(CodecKind::kInt8, kDenseHere);
  std::string truncated = fp16;
  truncated.pop_back();
  c.cases.push_back(EncodedDense("fp16 block one byte short", StatusCode::INVALID_ARGUMENT,
                                 "", truncated));
  c.cases.push_back(EncodedDense("fp16 block one byte long", StatusCode::INVALID_ARGUMENT,
                                 "", fp16 + "x"));
  c.cases.push_back(EncodedDense("block with a wrong magic", StatusCode::INVALID_ARGUMENT,
                                 "", Patched<uint32_t>(fp16, 0, 0x58585858)));
  c.cases.push_back(EncodedDense("block of format version 2", StatusCode::INVALID_ARGUMENT,
                                 "", Patched<uint8_t>(fp16, 4, 2)));
  c.cases.push_back(EncodedDense("block of codec 99", StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint8_t>(fp16, 5, 99)));
  c.cases.push_back(EncodedDense("int8 block with bucket size 0",
                                 StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint32_t>(int8, 16, 0)));
  c.cases.push_back(EncodedDense("int8 block whose entry count is not n",
                                 StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint64_t>(int8, 24, kDenseHere - 1)));
  c.cases.push_back(EncodedDense("int8 block with a NaN step", StatusCode::INVALID_ARGUMENT,
                                 "", Patched<float>(int8, 32, std::nanf(""))));
  c.cases.push_back(EncodedDense("fp16 block holding +Inf (0x7c00)",
                                 StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint16_t>(fp16, 32 + 2 * 3, 0x7c00)));
  v1::PushDenseRequest straddling =
      DensePush(kDense, 0, 0, Block(CodecKind::kFp16, kDenseHere), 1);
  straddling.set_encoded(true);
  c.cases.push_back({"valid fp16 block of 32 values at offset 1", StatusCode::OUT_OF_RANGE,
                     "which holds [0, 32)", [straddling](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PushDense, straddling);
                     }});
  const std::string topk = Block(CodecKind::kTopK, kDenseHere);
  // Top-k indices follow the header: 4 uint32, strictly increasing, < n.
  c.cases.push_back(EncodedDense("top-k index past n", StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint32_t>(topk, 32 + 4 * 3, kDenseHere)));
  c.cases.push_back(EncodedDense("top-k indices not increasing",
                                 StatusCode::INVALID_ARGUMENT, "",
                                 Patched<uint32_t>(Patched<uint32_t>(topk, 32, 9), 36, 9)));
  c.cases.push_back(EncodedDense("raw floats sent as an encoded block",
                                 StatusCode::INVALID_ARGUMENT, "",
                                 Floats(std::vector<float>(kDenseHere, 0.5f))));
  c.cases.push_back(EncodedDense("empty encoded block", StatusCode::INVALID_ARGUMENT, "",
                                 ""));
  std::string sparse_block = Block(CodecKind::kBf16, shard.own_keys().size() * kDim);
  sparse_block.resize(sparse_block.size() - 2);
  v1::PushSparseRequest sparse = SparsePush(kSparse, 0, 0, shard.own_keys(), sparse_block);
  sparse.set_encoded(true);
  c.cases.push_back({"PushSparse bf16 block one value short", StatusCode::INVALID_ARGUMENT,
                     "", [sparse](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PushSparse, sparse);
                     }});
  return c;
}

CaseClass OversizedCases(const HostileShard&) {
  CaseClass c{"oversized declared lengths", {}, {}, {}};
  const std::string fp16 = Block(CodecKind::kFp16, kDenseHere);
  // Headers claiming far more values than travel: n and entry count 2^40.
  c.cases.push_back(EncodedDense(
      "block header declaring 2^40 values", StatusCode::INVALID_ARGUMENT,
      "declares 1099511627776 elements, more than the 32 allowed here",
      Patched<uint64_t>(Patched<uint64_t>(fp16, 8, uint64_t{1} << 40), 24, uint64_t{1} << 40)));
  c.cases.push_back(EncodedDense(
      "block header declaring 2^64 - 1 values", StatusCode::INVALID_ARGUMENT,
      "declares 18446744073709551615 elements, more than the 32 allowed here",
      Patched<uint64_t>(Patched<uint64_t>(fp16, 8, ~uint64_t{0}), 24, ~uint64_t{0})));
  c.cases.push_back(EncodedDense("valid fp16 block of 4,097 values",
                                 StatusCode::INVALID_ARGUMENT,
                                 "declares 4097 elements, more than the 32 allowed here",
                                 Block(CodecKind::kFp16, kMaxBlockValues + 1)));
  std::vector<uint64_t> many;
  for (uint64_t key = 1; many.size() <= kMaxKeys; ++key) many.push_back(key);
  c.cases.push_back({"PullSparse of 65 keys", StatusCode::RESOURCE_EXHAUSTED,
                     "--max_keys_per_request", [many](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PullSparse,
                                   SparsePull(kSparse, 0, many));
                     }});
  c.cases.push_back({"PushSparse of 65 keys", StatusCode::RESOURCE_EXHAUSTED,
                     "--max_keys_per_request", [many](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PushSparse,
                                   SparsePush(kSparse, 0, 0, many,
                                              Floats(std::vector<float>(many.size() * kDim))));
                     }});
  struct Table {
    const char* name;
    std::function<void(v1::TableConfig*)> shape;
    StatusCode code;
    const char* says;
  };
  const Table tables[] = {
      {"dense table of 2^62 floats",
       [](v1::TableConfig* t) { t->set_dense_size(uint64_t{1} << 62); },
       StatusCode::INVALID_ARGUMENT, ""},
      {"sparse table of dim 2^31",
       [](v1::TableConfig* t) {
         t->set_kind(v1::TABLE_KIND_SPARSE);
         t->clear_dense_size();
         t->set_dim(1u << 31);
       },
       StatusCode::INVALID_ARGUMENT, ""},
      {"sparse table of 2^63 rows",
       [](v1::TableConfig* t) {
         t->set_kind(v1::TABLE_KIND_SPARSE);
         t->clear_dense_size();
         t->set_dim(4);
         t->set_sparse_max_rows(uint64_t{1} << 63);
       },
       StatusCode::RESOURCE_EXHAUSTED, ""},
      {"table named with 33 characters",
       [](v1::TableConfig* t) { t->set_name(std::string(kMaxNameLength + 1, 'n')); },
       StatusCode::RESOURCE_EXHAUSTED, "--max_table_name_length"},
  };
  for (const Table& t : tables) {
    v1::CreateTableRequest request;
    request.mutable_config()->set_name("huge");
    request.mutable_config()->set_kind(v1::TABLE_KIND_DENSE);
    request.mutable_config()->set_dense_size(8);
    t.shape(request.mutable_config());
    c.cases.push_back({absl::StrCat("CreateTable: ", t.name), t.code, t.says,
                       [request](HostileShard& s) {
                         return Send(s, Who::kAdmin, &Stub::CreateTable, request);
                       }});
  }
  c.cases.push_back({"GetTable of a 1 MiB name", StatusCode::NOT_FOUND, "no table",
                     [](HostileShard& s) {
                       v1::GetTableRequest r;
                       r.set_name(std::string(1 << 20, 'q'));
                       Outcome out = Send(s, Who::kReader, &Stub::GetTable, r);
                       // The name comes back cut short, not echoed whole.
                       if (out.status.error_message().size() > 400) {
                         out.status = grpc::Status(grpc::StatusCode::INTERNAL,
                                                   "message echoes the whole name");
                       }
                       return out;
                     }});
  v1::PushDenseRequest slices = DensePush(kDense, 0, 980, Floats({0.5f}));
  slices.set_slices_in_push(~uint32_t{0});
  slices.set_slice_index(7);
  c.cases.push_back({"PushDense slice of 2^32 - 1 slices", StatusCode::INVALID_ARGUMENT,
                     "slices for a push of at most", [slices](HostileShard& s) {
                       return Send(s, Who::kTrainers, &Stub::PushDense, slices);
                     }});
  return c;
}

}  // namespace taups::testing::hostile
