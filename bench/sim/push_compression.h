// SimPushCompression: what one simulated worker's push goes through on its
// way to the shards when the run compresses gradients (SimConfig::compression).
//
// Each slice of the push (the client's PlanDenseSlices) is encoded into one
// block, as the client does: EncodeBlock, or ErrorFeedback::EncodeRange with
// one residual per worker when error feedback is on; index_base = the
// slice's global offset. The block is then read back with GradientFromWire,
// the function the server reads every pushed gradient with (header and
// payload validation included), and what it returns is what the store gets.
//
// Stochastic rounding draws from a seed derived from (run seed, worker, push
// number), so every worker and every push rounds differently and the run is
// still reproducible. Top-k follows the density warm-up of
// CompressionConfig (topk_warmup_pushes) by the worker's push number.
//
// Accumulation (accumulate_steps) is the caller's business: it sums the
// gradients before calling Apply once.
//
// Thread-compatible: one per simulated worker, used by one simulation thread.
#ifndef TAUPS_BENCH_SIM_PUSH_COMPRESSION_H_
#define TAUPS_BENCH_SIM_PUSH_COMPRESSION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "common/error_feedback.h"
#include "taups/compression.h"
#include "worker/src/shard_router.h"

namespace taups::sim {

// Bytes of one or more pushes: the fp32 payload the gradient would take raw,
// and the encoded blocks actually sent (32-byte block headers included).
struct PushBytes {
  uint64_t raw = 0;
  uint64_t wire = 0;
};

class SimPushCompression {
 public:
  // `config` must pass Validate(); `size` is the dense table's size.
  SimPushCompression(const CompressionConfig& config, uint64_t run_seed,
                     uint32_t worker, uint64_t size);

  // Encodes `values` (the whole tensor) slice by slice per `plan`, decodes
  // each block as the server does and writes the decoded floats back into
  // `values`; adds the bytes to `bytes` and counts the push. On error
  // (INVALID_ARGUMENT: a NaN/Inf the scaled codecs refuse) `values` may be
  // partly replaced, the push is still counted and the residual of the
  // failing slice is unchanged.
  absl::Status Apply(absl::Span<float> values,
                     absl::Span<const DenseSlice> plan, PushBytes* bytes);

  uint64_t pushes() const { return pushes_; }
  // The error-feedback residual; empty when error feedback is off.
  absl::Span<const float> residual() const;

 private:
  CodecOptions OptionsFor(uint64_t push_index) const;

  const CompressionConfig config_;
  const uint64_t run_seed_;
  const uint32_t worker_;
  std::optional<ErrorFeedback> feedback_;
  uint64_t pushes_ = 0;
  std::string block_;           // scratch: one slice's block
  std::vector<float> decoded_;  // scratch: what the server decodes
};

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_PUSH_COMPRESSION_H_
