// The wire form of a message whose one large `bytes` field (a tensor) is
// handled outside protobuf, on both ends of a gRPC call, so the tensor's
// bytes are neither copied into a protobuf string nor serialized again.
//
// The bytes on the wire are exactly protobuf's encoding of the message
// (proto/ps.proto), so a stock client or server on the other end sees an
// ordinary message:
//   [every other field, serialized by protobuf] [payload tag] [varint length]
//   [payload bytes]
// Protobuf accepts fields in any order, so putting the payload last is legal.
//
// Sending: EncodeWithPayload puts the payload into the grpc::ByteBuffer as a
// slice that points at the caller's memory (no copy); the caller learns
// through `on_release` when gRPC has let go of it.
//
// Receiving: DecodeWithPayload (or DecodeLeavingPayload, which never
// copies: the client's pulls) walks the received slices, hands every other
// field to protobuf (header fields are small; new ones come for free) and
// keeps the payload as a view into the received slices when it lies in one
// of them, or copies it once into its own buffer when it spans several (gRPC
// delivers a large message as many slices, one per HTTP/2 data frame, so a
// large payload is usually copied once; `copied()` says so), unless the
// receiver reads floats where they lie (kFloatsLeftInPieces: a dense push's
// gradient, then never copied).
//
// Thread-safety: the functions are pure; a ReceivedPayload is
// thread-compatible.
#ifndef TAUPS_PROTO_RAW_PAYLOAD_H_
#define TAUPS_PROTO_RAW_PAYLOAD_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/float_pieces.h"
#include "google/protobuf/message.h"
#include "google/protobuf/message_lite.h"

namespace taups {

// Builds the wire bytes of `header` with field `field` (a `bytes` field that
// must be empty in `header`) set to `payload`. The payload becomes one slice
// borrowing `payload`'s memory, which must stay valid until `on_release`
// runs; `on_release` runs exactly once, on whatever thread drops gRPC's last
// reference (possibly inside gRPC, possibly after the call has finished; at
// the latest when the returned buffer and every copy of it are destroyed).
// An empty payload adds no field and runs `on_release` before returning.
// INVALID_ARGUMENT if `header` carries field `field` itself or does not
// serialize.
absl::Status EncodeWithPayload(const google::protobuf::MessageLite& header,
                               uint32_t field, absl::string_view payload,
                               std::function<void()> on_release,
                               grpc::ByteBuffer* out);

// The same with the payload in several pieces, sent end to end as the one
// field (a slice borrowing each); `on_release` runs once, when gRPC has let
// go of every piece.
absl::Status EncodeWithPayload(const google::protobuf::MessageLite& header,
                               uint32_t field,
                               absl::Span<const absl::string_view> pieces,
                               std::function<void()> on_release,
                               grpc::ByteBuffer* out);

// The same for a whole message whose field `field` (a singular `bytes`
// field) already holds the payload: the other fields (and unknown ones) are
// serialized by protobuf, the field's bytes are borrowed from `message`,
// which must stay unchanged until `on_release` runs (the same contract as
// above). INVALID_ARGUMENT if `field` is not such a field.
absl::Status EncodeBorrowingField(const google::protobuf::Message& message,
                                  uint32_t field,
                                  std::function<void()> on_release,
                                  grpc::ByteBuffer* out);

// A whole (small) message as gRPC bytes, and back: protobuf's own encoding
// in one slice; INVALID_ARGUMENT when the bytes do not parse.
absl::Status EncodeMessage(const google::protobuf::MessageLite& message,
                           grpc::ByteBuffer* out);
absl::Status DecodeMessage(const grpc::ByteBuffer& buffer,
                           google::protobuf::MessageLite* message);

// What DecodeWithPayload works out about the payload while it reads it.
enum class PayloadMeasure {
  kNothing,
  // The payload is little-endian floats (a raw tensor): when it has to be
  // gathered from several slices, MaxAbs (common/vector_math.h) of its
  // whole 4-byte groups is computed in the loop that copies them, so the
  // bytes are read once for both.
  kFloatMaxAbs,
  // The payload is little-endian floats its receiver reads where they lie:
  // when it spans several slices it is neither copied nor measured but left
  // in them (ReceivedPayload::in_pieces()), until Gather() if ever.
  kFloatsLeftInPieces,
};

class ReceivedPayload;
absl::Status DecodeWithPayload(
    const grpc::ByteBuffer& buffer, uint32_t field,
    google::protobuf::MessageLite* header, ReceivedPayload* payload,
    PayloadMeasure measure = PayloadMeasure::kNothing);

// A received payload: a view of the bytes of the payload field, which stays
// valid as long as this object (it holds references to the received slices,
// or its own copy and then no slice). Empty when the message did not carry
// the field.
class ReceivedPayload {
 public:
  // The payload in one view; empty while it is left in pieces.
  absl::string_view bytes() const { return view_; }
  // Whether the payload was left in several received slices
  // (PayloadMeasure::kFloatsLeftInPieces); pieces() are then its bytes.
  bool in_pieces() const { return pieces_.bytes() > 0; }
  const FloatPieces& pieces() const { return pieces_; }
  // Makes a payload left in pieces one buffer (bytes(); one copy, measured
  // as `measure` says), for a reader that needs it whole; else does nothing.
  void Gather(PayloadMeasure measure);
  // True when the payload spanned several slices and was copied once.
  bool copied() const { return scratch_ != nullptr; }
  // The payload's max |x| as floats when it was measured while copied
  // (PayloadMeasure::kFloatMaxAbs and copied()): +infinity when one is NaN
  // or infinite; negative when not measured (a payload used in place is
  // left for the caller to measure, once, where it reads it as floats).
  float max_abs() const { return max_abs_; }

