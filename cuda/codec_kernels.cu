// DeviceCodec: the order of work for each codec. Headers are made and parsed
// on the host with the CPU code (HeaderFor, WriteHeader, ParseHeader);
// payloads are made and read by the kernels of codec_value_kernels.cu and
// codec_topk_kernels.cu. A refused block's message comes from the CPU
// decoder, so it is the CPU's word for word.
#include "cuda/codec_kernels.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/codec.h"
#include "common/status_macros.h"
#include "cuda/codec_topk_kernels.h"
#include "cuda/codec_value_kernels.h"
#include "cuda/cuda_device.h"
#include "cuda/cuda_status.h"
#include "cuda/device_bytes.h"

namespace taups::cuda {
namespace {

// What a call reads back from the device when its work is done.
struct StatusWords {
  unsigned long long first_bad;  // encode: lowest refused index
  uint32_t decode_error;         // decode: 1 when the block is invalid
  uint32_t unused;
};

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool Aligned4(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 4 == 0;
}

absl::Status CheckValues(const void* values, uint64_t n) {
  if (n > kMaxDeviceElements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device codec: ", n, " values, more than the ", kMaxDeviceElements,
        " a device block may hold"));
  }
  if (n > 0 && values == nullptr) {
    return absl::InvalidArgumentError("device codec: null device pointer");
  }
  return absl::OkStatus();
}

// The CPU codec's message for a refused input (common/codec.cc).
absl::Status NonFinite(uint64_t index) {
  return absl::InvalidArgumentError(absl::StrCat(
      "cannot encode: value ", index,
      " is NaN or infinite (scaled codecs need finite inputs)"));
}

// The status taups::DecodeBlock gives a block the device refused.
absl::Status HostRefusal(absl::string_view block, const BlockHeader& header) {
  std::vector<float> out(header.element_count);
  absl::Status status = DecodeBlock(block, header, absl::MakeSpan(out));
  if (status.ok()) {
    return absl::InternalError(
        "device codec: the device refused a block the CPU decoder accepts");
  }
  return status;
}

}  // namespace

struct DeviceCodec::Impl {
  ~Impl() {
    if (stream != nullptr) cudaStreamDestroy(stream);
    if (host_status != nullptr) cudaFreeHost(host_status);
  }

  absl::Status Activate() {
    return CudaStatus(cudaSetDevice(device), "cudaSetDevice");
  }

  StatusWords* device_status() const { return status.as<StatusWords>(); }

