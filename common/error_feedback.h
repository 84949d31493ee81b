// Error feedback for compressed pushes: what encoding loses is remembered and
// added to the next gradient before it is encoded, so over many pushes the
// server receives the whole gradient sum (1-bit SGD, Seide et al. 2014; EF-SGD,
// Karimireddy et al. 2019).
//
//   corrected = gradient + residual
//   block     = encode(corrected)
//   residual  = corrected - decode(block)
//
// Invariant (to float rounding): sum of decoded pushes + residual = sum of the
// raw gradients.
//
// One ErrorFeedback covers one tensor of `size` floats (one dense table on one
// worker). A push that may yet be refused encodes with EncodeRangeInto, which
// leaves the residual alone, and stores what it computed once the push was
// delivered; EncodeRange does both at once.
//
// Thread-safety: EncodeRange and Store calls on disjoint ranges may run
// concurrently (slices of one push), and EncodeRangeInto calls with each
// other; nothing else may overlap a call that writes the residual.
#ifndef TAUPS_COMMON_ERROR_FEEDBACK_H_
#define TAUPS_COMMON_ERROR_FEEDBACK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "taups/compression.h"

namespace taups {

class ErrorFeedback {
 public:
  explicit ErrorFeedback(size_t size) : residual_(size, 0.0f) {}

  // Encodes gradient (the tensor's elements [offset, offset + size)) plus the
  // residual of that range into `block`, and updates the residual. The
  // residual is left unchanged when encoding fails.
  absl::Status EncodeRange(absl::Span<const float> gradient, size_t offset,
                           const CodecOptions& options, std::string* block);

  // The same encoding, but the residual stays as it is: what the range's
  // residual would become is written to `residual_after` (gradient.size()
  // floats), for Store or SwapResidual once the block was delivered.
  absl::Status EncodeRangeInto(absl::Span<const float> gradient, size_t offset,
                               const CodecOptions& options, std::string* block,
                               absl::Span<float> residual_after) const;

  // Sets the residual's elements [offset, offset + values.size()) to
  // `values`. The range must lie inside the tensor.
  void Store(size_t offset, absl::Span<const float> values);
  // Exchanges the residual with `other` (of size() floats): the whole
  // tensor's Store without a copy.
  void SwapResidual(std::vector<float>& other);

  absl::Span<const float> residual() const { return residual_; }
  size_t size() const { return residual_.size(); }
  void Reset();

 private:
  std::vector<float> residual_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_ERROR_FEEDBACK_H_
