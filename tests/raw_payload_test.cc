// The raw tensor wire form (proto/raw_payload.h) against stock protobuf and
// stock gRPC: what the raw encoder sends parses with protobuf to the same
// message; what protobuf serializes (split into any slices) decodes to the
// same header and payload; bytes protobuf refuses are refused; and over real
// gRPC servers on 127.0.0.1 a stock generated stub still pushes to and pulls
// from a shard (dense and sparse), and the client's raw PushDense reaches a
// stock typed server.
#include <catch2/catch.hpp>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "proto/grpc_credentials.h"
#include "proto/raw_payload.h"
#include "ps.grpc.pb.h"
#include "tests/inproc_cluster.h"
#include "tests/loopback_grpc.h"
#include "worker/src/grpc_transport.h"

namespace taups {
namespace {

using google::protobuf::util::MessageDifferencer;

constexpr uint32_t kGradient = v1::PushDenseRequest::kGradientFieldNumber;

std::string Bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

v1::PushDenseRequest FullRequest(std::string gradient) {
  v1::PushDenseRequest request;
  request.set_table("weights");
  request.set_offset(12345);
  request.set_gradient(std::move(gradient));
  request.mutable_origin()->set_worker_id(3);
  request.mutable_origin()->set_worker_incarnation(99);
  request.mutable_origin()->set_seq(17);
  request.set_base_version(41);
  request.set_slices_in_push(4);
  request.set_clock(8);
  request.set_push_norm_sq(2.5);
  request.set_encoded(true);
  request.set_slice_index(2);
  // A field this build does not know (a newer client's) travels too.
  request.GetReflection()->MutableUnknownFields(&request)->AddVarint(900, 5);
  return request;
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  REQUIRE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` cut into slices of `piece` bytes (the last may be shorter).
grpc::ByteBuffer Sliced(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

TEST_CASE("a raw-encoded push parses with stock protobuf to the same message") {
  for (size_t size : {size_t{0}, size_t{1}, size_t{127}, size_t{128},
                      size_t{1} << 20}) {
    const v1::PushDenseRequest request = FullRequest(Bytes(size, size));
    int released = 0;
    {
      grpc::ByteBuffer buffer;
      REQUIRE(EncodeBorrowingField(request, kGradient, [&] { ++released; },
                                   &buffer)
                  .ok());
      if (size > 0) {
        // The payload is borrowed, not copied: one slice is the request's
        // own bytes, and nothing is released while the buffer holds it.
        std::vector<grpc::Slice> slices;
        REQUIRE(buffer.Dump(&slices).ok());
        REQUIRE(slices.size() == 2);
        CHECK(reinterpret_cast<const char*>(slices[1].begin()) ==
              request.gradient().data());
        CHECK(released == 0);
      }
      v1::PushDenseRequest parsed;
      REQUIRE(parsed.ParseFromString(Flatten(buffer)));
      CHECK(MessageDifferencer::Equals(parsed, request));
      CHECK(buffer.Length() == request.ByteSizeLong());
    }
    CHECK(released == 1);
  }
}

TEST_CASE("a payload in several pieces is sent as one field, released once") {
  v1::PullDenseResponse header;
  header.set_version(7);
  header.set_step(3);
  header.set_server_incarnation(11);
  const std::string whole = Bytes(3 * 1000 + 17, 5);
  // Pieces of different sizes, empty ones among them (sent as nothing).
  const std::vector<absl::string_view> pieces = {
      absl::string_view(whole).substr(0, 1000), absl::string_view(),
      absl::string_view(whole).substr(1000, 17),
      absl::string_view(whole).substr(1017, 2000), absl::string_view()};
  int released = 0;
  {
    grpc::ByteBuffer buffer;
    REQUIRE(EncodeWithPayload(header, v1::PullDenseResponse::kValuesFieldNumber,
                              pieces, [&] { ++released; }, &buffer)
                .ok());
    // One slice of header and tag, then each non-empty piece borrowed.
    std::vector<grpc::Slice> slices;
    REQUIRE(buffer.Dump(&slices).ok());
    REQUIRE(slices.size() == 4);
    CHECK(reinterpret_cast<const char*>(slices[1].begin()) == pieces[0].data());
    CHECK(reinterpret_cast<const char*>(slices[2].begin()) == pieces[2].data());
    CHECK(reinterpret_cast<const char*>(slices[3].begin()) == pieces[3].data());
    v1::PullDenseResponse expected = header;
    expected.set_values(whole);
    v1::PullDenseResponse parsed;
    REQUIRE(parsed.ParseFromString(Flatten(buffer)));
    CHECK(MessageDifferencer::Equals(parsed, expected));
    // Dropping some of the slices releases nothing: gRPC may let go of
    // them one at a time.
    slices.resize(2);
    CHECK(released == 0);
  }
  CHECK(released == 1);
  // All pieces empty: no field, released at once.
  released = 0;
  grpc::ByteBuffer empty;
  const std::vector<absl::string_view> none(3);
  REQUIRE(EncodeWithPayload(header, v1::PullDenseResponse::kValuesFieldNumber,
                            none, [&] { ++released; }, &empty)
              .ok());
  CHECK(released == 1);
  v1::PullDenseResponse parsed;
  REQUIRE(parsed.ParseFromString(Flatten(empty)));
  CHECK(MessageDifferencer::Equals(parsed, header));
}

TEST_CASE("stock protobuf bytes in any slicing decode to the header and payload") {
  const v1::PushDenseRequest request = FullRequest(Bytes(100000, 7));
  const std::string wire = request.SerializeAsString();
  v1::PushDenseRequest expected_header = request;
  expected_header.clear_gradient();
  const PayloadCopyCounts before = ReceivedPayloadCounts();
  for (size_t piece : {size_t{1}, size_t{7}, size_t{16384}, wire.size()}) {
    const grpc::ByteBuffer buffer = Sliced(wire, piece);
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    REQUIRE(DecodeWithPayload(buffer, kGradient, &header, &payload).ok());
    CHECK(MessageDifferencer::Equals(header, expected_header));
    CHECK(payload.bytes() == request.gradient());
    CHECK(payload.copied() == (piece != wire.size()));
  }
  const PayloadCopyCounts after = ReceivedPayloadCounts();
  CHECK(after.copied - before.copied == 3);
  CHECK(after.in_place - before.in_place == 1);
}

TEST_CASE("a gathered float payload is measured in the copy, floats straddling slices included") {
  std::mt19937_64 rng(14);
  for (int round = 0; round < 60; ++round) {
    std::vector<float> values(rng() % 5000);
    for (float& x : values) {
      x = static_cast<float>(static_cast<int64_t>(rng() % 2000001) - 1000000) * 1e-3f;
    }
    // A NaN or an infinity now and then, anywhere (a straddling one too).
    if (!values.empty() && round % 3 == 0) {
      values[rng() % values.size()] =
          round % 2 == 0 ? std::numeric_limits<float>::quiet_NaN()
                         : -std::numeric_limits<float>::infinity();
    }
    float expected = 0.0f;
    for (float x : values) {
      expected = std::isfinite(x) ? std::max(expected, std::abs(x))
                                  : std::numeric_limits<float>::infinity();
      if (std::isinf(expected)) break;
    }
    std::string gradient(values.size() * sizeof(float), '\0');
    std::memcpy(gradient.data(), values.data(), gradient.size());
    v1::PushDenseRequest request = FullRequest(gradient);
    const std::string wire = request.SerializeAsString();
    const size_t piece = 1 + rng() % 700;  // odd sizes: floats straddle
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    REQUIRE(DecodeWithPayload(Sliced(wire, piece), kGradient, &header, &payload,
                              PayloadMeasure::kFloatMaxAbs)
                .ok());
    INFO("floats " << values.size() << " piece " << piece);
    REQUIRE(payload.bytes() == gradient);
    if (payload.copied()) {
      CHECK(payload.max_abs() == expected);
    } else {
      CHECK(payload.max_abs() < 0.0f);  // in place: left to the caller
    }
    // Not asked: not measured.
    ReceivedPayload plain;
    REQUIRE(DecodeWithPayload(Sliced(wire, piece), kGradient, &header, &plain)
                .ok());
    CHECK(plain.bytes() == gradient);
    CHECK(plain.max_abs() < 0.0f);
  }
}

TEST_CASE("floats left in pieces are not copied until gathered, and a gather measures") {
  const v1::PushDenseRequest request = FullRequest(Bytes(40000, 5));
  const std::string wire = request.SerializeAsString();
  v1::PushDenseRequest expected_header = request;
  expected_header.clear_gradient();
  for (size_t piece : {size_t{5}, size_t{999}, size_t{16384}, wire.size()}) {
    INFO("piece " << piece);
    const PayloadCopyCounts before = ReceivedPayloadCounts();
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    REQUIRE(DecodeWithPayload(Sliced(wire, piece), kGradient, &header, &payload,
                              PayloadMeasure::kFloatsLeftInPieces)
                .ok());
    CHECK(MessageDifferencer::Equals(header, expected_header));
    CHECK(!payload.copied());
    CHECK(ReceivedPayloadCounts().in_place - before.in_place == 1);
    CHECK(ReceivedPayloadCounts().copied == before.copied);
    if (piece == wire.size()) {  // one slice: a view, as before
      CHECK(!payload.in_pieces());
      CHECK(payload.bytes() == request.gradient());
      continue;
    }
    REQUIRE(payload.in_pieces());
    CHECK(payload.bytes().empty());
    const FloatPieces& pieces = payload.pieces();
    REQUIRE(pieces.bytes() == request.gradient().size());
    std::string joined;
    for (absl::string_view p : pieces.pieces()) joined.append(p.data(), p.size());
    CHECK(joined == request.gradient());
    // Gathered on demand: one copy, measured, the pieces let go.
    payload.Gather(PayloadMeasure::kFloatMaxAbs);
    CHECK(!payload.in_pieces());
    CHECK(payload.copied());
    CHECK(payload.bytes() == request.gradient());
    std::vector<float> floats(request.gradient().size() / 4);
    std::memcpy(floats.data(), request.gradient().data(), 4 * floats.size());
    float expected = 0.0f;
    for (float x : floats) {
      expected = std::isfinite(x) ? std::max(expected, std::abs(x))
                                  : std::numeric_limits<float>::infinity();
    }
    CHECK(payload.max_abs() == expected);
  }
}

TEST_CASE("PieceReader reads a sliced payload front to back in any step sizes") {
  const v1::PushDenseRequest request = FullRequest(Bytes(50000, 3));
  const std::string& want = request.gradient();
  const grpc::ByteBuffer buffer = Sliced(request.SerializeAsString(), 999);
  v1::PushDenseRequest header;
  PayloadPieces payload;
  REQUIRE(DecodeLeavingPayload(buffer, kGradient, &header, &payload).ok());
  REQUIRE(payload.size() == want.size());
  REQUIRE(payload.pieces().size() > 40);  // 999-byte slices: many pieces
  size_t total = 0;
  for (absl::string_view piece : payload.pieces()) total += piece.size();
  CHECK(total == want.size());
  // Rows of 64 bytes (many straddle a piece's end; 50000 = 781 * 64 + 16,
  // then the 16-byte tail), and random steps of 0 to 3000 bytes (several
  // pieces at once), each compared with the same range of the payload.
  {
    PieceReader reader(payload.pieces());
    size_t at = 0;
    for (; at + 64 <= want.size(); at += 64) {
      std::string got(64, '\0');
      reader.Next(64, got.data());
      REQUIRE(got == want.substr(at, 64));
    }
    std::string tail(want.size() - at, '\0');
    reader.Next(tail.size(), tail.data());
    CHECK(tail == want.substr(at));
  }
  std::mt19937_64 rng(5);
  for (int round = 0; round < 20; ++round) {
    PieceReader reader(payload.pieces());
    std::string got;
    while (got.size() < want.size()) {
      const size_t n = std::min<size_t>(rng() % 3001, want.size() - got.size());
      std::string step(n, '\0');
      reader.Next(n, step.data());
      REQUIRE(step == want.substr(got.size(), n));
      got += step;
    }
    CHECK(got == want);
  }
  // One contiguous view, as the in-process transport lands it.
  const absl::string_view whole = want;
  PieceReader reader(absl::Span<const absl::string_view>(&whole, 1));
  std::string first(100, '\0'), rest(want.size() - 100, '\0');
  reader.Next(first.size(), first.data());
  reader.Next(rest.size(), rest.data());
  CHECK(first + rest == want);
}

TEST_CASE("a repeated payload field: the last one wins, as in protobuf") {
  v1::PushDenseRequest first, second;
  first.set_gradient("first");
  second.set_gradient("second-one");
  second.set_table("t");
  const std::string wire = first.SerializeAsString() + second.SerializeAsString();
  v1::PushDenseRequest stock;
  REQUIRE(stock.ParseFromString(wire));
  for (size_t piece : {size_t{3}, wire.size()}) {
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    REQUIRE(DecodeWithPayload(Sliced(wire, piece), kGradient, &header, &payload)
                .ok());
    CHECK(payload.bytes() == stock.gradient());
    CHECK(header.table() == "t");
  }
}

TEST_CASE("bytes protobuf refuses are refused, with INVALID_ARGUMENT") {
  const std::string good = FullRequest(Bytes(64, 1)).SerializeAsString();
  const std::vector<std::string> bad = {
      good.substr(0, good.size() - 1),        // payload or a field cut short
      std::string("\x1a\x05" "abc", 5),       // gradient length past the end
      std::string("\x08", 1),                 // varint missing
      std::string("\x00\x01", 2),             // field number 0
      std::string("\x0f\x01", 2),             // wire type 7
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),
  };
  for (const std::string& wire : bad) {
    v1::PushDenseRequest stock;
    CHECK_FALSE(stock.ParseFromString(wire));
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    const absl::Status status =
        DecodeWithPayload(Sliced(wire, 2), kGradient, &header, &payload);
    CHECK(absl::IsInvalidArgument(status));
  }
}

TEST_CASE("random bytes: decoded exactly when protobuf parses them, to the same fields") {
  google::protobuf::LogSilencer quiet;  // protobuf logs each bad string
  std::mt19937_64 rng(20261201);
  const std::string seed_wire = FullRequest(Bytes(40, 3)).SerializeAsString();
  int agreed_ok = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string wire = seed_wire;
    // Flip a few bytes, or cut the tail, so most cases stay near-valid.
    const int flips = static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) wire[rng() % wire.size()] ^= static_cast<char>(1 << (rng() % 8));
    if (rng() % 3 == 0) wire.resize(rng() % wire.size());
    v1::PushDenseRequest stock;
    const bool stock_ok = stock.ParseFromString(wire);
    v1::PushDenseRequest header;
    ReceivedPayload payload;
    const bool raw_ok =
        DecodeWithPayload(Sliced(wire, 1 + rng() % 9), kGradient, &header,
                          &payload)
            .ok();
    if (!raw_ok) {
      // Refused where protobuf parses only for a top-level group, which
      // protobuf keeps as an unknown field.
      if (stock_ok) {
        const auto& unknown = stock.GetReflection()->GetUnknownFields(stock);
        bool group = false;
        for (int i = 0; i < unknown.field_count(); ++i) {
          group = group || unknown.field(i).type() ==
                               google::protobuf::UnknownField::TYPE_GROUP;
        }
        CHECK(group);
      }
      continue;
    }
    REQUIRE(stock_ok);
    header.set_gradient(std::string(payload.bytes()));
    // Equal as messages (unknown fields compared by their bytes).
    CHECK(header.SerializeAsString() == stock.SerializeAsString());
    ++agreed_ok;
  }
  CHECK(agreed_ok > 500);  // the comparison ran on many accepted messages
}

// A stock typed server (the generated CallbackService, protobuf parsing)
// that keeps what it received.
class StockPushServer final : public v1::ParameterServer::CallbackService {
 public:
  grpc::ServerUnaryReactor* PushDense(grpc::CallbackServerContext* context,
                                      const v1::PushDenseRequest* request,
                                      v1::PushResponse* response) override {
    received.set_value(*request);
    response->set_tau(7);
    response->set_new_version(request->gradient().size());
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  std::promise<v1::PushDenseRequest> received;
};

TEST_CASE("the client's raw PushDense reaches a stock protobuf server intact") {
  StockPushServer service;
  LoopbackGrpc loop(&service);
  GrpcTransport& transport = loop.transport();
  const v1::PushDenseRequest request = FullRequest(Bytes(3 << 20, 11));
  v1::PushResponse response;
  std::promise<absl::Status> done;
  transport.Send(Rpc::kPushDense, absl::Seconds(30), request, &response,
                 [&](absl::Status status) { done.set_value(status); });
  const absl::Status status = done.get_future().get();
  REQUIRE(status.ok());
  CHECK(response.tau() == 7);
  CHECK(response.new_version() == (3u << 20));
  const v1::PushDenseRequest seen = service.received.get_future().get();
  CHECK(MessageDifferencer::Equals(seen, request));
  loop.Shutdown();
}

// The code a shard answers `wire` (raw bytes) to, sent to `method` of
// the ParameterServer service at `address` through gRPC's generic stub.
grpc::StatusCode RawCallCode(const std::string& address,
                             const std::string& method,
                             const std::string& wire) {
  grpc::GenericStub generic(*OpenChannel(address, ChannelSecurity{}));
  grpc::Slice slice(wire);
  grpc::ByteBuffer request(&slice, 1), answer;
  grpc::ClientContext context;
  std::promise<grpc::Status> finished;
  generic.UnaryCall(&context, "/taups.v1.ParameterServer/" + method,
                    grpc::StubOptions(), &request, &answer,
                    [&](grpc::Status s) { finished.set_value(s); });
  return finished.get_future().get().error_code();
}

TEST_CASE("a stock generated stub pushes to and pulls from a raw shard") {
  constexpr uint64_t kN = 300000;  // 1.2 MB: many HTTP/2 frames per message
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  TableConfig config = TableConfig::Dense("w", kN);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 0.5f;
  config.initializer.kind = InitializerKind::kZeros;
  REQUIRE(client->CreateTable(config).ok());

  std::vector<float> g1(kN), g2(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    g1[i] = static_cast<float>(i % 97) * 0.25f;
    g2[i] = static_cast<float>(i % 13) - 6.0f;
  }
  // The library's client: raw PushDense.
  REQUIRE(client->PushDense("w", g1).ok());
  // A stock stub: the generated code's protobuf serialization.
  auto stub = v1::ParameterServer::NewStub(
      *OpenChannel(cluster.addresses[0], ChannelSecurity{}));
  {
    v1::PushDenseRequest request;
    request.set_table("w");
    request.set_gradient(reinterpret_cast<const char*>(g2.data()),
                         kN * sizeof(float));
    request.mutable_origin()->set_worker_id(42);
    request.mutable_origin()->set_worker_incarnation(1);
    request.mutable_origin()->set_seq(1);
    request.set_base_version(1);
    grpc::ClientContext context;
    v1::PushResponse response;
    const grpc::Status status = stub->PushDense(&context, request, &response);
    REQUIRE(status.ok());
    CHECK(response.accepted());
    CHECK(response.new_version() == 2);
    CHECK(response.tau() == 0);
  }
  // Expected, computed here: zeros - 0.5 * (g1 + g2).
  std::vector<float> expected(kN);
  for (uint64_t i = 0; i < kN; ++i) {
    expected[i] = 0.0f - 0.5f * g1[i] - 0.5f * g2[i];
  }
  {
    v1::PullDenseRequest request;
    request.set_table("w");
    request.set_count(kN);
    request.set_worker_id(42);
    grpc::ClientContext context;
    v1::PullDenseResponse response;
    REQUIRE(stub->PullDense(&context, request, &response).ok());
    CHECK(response.version() == 2);
    REQUIRE(response.values().size() == kN * sizeof(float));
    std::vector<float> got(kN);
    std::memcpy(got.data(), response.values().data(), response.values().size());
    CHECK(got == expected);
  }
  std::vector<float> pulled(kN);
  auto info = client->PullDense("w", absl::MakeSpan(pulled));
  REQUIRE(info.ok());
  CHECK(pulled == expected);
  // A malformed request is refused with a precise code, and changes nothing.
  {
    CHECK(RawCallCode(cluster.addresses[0], "PushDense",
                      std::string("\x0a\x01w\x1a\x10short", 9)) ==
          grpc::StatusCode::INVALID_ARGUMENT);
    REQUIRE(client->PullDense("w", absl::MakeSpan(pulled)).ok());
    CHECK(pulled == expected);
  }
}

TEST_CASE("a NaN or Inf in a payload of many frames is refused, naming its element") {
  constexpr uint64_t kN = 300000;  // 1.2 MB: many HTTP/2 frames
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  TableConfig config = TableConfig::Dense("w", kN);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 0.5f;
  config.initializer.kind = InitializerKind::kZeros;
  REQUIRE(client->CreateTable(config).ok());
  auto stub = v1::ParameterServer::NewStub(
      *OpenChannel(cluster.addresses[0], ChannelSecurity{}));
  struct Bad {
    uint64_t at;
    float value;
    const char* named;
  };
  const Bad cases[] = {
      {kN - 1, std::numeric_limits<float>::quiet_NaN(), "gradient element 299999 is nan"},
      {123457, -std::numeric_limits<float>::infinity(), "gradient element 123457 is -inf"},
      {0, std::numeric_limits<float>::infinity(), "gradient element 0 is inf"},
  };
  uint64_t seq = 0;
  for (const Bad& bad : cases) {
    std::vector<float> g(kN, 1.0f);
    g[bad.at] = bad.value;
    v1::PushDenseRequest request;
    request.set_table("w");
    request.set_gradient(reinterpret_cast<const char*>(g.data()),
                         kN * sizeof(float));
    request.mutable_origin()->set_worker_id(42);
    request.mutable_origin()->set_worker_incarnation(1);
    request.mutable_origin()->set_seq(++seq);
    const PayloadCopyCounts before = ReceivedPayloadCounts();
    grpc::ClientContext context;
    v1::PushResponse response;
    const grpc::Status status = stub->PushDense(&context, request, &response);
    INFO(status.error_message());
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message() ==
          absl::StrCat("table 'w': ", bad.named,
                       "; NaN/Inf gradients are refused and nothing was applied"));
    // The payload was left in the received frames and measured there (no
    // gather).
    CHECK(ReceivedPayloadCounts().in_place - before.in_place == 1);
    CHECK(ReceivedPayloadCounts().copied == before.copied);
  }
  // Nothing was applied.
  std::vector<float> pulled(kN, -1.0f);
  auto info = client->PullDense("w", absl::MakeSpan(pulled));
  REQUIRE(info.ok());
  CHECK(info->shard_versions.at(0) == 0);
  CHECK(pulled == std::vector<float>(kN, 0.0f));
}

std::string PackKeys(const std::vector<uint64_t>& keys) {
  return std::string(reinterpret_cast<const char*>(keys.data()),
                     keys.size() * sizeof(uint64_t));
}

std::string PackFloats(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()),
                     values.size() * sizeof(float));
}

// A PushSparse from a stock generated stub; its status code.
grpc::StatusCode StockPushSparse(v1::ParameterServer::Stub* stub,
                                 const std::vector<uint64_t>& keys,
                                 const std::string& gradients, uint64_t seq,
                                 v1::PushResponse* response) {
  v1::PushSparseRequest request;
  request.set_table("emb");
  request.set_keys(PackKeys(keys));
  request.set_gradients(gradients);
  request.mutable_origin()->set_worker_id(42);
  request.mutable_origin()->set_worker_incarnation(1);
  request.mutable_origin()->set_seq(seq);
  grpc::ClientContext context;
  return stub->PushSparse(&context, request, response).error_code();
}

// The rows of `keys` as a stock stub pulls them (raw bytes).
std::string StockPullSparse(v1::ParameterServer::Stub* stub,
                            const std::vector<uint64_t>& keys) {
  v1::PullSparseRequest request;
  request.set_table("emb");
  request.set_keys(PackKeys(keys));
  request.set_worker_id(42);
  grpc::ClientContext context;
  v1::PullSparseResponse response;
  const grpc::Status status = stub->PullSparse(&context, request, &response);
  REQUIRE(status.ok());
  CHECK_FALSE(response.encoded());
  return response.values();
}

TEST_CASE("a stock generated stub pushes to and pulls from a raw sparse shard") {
  constexpr uint32_t kDim = 16;
  constexpr uint64_t kKeys = 20000;  // 1.28 MB of rows: many HTTP/2 frames
  InProcessCluster cluster(1);
  auto client = cluster.Connect(0);
  TableConfig config = TableConfig::Sparse("emb", kDim);
  config.optimizer.kind = OptimizerKind::kSgd;
  config.optimizer.learning_rate = 0.5f;
  config.initializer.kind = InitializerKind::kZeros;
  REQUIRE(client->CreateTable(config).ok());

  std::vector<uint64_t> keys(kKeys);
  for (uint64_t i = 0; i < kKeys; ++i) keys[i] = i * 7919 + 3;
  std::vector<float> g1(kKeys * kDim), g2(kKeys * kDim);
  for (size_t i = 0; i < g1.size(); ++i) {
    g1[i] = static_cast<float>(i % 97) * 0.25f;
    g2[i] = static_cast<float>(i % 13) - 6.0f;
  }
  // The library's client: raw PushSparse (its merged rows borrowed).
  REQUIRE(client->PushSparse("emb", keys, g1).ok());
  auto stub = v1::ParameterServer::NewStub(
      *OpenChannel(cluster.addresses[0], ChannelSecurity{}));
  {
    v1::PushResponse response;
    REQUIRE(StockPushSparse(stub.get(), keys, PackFloats(g2), 1, &response) ==
            grpc::StatusCode::OK);
    CHECK(response.accepted());
  }
  // Expected, computed here: zeros - 0.5 * g1 - 0.5 * g2, row by row.
  std::vector<float> expected(kKeys * kDim);
  for (size_t i = 0; i < expected.size(); ++i) {
    expected[i] = 0.0f - 0.5f * g1[i] - 0.5f * g2[i];
  }
  CHECK(StockPullSparse(stub.get(), keys) == PackFloats(expected));
  // The library's raw pull lands the rows straight from the received
  // slices, duplicates and order as asked.
  std::vector<uint64_t> asked = {keys[5], keys[0], keys[5], keys[kKeys - 1]};
  for (uint64_t k : keys) asked.push_back(k);
  std::vector<float> pulled(asked.size() * kDim, -1.0f);
  REQUIRE(client->PullSparse("emb", asked, absl::MakeSpan(pulled)).ok());
  std::vector<float> want;
  for (uint64_t i : {uint64_t{5}, uint64_t{0}, uint64_t{5}, kKeys - 1}) {
    want.insert(want.end(), expected.begin() + i * kDim,
                expected.begin() + (i + 1) * kDim);
  }
  want.insert(want.end(), expected.begin(), expected.end());
  CHECK(PackFloats(pulled) == PackFloats(want));

  // Refusals keep their codes and change nothing.
  {
    v1::PushResponse response;
    // One float short of the keys' rows.
    std::string short_rows = PackFloats(g2);
    short_rows.resize(short_rows.size() - sizeof(float));
    CHECK(StockPushSparse(stub.get(), keys, short_rows, 2, &response) ==
          grpc::StatusCode::INVALID_ARGUMENT);
    // A NaN in the last row.
    std::vector<float> with_nan = g2;
    with_nan.back() = std::numeric_limits<float>::quiet_NaN();
    CHECK(StockPushSparse(stub.get(), keys, PackFloats(with_nan), 3,
                          &response) == grpc::StatusCode::INVALID_ARGUMENT);
    // Truncated wire bytes: a gradients field longer than the message.
    CHECK(RawCallCode(cluster.addresses[0], "PushSparse",
                      std::string("\x0a\x03\x65mb\x1a\x10short", 12)) ==
          grpc::StatusCode::INVALID_ARGUMENT);
  }
  CHECK(StockPullSparse(stub.get(), keys) == PackFloats(expected));
}

}  // namespace
}  // namespace taups