  absl::Status ResetStatus() {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemsetAsync(&device_status()->first_bad, 0xff,
                        sizeof(unsigned long long), stream),
        "cudaMemsetAsync(status)"));
    return CudaStatus(cudaMemsetAsync(&device_status()->decode_error, 0,
                                      sizeof(uint32_t), stream),
                      "cudaMemsetAsync(status)");
  }

  // Copies the status words back and waits for all work of the call.
  absl::Status Finish() {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(host_status, device_status(), sizeof(StatusWords),
                        cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync(status)"));
    return CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  }

  absl::Status FinishEncode() {
    RETURN_IF_ERROR(Finish());
    if (host_status->first_bad != kNoBadIndex) {
      return NonFinite(host_status->first_bad);
    }
    return absl::OkStatus();
  }

  absl::Status ReserveBucketMax(uint64_t m, uint32_t bucket) {
    if (bucket == 0 || m == 0) return absl::OkStatus();
    return bucket_max.Reserve(sizeof(uint32_t) * CeilDiv(m, bucket));
  }

  // Enqueues the kernels writing the payload that follows `header` for the
  // values of `source` to `payload` (device, 4-byte aligned); with
  // `residual`, error feedback's update too.
  absl::Status EnqueuePayload(ValueSource source, float* residual,
                              const BlockHeader& header,
                              const CodecOptions& options, uint64_t index_base,
                              uint8_t* payload) {
    const uint32_t n = static_cast<uint32_t>(header.element_count);
    const bool stochastic = options.rounding == Rounding::kStochastic;
    unsigned long long* first_bad = &device_status()->first_bad;
    if (header.codec != CodecKind::kTopK) {
      RETURN_IF_ERROR(ReserveBucketMax(n, header.bucket_size));
      return CudaStatus(
          EnqueueEncodeValues(source, n, header.codec, header.bucket_size,
                              stochastic, options.seed, index_base, payload,
                              residual, bucket_max.as<uint32_t>(), first_bad,
                              stream),
          "device codec: encode kernels");
    }
    const uint32_t k = static_cast<uint32_t>(header.entry_count);
    const float* values = source.a;
    if (source.b != nullptr) {
      RETURN_IF_ERROR(corrected.Reserve(sizeof(float) * uint64_t{n}));
      RETURN_IF_ERROR(CudaStatus(
          EnqueueAdd(source.a, source.b, n, corrected.as<float>(), stream),
          "device codec: corrected gradient"));
      values = corrected.as<float>();
    }
    uint32_t* kept = reinterpret_cast<uint32_t*>(payload);
    RETURN_IF_ERROR(EnqueueSelectTopK(values, n, k, kept, &topk, stream));
    RETURN_IF_ERROR(kept_values.Reserve(sizeof(float) * uint64_t{k}));
    RETURN_IF_ERROR(CudaStatus(
        EnqueueGather(values, kept, k, kept_values.as<float>(), stream),
        "device codec: top-k gather"));
    float* kept_errors = nullptr;
    if (residual != nullptr) {
      RETURN_IF_ERROR(kept_residual.Reserve(sizeof(float) * uint64_t{k}));
      kept_errors = kept_residual.as<float>();
    }
    RETURN_IF_ERROR(ReserveBucketMax(k, header.bucket_size));
    // The kept values are numbered by their entry position, as on the CPU.
    RETURN_IF_ERROR(CudaStatus(
        EnqueueEncodeValues(ValueSource{kept_values.as<float>(), nullptr}, k,
                            header.value_codec, header.bucket_size, stochastic,
                            options.seed, 0, payload + 4 * uint64_t{k},
                            kept_errors, bucket_max.as<uint32_t>(), first_bad,
                            stream),
        "device codec: top-k value kernels"));
    if (residual == nullptr) return absl::OkStatus();
    return CudaStatus(EnqueueTopKResidual(values, n, kept, kept_errors, k,
                                          residual, first_bad, stream),
                      "device codec: top-k residual");
  }

  absl::Status EnqueueDecodePayload(const uint8_t* payload,
                                    const BlockHeader& header, float* out) {
    const uint32_t n = static_cast<uint32_t>(header.element_count);
    uint32_t* error = &device_status()->decode_error;
    if (header.codec != CodecKind::kTopK) {
      return CudaStatus(EnqueueDecodeValues(payload, n, header.codec,
                                            header.bucket_size, out, error,
                                            stream),
                        "device codec: decode kernels");
    }
    const uint32_t k = static_cast<uint32_t>(header.entry_count);
    RETURN_IF_ERROR(kept_values.Reserve(sizeof(float) * uint64_t{k}));
    RETURN_IF_ERROR(CudaStatus(
        EnqueueDecodeValues(payload + 4 * uint64_t{k}, k, header.value_codec,
                            header.bucket_size, kept_values.as<float>(), error,
                            stream),
        "device codec: top-k value decode"));
    return CudaStatus(
        EnqueueScatterKept(reinterpret_cast<const uint32_t*>(payload),
                           kept_values.as<float>(), k, n, out, error, stream),
        "device codec: top-k scatter");
  }

  // Encode and EncodeWithFeedback: `source` and `residual` as for
  // EnqueuePayload; the block is written to host memory.
  absl::Status EncodeToHost(ValueSource source, float* residual, uint64_t n,
                            const CodecOptions& options, uint64_t index_base,
                            std::string* block) {
    RETURN_IF_ERROR(options.Validate());
    RETURN_IF_ERROR(CheckValues(source.a, n));
    const BlockHeader header = HeaderFor(options, n);
    const uint64_t bytes = BlockBytes(header);
    block->resize(bytes);
    WriteHeader(header, block->data());
    const uint64_t payload_bytes = bytes - kBlockHeaderBytes;
    if (payload_bytes == 0) return absl::OkStatus();
    RETURN_IF_ERROR(Activate());
    char* host_payload = block->data() + kBlockHeaderBytes;
    if (options.codec == CodecKind::kNone && residual == nullptr) {
      RETURN_IF_ERROR(CudaStatus(
          cudaMemcpyAsync(host_payload, source.a, payload_bytes,
                          cudaMemcpyDeviceToHost, stream),
          "cudaMemcpyAsync(payload)"));
      return CudaStatus(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    RETURN_IF_ERROR(payload.Reserve(CeilDiv(payload_bytes, 4) * 4));
    RETURN_IF_ERROR(ResetStatus());
    RETURN_IF_ERROR(EnqueuePayload(source, residual, header, options,
                                   index_base, payload.as<uint8_t>()));
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(host_payload, payload.as<uint8_t>(), payload_bytes,
                        cudaMemcpyDeviceToHost, stream),
        "cudaMemcpyAsync(payload)"));
    return FinishEncode();
  }

  int device = 0;
  std::string description;
  cudaStream_t stream = nullptr;
  StatusWords* host_status = nullptr;  // pinned
  DeviceBytes status;         // one StatusWords
  DeviceBytes payload;        // payloads of host blocks
  DeviceBytes corrected;      // top-k error feedback: gradient + residual
  DeviceBytes bucket_max;     // per-bucket maxima, as float bits
  DeviceBytes kept_values;    // top-k values, in entry order
  DeviceBytes kept_residual;  // top-k error feedback: per kept entry
  TopKScratch topk;
};

