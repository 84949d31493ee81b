#include "worker/trainer/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"

namespace taups::trainer {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes or reports how many were read (< size) or -1.
int64_t ReadFully(gzFile file, uint8_t* out, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<uint64_t>(size - done, 1u << 30));
    const int got = gzread(file, out + done, chunk);
    if (got < 0) return -1;
    if (got == 0) break;
    done += static_cast<uint64_t>(got);
  }
  return static_cast<int64_t>(done);
}

absl::Status ReadError(gzFile file, const std::string& path,
                       const char* what) {
  int code = 0;
  const char* message = gzerror(file, &code);
  return absl::DataLossError(absl::StrCat(
      path, ": ", what, ": ", code == Z_OK ? "unexpected end of file" : message));
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxUbyte(const std::string& path,
                                      int expected_rank) {
  GzFile file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  uint8_t magic[4];
  if (ReadFully(file.get(), magic, 4) != 4) {
    return ReadError(file.get(), path, "reading the magic number");
  }
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": not an unsigned-byte IDX file (magic ", magic[0], " ",
        magic[1], " ", magic[2], " ", magic[3], ")"));
  }
  if (magic[3] != expected_rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": IDX rank ", magic[3], ", expected ", expected_rank));
  }
  IdxArray array;
  uint64_t total = 1;
  for (int d = 0; d < expected_rank; ++d) {
    uint8_t be[4];
    if (ReadFully(file.get(), be, 4) != 4) {
      return ReadError(file.get(), path, "reading the dimensions");
    }
    const uint32_t dim = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) |
                         (uint32_t{be[2]} << 8) | uint32_t{be[3]};
    if (dim == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": dimension ", d, " is 0"));
    }
    total *= dim;
    if (total > kMaxIdxBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": payload larger than ", kMaxIdxBytes, " bytes"));
    }
    array.dims.push_back(dim);
  }
  array.data.resize(total);
  const int64_t got = ReadFully(file.get(), array.data.data(), total);
  if (got < 0) return ReadError(file.get(), path, "reading the payload");
  if (static_cast<uint64_t>(got) != total) {
    return absl::DataLossError(absl::StrCat(path, ": truncated: payload has ",
                                            got, " of ", total, " bytes"));
  }
  uint8_t extra;
  const int64_t trailing = ReadFully(file.get(), &extra, 1);
  if (trailing < 0) return ReadError(file.get(), path, "checking the end");
  if (trailing != 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": trailing bytes after the payload"));
  }
  return array;
}

}  // namespace taups::trainer
