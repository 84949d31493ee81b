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
// worker). Thread-safety: EncodeRange calls on disjoint ranges may run
// concurrently (slices of one push); nothing else may overlap them.
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

  absl::Span<const float> residual() const { return residual_; }
  size_t size() const { return residual_.size(); }
  void Reset();

 private:
  std::vector<float> residual_;
};

}  // namespace taups

#endif  // TAUPS_COMMON_ERROR_FEEDBACK_H_
