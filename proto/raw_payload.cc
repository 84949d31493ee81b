#include "proto/raw_payload.h"

#include <algorithm>
#include <cassert>
#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/vector_math.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/wire_format.h"

namespace taups {
namespace {

constexpr int kLengthDelimited = 2;

std::atomic<uint64_t> payloads_in_place{0};
std::atomic<uint64_t> payloads_copied{0};

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads protobuf wire bytes spread over chunks, front to back.
class Cursor {
 public:
  explicit Cursor(std::vector<absl::string_view> chunks)
      : chunks_(std::move(chunks)) {
    Settle();
  }

  bool AtEnd() const { return chunk_ == chunks_.size(); }

  // Reads one varint (at most 10 bytes); its raw bytes are appended to
  // `copy` when not null.
  bool ReadVarint(uint64_t* value, std::string* copy) {
    *value = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (AtEnd()) return false;
      const uint8_t byte = static_cast<uint8_t>(chunks_[chunk_][at_]);
      if (copy != nullptr) copy->push_back(static_cast<char>(byte));
      Advance(1);
      *value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }

  // Moves over the next `n` bytes, appending them to `copy` when not null.
  bool Skip(uint64_t n, std::string* copy) {
    while (n > 0) {
      if (AtEnd()) return false;
      const absl::string_view rest = chunks_[chunk_].substr(at_);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, rest.size()));
      if (copy != nullptr) copy->append(rest.data(), take);
      Advance(take);
      n -= take;
    }
    return true;
  }

  // The next `n` bytes as views into the chunks, in order (no copy).
  bool Pieces(uint64_t n, std::vector<absl::string_view>* out) {
    out->clear();
    while (n > 0) {
      if (AtEnd()) return false;
      const absl::string_view rest = chunks_[chunk_].substr(at_);
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, rest.size()));
      out->push_back(rest.substr(0, take));
      Advance(take);
      n -= take;
    }
    return true;
  }

 private:
  void Advance(size_t n) {
    at_ += n;
    Settle();
  }
  // Moves past exhausted (and empty) chunks.
  void Settle() {
    while (chunk_ < chunks_.size() && at_ >= chunks_[chunk_].size()) {
      ++chunk_;
      at_ = 0;
    }
  }

  std::vector<absl::string_view> chunks_;
  size_t chunk_ = 0;
  size_t at_ = 0;
};

// Walks the top-level fields of `cursor`: fields other than `field` are
// appended, as they were, to `header_bytes`; `field`'s bytes go through
// `on_payload` (called with the cursor positioned at the payload and its
// length). INVALID_ARGUMENT for what is not valid protobuf wire bytes.
template <typename OnPayload>
absl::Status Walk(Cursor& cursor, uint32_t field, std::string* header_bytes,
                  OnPayload on_payload) {
  while (!cursor.AtEnd()) {
    std::string tag_bytes;
    uint64_t tag = 0;
    if (!cursor.ReadVarint(&tag, &tag_bytes) || tag > 0xffffffffu) {
      return absl::InvalidArgumentError("message bytes: a bad field tag");
    }
    const uint64_t number = tag >> 3;
    const int wire_type = static_cast<int>(tag & 7);
    if (number == 0) {
      return absl::InvalidArgumentError("message bytes: field number 0");
    }
    if (number == field && wire_type == kLengthDelimited) {
      uint64_t length = 0;
      if (!cursor.ReadVarint(&length, nullptr) || length > 0x7fffffffu) {
        return absl::InvalidArgumentError(
            absl::StrCat("message bytes: field ", field, " has a bad length"));
      }
      if (absl::Status ok = on_payload(length); !ok.ok()) return ok;
      continue;
    }
    // Anything else, the payload's number with another wire type included,
    // is protobuf's to read (as an unknown field, where it does not fit).
    header_bytes->append(tag_bytes);
    bool ok = false;
    uint64_t value = 0;
    switch (wire_type) {
      case 0:
        ok = cursor.ReadVarint(&value, header_bytes);
        break;
      case 1:
        ok = cursor.Skip(8, header_bytes);
        break;
      case 2:
        ok = cursor.ReadVarint(&value, header_bytes) &&
             value <= 0x7fffffffu && cursor.Skip(value, header_bytes);
        break;
      case 5:
        ok = cursor.Skip(4, header_bytes);
        break;
      default:  // groups (3, 4) and the undefined 6, 7
        return absl::InvalidArgumentError(absl::StrCat(
            "message bytes: field ", number, " has wire type ", wire_type,
            ", which this message does not use"));
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("message bytes: field ", number, " is truncated"));
    }
  }
  return absl::OkStatus();
}

