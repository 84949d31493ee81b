// payload_receive_bench: the shard's first touch of a received dense push
// (proto/raw_payload.h), on one core, without the network. A PushDense
// message is cut into slices the way gRPC delivers it (one per HTTP/2 data
// frame) and decoded these ways, one after another in one run:
//   gather+scan  DecodeWithPayload, then MaxAbs over the floats (the finite
//                check's own pass: the shard before the fused copy)
//   fused        DecodeWithPayload with PayloadMeasure::kFloatMaxAbs (the
//                max |g| computed in the copy's loop: the shard now)
//   pieces max   DecodeLeavingPayload, then MaxAbsOfPieces over the received
//                pieces, read only (common/float_pieces.h: no gather)
//   memcpy       one memcpy of the payload's bytes (the floor)
// and, with the apply after the finite check (an SGD step w -= lr * g over a
// table of the payload's size, standing in for the element-wise rules):
//   gather+apply fused, then the step over the gathered floats
//   pieces+apply pieces max, then the step run by run (ForEachFloatRun:
//                misaligned floats copied through a bounce block)
//   pieces+unaligned  the same, the step reading each run's bytes with
//                unaligned loads (ForEachFloatBytes: no bounce)
// The two applies are checked to leave the same bits first.
// GB/s = payload bytes per CPU-second of this single-threaded process.
//
//   payload_receive_bench --sizes=1MiB,16MiB --frame=16KiB --trials=5
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_main.h"
#include "bench/byte_size.h"
#include "bench/machine_info.h"
#include "bench/measure.h"
#include "bench/report_table.h"
#include "common/status_macros.h"
#include "common/float_pieces.h"
#include "common/vector_math.h"
#include "proto/raw_payload.h"
#include "ps.pb.h"

ABSL_FLAG(std::string, sizes, "1MiB,16MiB", "Payload sizes (bytes).");
ABSL_FLAG(std::string, frame, "16KiB",
          "Slice size the message is cut into (gRPC's HTTP/2 frames).");
ABSL_FLAG(double, min_seconds, 0.3,
          "Each figure repeats its operation for at least this many seconds.");
ABSL_FLAG(int64_t, min_iters, 3, "Each figure repeats at least this often.");
ABSL_FLAG(int, trials, 5, "Timed runs per figure; the median is reported.");
ABSL_FLAG(bool, aligned_floats, false,
          "Lengthen the table name so the floats start 4-aligned in every "
          "slice (by default they start 1-3 bytes off, as behind gRPC's "
          "frame headers, and the piecewise apply copies through a bounce).");
ABSL_FLAG(std::string, format, "text", "text or markdown.");