DeviceCodec::DeviceCodec(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceCodec::~DeviceCodec() = default;

absl::StatusOr<std::unique_ptr<DeviceCodec>> DeviceCodec::Create(int device) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  ASSIGN_OR_RETURN(impl->description, DeviceDescription(device));
  RETURN_IF_ERROR(impl->Activate());
  // A blocking stream: ordered after work on the legacy default stream.
  RETURN_IF_ERROR(
      CudaStatus(cudaStreamCreate(&impl->stream), "cudaStreamCreate"));
  void* pinned = nullptr;
  RETURN_IF_ERROR(CudaStatus(cudaMallocHost(&pinned, sizeof(StatusWords)),
                             "cudaMallocHost"));
  impl->host_status = static_cast<StatusWords*>(pinned);
  RETURN_IF_ERROR(impl->status.Reserve(sizeof(StatusWords)));
  return std::unique_ptr<DeviceCodec>(new DeviceCodec(std::move(impl)));
}

const std::string& DeviceCodec::device_description() const {
  return impl_->description;
}

absl::Status DeviceCodec::Encode(const float* device_values, uint64_t n,
                                 const CodecOptions& options,
                                 uint64_t index_base, std::string* block) {
  return impl_->EncodeToHost(ValueSource{device_values, nullptr}, nullptr, n,
                             options, index_base, block);
}

absl::Status DeviceCodec::EncodeWithFeedback(const float* device_gradient,
                                             float* device_residual,
                                             uint64_t n, uint64_t offset,
                                             const CodecOptions& options,
                                             std::string* block) {
  RETURN_IF_ERROR(CheckValues(device_residual, n));
  return impl_->EncodeToHost(ValueSource{device_gradient, device_residual},
                             device_residual, n, options, offset, block);
}

absl::Status DeviceCodec::EncodeToDeviceBlock(const float* device_values,
                                              uint64_t n,
                                              const CodecOptions& options,
                                              uint64_t index_base,
                                              char* device_block) {
  Impl& s = *impl_;
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(CheckValues(device_values, n));
  if (device_block == nullptr || !Aligned4(device_block)) {
    return absl::InvalidArgumentError(
        "device codec: the device block must be 4-byte aligned");
  }
  const BlockHeader header = HeaderFor(options, n);
  char header_bytes[kBlockHeaderBytes];
  WriteHeader(header, header_bytes);
  RETURN_IF_ERROR(s.Activate());
  // From pageable memory: returns once the bytes are staged.
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpyAsync(device_block, header_bytes, kBlockHeaderBytes,
                      cudaMemcpyHostToDevice, s.stream),
      "cudaMemcpyAsync(header)"));
  uint8_t* payload =
      reinterpret_cast<uint8_t*>(device_block) + kBlockHeaderBytes;
  RETURN_IF_ERROR(s.ResetStatus());
  if (n > 0) {
    RETURN_IF_ERROR(s.EnqueuePayload(ValueSource{device_values, nullptr},
                                     nullptr, header, options, index_base,
                                     payload));
  }
  return s.FinishEncode();
}