void ReleaseThunk(void* user_data) {
  auto* release = static_cast<std::function<void()>*>(user_data);
  if (*release) (*release)();
  delete release;
}

// Runs `fn` once, when the last slice that shares it lets go.
struct SharedRelease {
  std::function<void()> fn;
  ~SharedRelease() {
    if (fn) fn();
  }
};

void ReleaseShared(void* user_data) {
  delete static_cast<std::shared_ptr<SharedRelease>*>(user_data);
}

// `prefix` (the other fields' bytes), then field `field` holding the
// pieces end to end, each a slice borrowing it; no field when they are
// all empty.
void Assemble(std::string prefix, uint32_t field,
              absl::Span<const absl::string_view> pieces,
              std::function<void()> on_release, grpc::ByteBuffer* out) {
  size_t total = 0;
  size_t nonempty = 0;
  for (absl::string_view piece : pieces) {
    total += piece.size();
    nonempty += piece.empty() ? 0 : 1;
  }
  if (total == 0) {
    if (on_release) on_release();
    grpc::Slice only(prefix);
    *out = grpc::ByteBuffer(&only, 1);
    return;
  }
  AppendVarint((uint64_t{field} << 3) | kLengthDelimited, &prefix);
  AppendVarint(total, &prefix);
  std::vector<grpc::Slice> parts;
  parts.reserve(nonempty + 1);
  parts.emplace_back(prefix);
  if (nonempty == 1) {
    for (absl::string_view piece : pieces) {
      if (piece.empty()) continue;
      parts.emplace_back(const_cast<char*>(piece.data()), piece.size(),
                         &ReleaseThunk,
                         new std::function<void()>(std::move(on_release)));
    }
  } else {
    auto release = std::make_shared<SharedRelease>();
    release->fn = std::move(on_release);
    for (absl::string_view piece : pieces) {
      if (piece.empty()) continue;
      parts.emplace_back(const_cast<char*>(piece.data()), piece.size(),
                         &ReleaseShared,
                         new std::shared_ptr<SharedRelease>(release));
    }
  }
  *out = grpc::ByteBuffer(parts.data(), parts.size());
}

}  // namespace

absl::Status EncodeWithPayload(const google::protobuf::MessageLite& header,
                               uint32_t field, absl::string_view payload,
                               std::function<void()> on_release,
                               grpc::ByteBuffer* out) {
  return EncodeWithPayload(header, field, absl::MakeConstSpan(&payload, 1),
                           std::move(on_release), out);
}

absl::Status EncodeWithPayload(const google::protobuf::MessageLite& header,
                               uint32_t field,
                               absl::Span<const absl::string_view> pieces,
                               std::function<void()> on_release,
                               grpc::ByteBuffer* out) {
  std::string prefix;
  if (!header.SerializeToString(&prefix)) {
    if (on_release) on_release();
    return absl::InvalidArgumentError("the message header does not serialize");
  }
  {
    // The header must not carry the payload field: a second copy of it
    // would be ambiguous (protobuf keeps the last; this one is ours).
    Cursor check({absl::string_view(prefix)});
    std::string ignored;
    bool carries = false;
    absl::Status walked = Walk(check, field, &ignored, [&](uint64_t length) {
      carries = true;
      return check.Skip(length, nullptr)
                 ? absl::OkStatus()
                 : absl::InternalError("header truncated");
    });
    if (!walked.ok() || carries) {
      if (on_release) on_release();
      return absl::InvalidArgumentError(absl::StrCat(
          "the message header carries field ", field, " itself"));
    }
  }
  Assemble(std::move(prefix), field, pieces, std::move(on_release), out);
  return absl::OkStatus();
}

