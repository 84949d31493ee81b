#include "common/error_feedback.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/codec_math.h"

namespace taups {

absl::Status ErrorFeedback::EncodeRange(absl::Span<const float> gradient,
                                        size_t offset,
                                        const CodecOptions& options,
                                        std::string* block) {
  std::vector<float> after(gradient.size());
  absl::Status encoded =
      EncodeRangeInto(gradient, offset, options, block, absl::MakeSpan(after));
  if (encoded.ok()) Store(offset, after);
  return encoded;
}

absl::Status ErrorFeedback::EncodeRangeInto(
    absl::Span<const float> gradient, size_t offset,
    const CodecOptions& options, std::string* block,
    absl::Span<float> residual_after) const {
  if (offset > residual_.size() || gradient.size() > residual_.size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "error feedback: range [", offset, ", ", offset + gradient.size(),
        ") passes the tensor's ", residual_.size(), " elements"));
  }
  if (residual_after.size() != gradient.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "error feedback: room for ", residual_after.size(),
        " residual values, the range holds ", gradient.size()));
  }
  const float* residual = residual_.data() + offset;
  // Holds gradient + residual first, then what encoding it loses.
  const absl::Span<float> corrected = residual_after;
  for (size_t i = 0; i < gradient.size(); ++i) {
    corrected[i] = codec_math::FeedbackSum(gradient[i], residual[i]);
  }
  absl::Status encoded = EncodeBlock(corrected, options, offset, block);
  if (!encoded.ok()) return encoded;
  absl::StatusOr<std::vector<float>> sent =
      DecodeToVector(*block, gradient.size());
  if (!sent.ok()) return sent.status();
  for (size_t i = 0; i < gradient.size(); ++i) corrected[i] -= (*sent)[i];
  return absl::OkStatus();
}

void ErrorFeedback::Store(size_t offset, absl::Span<const float> values) {
  std::copy(values.begin(), values.end(), residual_.begin() + offset);
}

void ErrorFeedback::SwapResidual(std::vector<float>& other) {
  residual_.swap(other);
}

void ErrorFeedback::Reset() {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

}  // namespace taups