absl::Status DeviceCodec::Decode(absl::string_view block, float* device_out,
                                 uint64_t n) {
  Impl& s = *impl_;
  RETURN_IF_ERROR(CheckValues(device_out, n));
  ASSIGN_OR_RETURN(const BlockHeader header, ParseHeader(block, n));
  if (header.element_count != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("encoded block: holds ", header.element_count,
                     " values, expected ", n));
  }
  if (n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(s.Activate());
  const char* host_payload = block.data() + kBlockHeaderBytes;
  const uint64_t payload_bytes = block.size() - kBlockHeaderBytes;
  if (header.codec == CodecKind::kNone) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(device_out, host_payload, payload_bytes,
                        cudaMemcpyHostToDevice, s.stream),
        "cudaMemcpyAsync(payload)"));
    return CudaStatus(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
  }
  // A top-k block may keep nothing (k = 0): then there is no payload.
  RETURN_IF_ERROR(s.payload.Reserve(CeilDiv(payload_bytes, 4) * 4 + 4));
  if (payload_bytes > 0) {
    RETURN_IF_ERROR(CudaStatus(
        cudaMemcpyAsync(s.payload.as<uint8_t>(), host_payload, payload_bytes,
                        cudaMemcpyHostToDevice, s.stream),
        "cudaMemcpyAsync(payload)"));
  }
  RETURN_IF_ERROR(s.ResetStatus());
  RETURN_IF_ERROR(
      s.EnqueueDecodePayload(s.payload.as<uint8_t>(), header, device_out));
  RETURN_IF_ERROR(s.Finish());
  if (s.host_status->decode_error != 0) return HostRefusal(block, header);
  return absl::OkStatus();
}

absl::Status DeviceCodec::DecodeDeviceBlock(const char* device_block,
                                            const BlockHeader& header,
                                            float* device_out) {
  Impl& s = *impl_;
  const uint64_t n = header.element_count;
  RETURN_IF_ERROR(CheckValues(device_out, n));
  if (device_block == nullptr || !Aligned4(device_block)) {
    return absl::InvalidArgumentError(
        "device codec: the device block must be 4-byte aligned");
  }
  if (n == 0) return absl::OkStatus();
  RETURN_IF_ERROR(s.Activate());
  const uint8_t* payload =
      reinterpret_cast<const uint8_t*>(device_block) + kBlockHeaderBytes;
  RETURN_IF_ERROR(s.ResetStatus());
  RETURN_IF_ERROR(s.EnqueueDecodePayload(payload, header, device_out));
  RETURN_IF_ERROR(s.Finish());
  if (s.host_status->decode_error == 0) return absl::OkStatus();
  // Refused: fetch the block so the CPU decoder can name the problem.
  std::string host_block(BlockBytes(header), '\0');
  RETURN_IF_ERROR(CudaStatus(
      cudaMemcpy(host_block.data(), device_block, host_block.size(),
                 cudaMemcpyDeviceToHost),
      "cudaMemcpy(block)"));
  return HostRefusal(host_block, header);
}

namespace {

absl::StatusOr<std::unique_ptr<DeviceCodec>> CodecOnCurrentDevice() {
  int device = 0;
  RETURN_IF_ERROR(CudaStatus(cudaGetDevice(&device), "cudaGetDevice"));
  return DeviceCodec::Create(device);
}

}  // namespace

absl::Status EncodeOnDevice(const float* device_values, uint64_t n,
                            const CodecOptions& options, uint64_t index_base,
                            std::string* block) {
  ASSIGN_OR_RETURN(auto codec, CodecOnCurrentDevice());
  return codec->Encode(device_values, n, options, index_base, block);
}

absl::Status EncodeWithFeedbackOnDevice(const float* device_gradient,
                                        float* device_residual, uint64_t n,
                                        uint64_t offset,
                                        const CodecOptions& options,
                                        std::string* block) {
  ASSIGN_OR_RETURN(auto codec, CodecOnCurrentDevice());
  return codec->EncodeWithFeedback(device_gradient, device_residual, n, offset,
                                   options, block);
}

absl::Status DecodeToDevice(absl::string_view block, float* device_out,
                            uint64_t n) {
  ASSIGN_OR_RETURN(auto codec, CodecOnCurrentDevice());
  return codec->Decode(block, device_out, n);
}

}  // namespace taups::cuda