absl::Status EncodeBorrowingField(const google::protobuf::Message& message,
                                  uint32_t field,
                                  std::function<void()> on_release,
                                  grpc::ByteBuffer* out) {
  using google::protobuf::FieldDescriptor;
  using google::protobuf::internal::WireFormat;
  const FieldDescriptor* payload_field =
      message.GetDescriptor()->FindFieldByNumber(static_cast<int>(field));
  if (payload_field == nullptr || payload_field->is_repeated() ||
      payload_field->type() != FieldDescriptor::TYPE_BYTES) {
    if (on_release) on_release();
    return absl::InvalidArgumentError(absl::StrCat(
        message.GetTypeName(), " has no singular bytes field ", field));
  }
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::string prefix;
  {
    // Protobuf's own serialization of every other field, in its order.
    message.ByteSizeLong();  // caches the sizes of nested messages
    std::vector<const FieldDescriptor*> fields;
    reflection->ListFields(message, &fields);
    google::protobuf::io::StringOutputStream stream(&prefix);
    google::protobuf::io::CodedOutputStream coded(&stream);
    for (const FieldDescriptor* f : fields) {
      if (f != payload_field) {
        WireFormat::SerializeFieldWithCachedSizes(f, message, &coded);
      }
    }
    WireFormat::SerializeUnknownFields(reflection->GetUnknownFields(message),
                                       &coded);
  }
  std::string unused;
  const std::string& payload =
      reflection->GetStringReference(message, payload_field, &unused);
  const absl::string_view piece = payload;
  Assemble(std::move(prefix), field, absl::MakeConstSpan(&piece, 1),
           std::move(on_release), out);
  return absl::OkStatus();
}

absl::Status EncodeMessage(const google::protobuf::MessageLite& message,
                           grpc::ByteBuffer* out) {
  std::string bytes;
  if (!message.SerializeToString(&bytes)) {
    return absl::InvalidArgumentError("the message does not serialize");
  }
  grpc::Slice only(bytes);
  *out = grpc::ByteBuffer(&only, 1);
  return absl::OkStatus();
}

absl::Status DecodeMessage(const grpc::ByteBuffer& buffer,
                           google::protobuf::MessageLite* message) {
  grpc::Slice flat;
  if (buffer.Length() > 0 && !buffer.DumpToSingleSlice(&flat).ok()) {
    return absl::InternalError("cannot read the received message");
  }
  if (!message->ParseFromArray(flat.begin(), static_cast<int>(flat.size()))) {
    return absl::InvalidArgumentError("the message bytes do not parse");
  }
  return absl::OkStatus();
}

