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
  if (offset > residual_.size() || gradient.size() > residual_.size() - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "error feedback: range [", offset, ", ", offset + gradient.size(),
        ") passes the tensor's ", residual_.size(), " elements"));
  }
  float* residual = residual_.data() + offset;
  std::vector<float> corrected(gradient.size());
  for (size_t i = 0; i < gradient.size(); ++i) {
    corrected[i] = codec_math::FeedbackSum(gradient[i], residual[i]);
  }
  absl::Status encoded = EncodeBlock(corrected, options, offset, block);
  if (!encoded.ok()) return encoded;
  absl::StatusOr<std::vector<float>> sent =
      DecodeToVector(*block, gradient.size());
  if (!sent.ok()) return sent.status();
  for (size_t i = 0; i < gradient.size(); ++i) {
    residual[i] = corrected[i] - (*sent)[i];
  }
  return absl::OkStatus();
}

void ErrorFeedback::Reset() {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

}  // namespace taups