namespace taups::bench {
namespace {

grpc::ByteBuffer Sliced(const std::string& bytes, size_t piece) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += piece) {
    slices.emplace_back(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status Run() {
  ASSIGN_OR_RETURN(const TableFormat format,
                   ParseTableFormat(absl::GetFlag(FLAGS_format)));
  const MeasureOptions measure = MeasureOptionsFrom(
      absl::GetFlag(FLAGS_min_seconds), absl::GetFlag(FLAGS_min_iters),
      absl::GetFlag(FLAGS_trials));
  ASSIGN_OR_RETURN(const size_t frame, ParseByteSize(absl::GetFlag(FLAGS_frame)));
  std::vector<std::string> lines = DescribeMachine();
  lines.push_back(absl::StrCat("flags: --sizes=", absl::GetFlag(FLAGS_sizes),
                               " --frame=", absl::GetFlag(FLAGS_frame),
                               " --trials=", absl::GetFlag(FLAGS_trials),
                               " --aligned_floats=",
                               absl::GetFlag(FLAGS_aligned_floats)));
  lines.push_back(
      "GB/s = payload bytes per CPU-second (one thread), 1 GB = 1e9 B; "
      "gather+scan = decode then MaxAbs; fused = decode measuring max |g| "
      "in the copy; pieces max = decode leaving the payload in its slices, "
      "then max |g| over them read only; memcpy = one copy of the payload; "
      "+apply = then an SGD step over a table of the payload's size; "
      "+unaligned = the step reading the pieces with unaligned loads");
  PrintReportHeader(format, "tauPS received-payload benchmark (one core)",
                    lines);
  ReportTable table({"size", "gather+scan GB/s", "fused GB/s", "÷ gather+scan",
                     "pieces max GB/s", "÷ fused", "memcpy GB/s",
                     "fused ÷ memcpy", "gather+apply GB/s", "pieces+apply GB/s",
                     "÷ gather+apply", "pieces+unaligned GB/s",
                     "÷ gather+apply"},
                    /*left_columns=*/1);
  for (absl::string_view size_text :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    ASSIGN_OR_RETURN(const size_t size, ParseByteSize(size_text));
    const size_t n = size / sizeof(float);
    std::vector<float> g(n);
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 1e-3f);
    for (float& x : g) x = normal(rng);
    v1::PushDenseRequest request;
    request.set_table("weights");
    request.set_offset(0);
    request.mutable_origin()->set_worker_id(1);
    request.set_gradient(reinterpret_cast<const char*>(g.data()), 4 * n);
    while (absl::GetFlag(FLAGS_aligned_floats) &&
           (request.ByteSizeLong() - 4 * n) % 4 != 0) {
      request.mutable_table()->push_back('x');
    }
    const grpc::ByteBuffer buffer = Sliced(request.SerializeAsString(), frame);
    const uint32_t field = v1::PushDenseRequest::kGradientFieldNumber;
    const float expected = MaxAbs(g);
    float seen_scan = 0, seen_fused = 0;
    auto scan = [&]() -> absl::Status {
      v1::PushDenseRequest header;
      ReceivedPayload payload;
      RETURN_IF_ERROR(DecodeWithPayload(buffer, field, &header, &payload));
      // A gathered payload is 4-aligned (its own allocation).
      seen_scan = MaxAbs(absl::MakeConstSpan(
          reinterpret_cast<const float*>(payload.bytes().data()), n));
      return absl::OkStatus();
    };
    auto fused = [&]() -> absl::Status {
      v1::PushDenseRequest header;
      ReceivedPayload payload;
      RETURN_IF_ERROR(DecodeWithPayload(buffer, field, &header, &payload,
                                        PayloadMeasure::kFloatMaxAbs));
      seen_fused = payload.max_abs();
      return absl::OkStatus();
    };
    float seen_pieces = 0;
    auto pieces_max = [&]() -> absl::Status {
      v1::PushDenseRequest header;
      PayloadPieces payload;
      RETURN_IF_ERROR(DecodeLeavingPayload(buffer, field, &header, &payload));
      seen_pieces = MaxAbsOfPieces(payload.pieces());
      return absl::OkStatus();
    };
    // The step both applies take, over [first, first + g.size()) of `w`.
    auto step = [](float* __restrict w, const float* __restrict g, size_t m) {
      for (size_t i = 0; i < m; ++i) w[i] -= 0.01f * g[i];
    };
    std::vector<float> w_gather(n, 0.5f), w_pieces(n, 0.5f);
    auto gather_apply = [&]() -> absl::Status {
      v1::PushDenseRequest header;
      ReceivedPayload payload;
      RETURN_IF_ERROR(DecodeWithPayload(buffer, field, &header, &payload,
                                        PayloadMeasure::kFloatMaxAbs));
      if (payload.max_abs() == __builtin_huge_valf()) {
        return absl::InternalError("not finite");
      }
      step(w_gather.data(),
           reinterpret_cast<const float*>(payload.bytes().data()), n);
      KeepMemory(w_gather.data());
      return absl::OkStatus();
    };
    // Decodes leaving the payload in its slices and checks it finite.
    auto decode_pieces = [&](PayloadPieces* payload) -> absl::Status {
      v1::PushDenseRequest header;
      RETURN_IF_ERROR(DecodeLeavingPayload(buffer, field, &header, payload));
      if (MaxAbsOfPieces(payload->pieces()) == __builtin_huge_valf()) {
        return absl::InternalError("not finite");
      }
      return absl::OkStatus();
    };
    auto pieces_apply = [&]() -> absl::Status {
      PayloadPieces payload;
      RETURN_IF_ERROR(decode_pieces(&payload));
      ForEachFloatRun(payload.pieces(),
                      [&](size_t first, absl::Span<const float> run) {
                        step(w_pieces.data() + first, run.data(), run.size());
                      });
      KeepMemory(w_pieces.data());
      return absl::OkStatus();
    };
    std::vector<float> w_bytes(n, 0.5f);
    auto step_bytes = [](float* __restrict w, const char* __restrict g,
                         size_t m) {
      for (size_t i = 0; i < m; ++i) {
        float x;
        std::memcpy(&x, g + 4 * i, sizeof(x));
        w[i] -= 0.01f * x;
      }
    };
    auto pieces_unaligned = [&]() -> absl::Status {
      PayloadPieces payload;
      RETURN_IF_ERROR(decode_pieces(&payload));
      ForEachFloatBytes(payload.pieces(),
                        [&](size_t first, const char* bytes, size_t m) {
                          step_bytes(w_bytes.data() + first, bytes, m);
                        });
      KeepMemory(w_bytes.data());
      return absl::OkStatus();
    };
    RETURN_IF_ERROR(gather_apply());
    RETURN_IF_ERROR(pieces_apply());
    RETURN_IF_ERROR(pieces_unaligned());
    if (std::memcmp(w_gather.data(), w_pieces.data(), 4 * n) != 0 ||
        std::memcmp(w_gather.data(), w_bytes.data(), 4 * n) != 0) {
      return absl::InternalError("the piecewise apply left other bits");
    }
    std::vector<char> dst(4 * n);
    auto copy = [&]() -> absl::Status {
      std::memcpy(dst.data(), g.data(), 4 * n);
      KeepMemory(dst.data());
      return absl::OkStatus();
    };
    ASSIGN_OR_RETURN(Measurement a, Measure(measure, scan));
    ASSIGN_OR_RETURN(Measurement b, Measure(measure, fused));
    ASSIGN_OR_RETURN(Measurement p, Measure(measure, pieces_max));
    ASSIGN_OR_RETURN(Measurement c, Measure(measure, copy));
    ASSIGN_OR_RETURN(Measurement ga_m, Measure(measure, gather_apply));
    ASSIGN_OR_RETURN(Measurement pa_m, Measure(measure, pieces_apply));
    ASSIGN_OR_RETURN(Measurement pu_m, Measure(measure, pieces_unaligned));
    if (seen_scan != expected || seen_fused != expected ||
        seen_pieces != expected) {
      return absl::InternalError("a decode measured the wrong max |g|");
    }
    const double bytes = 4.0 * static_cast<double>(n);
    const double ga = a.GigabytesPerCpuSecond(bytes);
    const double gb = b.GigabytesPerCpuSecond(bytes);
    const double gc = c.GigabytesPerCpuSecond(bytes);
    const double gp = p.GigabytesPerCpuSecond(bytes);
    const double gga = ga_m.GigabytesPerCpuSecond(bytes);
    const double gpa = pa_m.GigabytesPerCpuSecond(bytes);
    const double gpu = pu_m.GigabytesPerCpuSecond(bytes);
    table.AddRow({std::string(size_text), FormatNumber(ga), FormatNumber(gb),
                  absl::StrFormat("%.2f×", gb / ga), FormatNumber(gp),
                  absl::StrFormat("%.2f×", gp / gb), FormatNumber(gc),
                  absl::StrFormat("%.2f×", gb / gc), FormatNumber(gga),
                  FormatNumber(gpa), absl::StrFormat("%.2f×", gpa / gga),
                  FormatNumber(gpu), absl::StrFormat("%.2f×", gpu / gga)});
  }
  table.Print(format, stdout);
  return absl::OkStatus();
}

}  // namespace
}  // namespace taups::bench

int main(int argc, char** argv) {
  return taups::bench::BenchMain(
      argc, argv, "payload_receive_bench",
      "Measures the decode of a received dense push: gather then scan, "
      "against the fused gather that measures max |g|, the read-only "
      "max |g| over the received pieces, memcpy, and gather+apply against "
      "the apply run over the pieces.\n"
      "  payload_receive_bench --sizes=1MiB,16MiB --frame=16KiB",
      taups::bench::Run);
}