namespace {

// Copies `pieces` end to end to `dst` and returns MaxAbs of the floats they
// form (4-byte groups from the start of `dst`; a partial last group is not
// one), each byte read once: the groups inside a piece are copied and
// measured by CopyMaxAbs, a group that straddles two pieces is measured
// where it was put together, in `dst`, once its last byte has landed.
float GatherMaxAbs(const std::vector<absl::string_view>& pieces, char* dst) {
  float max = 0.0f;  // MaxAbs never answers NaN, so std::max is exact
  size_t at = 0;     // bytes written so far
  for (absl::string_view piece : pieces) {
    const char* src = piece.data();
    size_t left = piece.size();
    const size_t head = std::min(left, (4 - at % 4) % 4);
    if (head > 0) {  // the end of a group that began in an earlier piece
      std::memcpy(dst + at, src, head);
      at += head;
      src += head;
      left -= head;
      if (at % 4 == 0) max = std::max(max, MaxAbsOfBytes(dst + at - 4, 1));
    }
    const size_t groups = left / 4;
    max = std::max(max, CopyMaxAbs(src, dst + at, groups));
    at += 4 * groups;
    src += 4 * groups;
    left -= 4 * groups;
    std::memcpy(dst + at, src, left);  // a group the next piece finishes
    at += left;
  }
  return max;
}

// The received slices of `buffer` in `slices`, walked (Walk) with
// `take(cursor, length)` reading each occurrence of the payload field
// (false: truncated); then every other field parsed into `header`.
template <typename Take>
absl::Status DecodeSplit(const grpc::ByteBuffer& buffer, uint32_t field,
                         google::protobuf::MessageLite* header,
                         std::vector<grpc::Slice>* slices, Take take) {
  slices->clear();
  if (buffer.Length() > 0 && !buffer.Dump(slices).ok()) {
    return absl::InternalError("cannot read the received message");
  }
  std::vector<absl::string_view> chunks;
  chunks.reserve(slices->size());
  for (const grpc::Slice& slice : *slices) {
    chunks.emplace_back(reinterpret_cast<const char*>(slice.begin()),
                        slice.size());
  }
  Cursor cursor(std::move(chunks));
  std::string header_bytes;
  absl::Status walked =
      Walk(cursor, field, &header_bytes, [&](uint64_t length) {
        if (!take(cursor, length)) {
          return absl::InvalidArgumentError(
              absl::StrCat("message bytes: field ", field, " is truncated"));
        }
        return absl::OkStatus();
      });
  if (!walked.ok()) return walked;
  if (!header->ParseFromString(header_bytes)) {
    return absl::InvalidArgumentError(
        "message bytes: the fields beside the tensor do not parse");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodeWithPayload(const grpc::ByteBuffer& buffer, uint32_t field,
                               google::protobuf::MessageLite* header,
                               ReceivedPayload* payload,
                               PayloadMeasure measure) {
  payload->Keep({}, 0, PayloadMeasure::kNothing);
  std::vector<absl::string_view> pieces;
  absl::Status decoded = DecodeSplit(
      buffer, field, header, &payload->slices_,
      [&](Cursor& cursor, uint64_t length) {
        if (!cursor.Pieces(length, &pieces)) return false;
        payload->Keep(pieces, static_cast<size_t>(length), measure);
        return true;
      });
  if (!decoded.ok()) return decoded;
  // A copied payload needs no received slice: they are let go at once, so a
  // payload kept alive (a staged slice) holds its bytes once, not twice.
  if (payload->copied()) payload->slices_.clear();
  if (!payload->view_.empty() || payload->in_pieces()) {
    (payload->copied() ? payloads_copied : payloads_in_place).fetch_add(1);
  }
  return absl::OkStatus();
}

void ReceivedPayload::Keep(const std::vector<absl::string_view>& pieces,
                           size_t size, PayloadMeasure measure) {
  max_abs_ = -1.0f;
  pieces_ = FloatPieces();
  if (pieces.size() <= 1) {  // in place (a later occurrence frees a copy)
    scratch_.reset();
    view_ = pieces.empty() ? absl::string_view() : pieces[0];
    return;
  }
  if (measure == PayloadMeasure::kFloatsLeftInPieces) {
    scratch_.reset();
    view_ = absl::string_view();
    pieces_ = FloatPieces(pieces);
    return;
  }
  scratch_.reset(new char[size]);
  if (measure == PayloadMeasure::kFloatMaxAbs) {
    max_abs_ = GatherMaxAbs(pieces, scratch_.get());
  } else {
    char* at = scratch_.get();
    for (absl::string_view piece : pieces) {
      std::memcpy(at, piece.data(), piece.size());
      at += piece.size();
    }
  }
  view_ = absl::string_view(scratch_.get(), size);
}

void ReceivedPayload::Gather(PayloadMeasure measure) {
  if (!in_pieces()) return;
  const std::vector<absl::string_view> pieces(pieces_.pieces().begin(),
                                              pieces_.pieces().end());
  Keep(pieces, pieces_.bytes(),
       measure == PayloadMeasure::kFloatsLeftInPieces ? PayloadMeasure::kNothing
                                                       : measure);
  slices_.clear();  // the copy needs none of them
}

absl::Status DecodeLeavingPayload(const grpc::ByteBuffer& buffer,
                                  uint32_t field,
                                  google::protobuf::MessageLite* header,
                                  PayloadPieces* payload) {
  payload->pieces_.clear();
  payload->size_ = 0;
  return DecodeSplit(buffer, field, header, &payload->slices_,
                     [&](Cursor& cursor, uint64_t length) {
                       payload->size_ = static_cast<size_t>(length);
                       return cursor.Pieces(length, &payload->pieces_);
                     });
}

void PieceReader::Straddling(size_t n, char* dest) {
  while (n > 0) {
    assert(piece_ < pieces_.size());
    const size_t take = std::min(n, pieces_[piece_].size() - at_);
    std::memcpy(dest, pieces_[piece_].data() + at_, take);
    dest += take;
    n -= take;
    at_ += take;
    if (at_ == pieces_[piece_].size()) {
      ++piece_;
      at_ = 0;
    }
  }
}

void PayloadPieces::CopyTo(char* dest) const {
  for (absl::string_view piece : pieces_) {
    std::memcpy(dest, piece.data(), piece.size());
    dest += piece.size();
  }
}

void PayloadPieces::AssignTo(std::string* out) const {
  out->resize(size_);
  if (size_ > 0) CopyTo(out->data());
}

PayloadCopyCounts ReceivedPayloadCounts() {
  return {payloads_in_place.load(), payloads_copied.load()};
}

}  // namespace taups