 private:
  friend absl::Status DecodeWithPayload(const grpc::ByteBuffer&, uint32_t,
                                        google::protobuf::MessageLite*,
                                        ReceivedPayload*, PayloadMeasure);
  // Makes the payload the bytes of `pieces`, in order: in place when there
  // is at most one, else gathered into scratch_ (measured per `measure`).
  void Keep(const std::vector<absl::string_view>& pieces, size_t size,
            PayloadMeasure measure);

  std::vector<grpc::Slice> slices_;
  std::unique_ptr<char[]> scratch_;  // uninitialised until gathered into
  absl::string_view view_;
  FloatPieces pieces_;  // views into slices_ when left in pieces
  float max_abs_ = -1.0f;
};

// Splits a received message: every field but `field` is parsed into
// `header` by protobuf (the last occurrence of a field wins, as in
// protobuf), `field`'s last occurrence lands in `payload` (measured as
// `measure` asks; declared above, with its default). INVALID_ARGUMENT
// naming the problem for bytes protobuf would not parse either (a truncated
// field, a bad varint or wire type, a field number 0) and for groups (wire
// types 3 and 4, which no message of ps.proto uses; protobuf would keep
// them as unknown fields). `field` with another wire type is left to
// protobuf, as an unknown field.
// A received payload left where gRPC put it: views into the received
// slices (held here), in order, so the caller copies it once, straight to
// where it belongs. Empty when the message did not carry the field.
// Thread-compatible.
class PayloadPieces {
 public:
  size_t size() const { return size_; }
  // Writes the size() bytes to `dest`.
  void CopyTo(char* dest) const;
  // Makes `out` the payload (one copy).
  void AssignTo(std::string* out) const;
  // The payload as consecutive views into the received slices (valid as
  // long as this object), for a caller that walks them itself.
  absl::Span<const absl::string_view> pieces() const { return pieces_; }

 private:
  friend absl::Status DecodeLeavingPayload(const grpc::ByteBuffer&, uint32_t,
                                           google::protobuf::MessageLite*,
                                           PayloadPieces*);
  std::vector<grpc::Slice> slices_;
  std::vector<absl::string_view> pieces_;
  size_t size_ = 0;
};

// Reads consecutive bytes of a payload held as pieces (PayloadPieces, or
// one contiguous view), front to back, without a call per read: Next(n,
// dest) copies the next n bytes to `dest` from where the last read ended.
// Reading past the end is a caller error (checked in debug builds).
// Thread-compatible; the pieces must outlive the reader.
class PieceReader {
 public:
  explicit PieceReader(absl::Span<const absl::string_view> pieces)
      : pieces_(pieces) {}
  void Next(size_t n, char* dest) {
    // Fast path: the current piece holds all n bytes (all but the rows
    // that straddle the end of a slice).
    if (piece_ < pieces_.size() && pieces_[piece_].size() - at_ >= n) {
      std::memcpy(dest, pieces_[piece_].data() + at_, n);
      at_ += n;
      return;
    }
    Straddling(n, dest);
  }

 private:
  void Straddling(size_t n, char* dest);
  absl::Span<const absl::string_view> pieces_;
  size_t piece_ = 0;  // the piece the next byte comes from
  size_t at_ = 0;     // offset of the next byte in that piece
};

// DecodeWithPayload, leaving the payload in the received slices whatever
// their number (no copy); the same checks and errors.
absl::Status DecodeLeavingPayload(const grpc::ByteBuffer& buffer,
                                  uint32_t field,
                                  google::protobuf::MessageLite* header,
                                  PayloadPieces* payload);

// Times a payload was copied on receipt because it spanned slices, and times
// it was used in place; process-wide, for benchmarks and tests.
struct PayloadCopyCounts {
  uint64_t in_place = 0;
  uint64_t copied = 0;
};
PayloadCopyCounts ReceivedPayloadCounts();

}  // namespace taups

#endif  // TAUPS_PROTO_RAW_PAYLOAD_H_
