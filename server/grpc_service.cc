#include "server/grpc_service.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "common/log_rate_limiter.h"
#include "proto/raw_payload.h"
#include "server/answer_buffers.h"
#include "server/answers_in_flight.h"
#include "server/grpc_auth.h"
#include "server/lent_values.h"
#include "server/pull_waiters.h"
#include "wire_convert.h"

namespace taups {
namespace {

// A call answered where it arrives: the authorization's refusal, or the
// call's own status in gRPC's terms.
grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* context,
                                 grpc::Status allowed,
                                 absl::FunctionRef<absl::Status()> call) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(allowed.ok() ? ToGrpcStatus(call()) : allowed);
  return reactor;
}

// One pull call. Answered at once when its policy lets it read; otherwise
// parked on its partition (no thread held) and tried again, on the
// executor, each time it is woken with OK; any other wake is its answer.
// A cancelled call releases its parked pull. Deletes itself in OnDone.
// `hooks.encode`, when set, runs once the response is filled, before an
// OK answer (a raw method's serialization); its status is the answer.
// `hooks.room` and `hooks.landed` are passed to the pull (ShardCalls::
// ValuesRoom); `hooks.unanswered`, when set, runs after an attempt that
// parked or failed (to give the room back while the call waits).
template <typename Request, typename Response>
class PullReactor final : public grpc::ServerUnaryReactor {
 public:
  using Pull = absl::StatusOr<ParkedPull> (ShardCalls::*)(
      const Request&, absl::Time, PullWaiters::Wake*, Response*,
      const ShardCalls::ValuesRoom*, bool*);
  struct Hooks {
    std::function<grpc::Status()> encode;
    const ShardCalls::ValuesRoom* room = nullptr;
    bool* landed = nullptr;
    std::function<void()> unanswered;
  };

  PullReactor(ShardCalls* calls, Pull pull, CallExecutor* executor,
              const Request* request, Response* response, absl::Time deadline,
              Hooks hooks)
      : calls_(calls), pull_(pull), executor_(executor), request_(request),
        response_(response), deadline_(deadline), hooks_(std::move(hooks)) {}

  void Start(const grpc::Status& allowed) {
    if (!allowed.ok()) {
      Finish(allowed);
      return;
    }
    Attempt();
  }

  void OnCancel() override {
    ParkedPull parked;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      parked = parked_;
    }
    parked.Cancel();  // a no-op unless it is still parked
  }

  void OnDone() override { delete this; }

 private:
  void Attempt() {
    std::optional<grpc::Status> answer;
    {
      // Held while parking, so a wake (run on the executor) cannot try
      // again before parked_ names this parking.
      absl::MutexLock lock(&mu_);
      if (cancelled_) {
        answer = grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled");
      } else {
        PullWaiters::Wake wake = [this](absl::Status why) {
          executor_->Post([this, why = std::move(why)]() mutable {
            Woken(std::move(why));
          });
        };
        absl::StatusOr<ParkedPull> pulled = (calls_->*pull_)(
            *request_, deadline_, &wake, response_, hooks_.room,
            hooks_.landed);
        if (!pulled.ok()) {
          answer = ToGrpcStatus(pulled.status());
        } else if (!pulled->parked()) {
          answer = hooks_.encode ? hooks_.encode() : grpc::Status::OK;
        } else {
          parked_ = *pulled;
        }
        if (!(pulled.ok() && !pulled->parked()) && hooks_.unanswered) {
          hooks_.unanswered();
        }
      }
    }
    if (answer.has_value()) Finish(*answer);  // never under a lock
  }

  void Woken(absl::Status why) {
    {
      absl::MutexLock lock(&mu_);
      parked_ = ParkedPull();
    }
    if (why.ok()) {
      Attempt();
    } else {
      Finish(ToGrpcStatus(why));
    }
  }

  ShardCalls* const calls_;
  const Pull pull_;
  CallExecutor* const executor_;
  const Request* const request_;
  Response* const response_;
  const absl::Time deadline_;
  const Hooks hooks_;
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  ParkedPull parked_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

ParameterServerService::ParameterServerService(ParameterStore* store,
                                               uint64_t incarnation,
                                               const AuthGate* auth,
                                               absl::Duration max_wait)
    : calls_(store, incarnation),
      auth_(auth),
      max_wait_(max_wait),
      answers_in_flight_(
          AnswersInFlight::Create(store->limits().max_pull_in_flight_bytes)) {}

grpc::Status ParameterServerService::Allow(
    const grpc::CallbackServerContext* context, Rpc method,
    std::optional<uint32_t> worker_id) const {
  if (auth_ == nullptr) return grpc::Status::OK;
  return auth_->Check(*context, method, worker_id);
}

absl::Time ParameterServerService::WaitUntil(
    const grpc::CallbackServerContext& context) const {
  return std::min(absl::FromChrono(context.deadline()), absl::Now() + max_wait_);
}

grpc::ServerUnaryReactor* ParameterServerService::CreateTable(
    grpc::CallbackServerContext* context, const v1::CreateTableRequest* request,
    v1::CreateTableResponse* response) {
  return Answer(context, Allow(context, Rpc::kCreateTable),
                [&] { return calls_.CreateTable(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::GetTable(
    grpc::CallbackServerContext* context, const v1::GetTableRequest* request,
    v1::GetTableResponse* response) {
  return Answer(context, Allow(context, Rpc::kGetTable),
                [&] { return calls_.GetTable(*request, response); });
}

namespace {

// How a raw pull's large plain answer is made.
enum class LargeAnswer {
  kCopied,  // into a buffer from AnswerBuffers
  kLent,    // sent from the table's memory (dense: LentValues)
};

// A raw pull: `request` parsed by protobuf (it is small), the pull run by a
// PullReactor. A plain answer of AnswerBuffers::kMinBytes or more is sent
// as slices borrowing the table's own memory (kLent: no copy at all; the
// hold released when gRPC lets go), or written once by the store into a
// buffer from `buffers` and sent as a slice borrowing it (kCopied; back to
// `buffers` when gRPC lets go); a smaller or encoded one goes into the
// response's string, sent as a slice that owns that string. None is
// copied into gRPC's buffers.
template <typename Request, typename Response, typename Allowed>
grpc::ServerUnaryReactor* RawPull(ShardCalls* calls,
                                  typename PullReactor<Request, Response>::Pull pull,
                                  CallExecutor* executor, AnswerBuffers* buffers,
                                  std::shared_ptr<AnswersInFlight> in_flight,
                                  LargeAnswer large, absl::Time wait_until,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response,
                                  Allowed allowed) {
  // The messages live with the reactor's hooks, which outlive every
  // attempt of the pull.
  struct Messages {
    Request request;
    Response response;
    ShardCalls::ValuesRoom room;
    std::unique_ptr<AnswerBuffers::Buffer> values;  // the room, once taken
    LentValues lent;                                // or what was lent
    bool landed = false;
  };
  auto messages = std::make_shared<Messages>();
  Messages* m = messages.get();
  if (large == LargeAnswer::kLent) {
    m->room.lend = &m->lent;
    m->room.lend_min_floats = AnswerBuffers::kMinBytes / sizeof(float);
  }
  m->room.take = [m, buffers](uint64_t floats) -> absl::Span<float> {
    const size_t bytes = floats * sizeof(float);
    if (bytes < AnswerBuffers::kMinBytes) return {};
    m->values = buffers->Take(bytes);
    if (m->values == nullptr) return {};
    return absl::MakeSpan(reinterpret_cast<float*>(m->values->bytes().data()),
                          floats);
  };
  const absl::Status parsed = DecodeMessage(*request, &m->request);
  using Reactor = PullReactor<Request, Response>;
  typename Reactor::Hooks hooks;
  hooks.room = &m->room;
  hooks.landed = &m->landed;
  hooks.unanswered = [m] {
    m->values.reset();
    m->lent.Clear();
  };
  hooks.encode = [messages, response, in_flight = std::move(in_flight)] {
    Messages& m = *messages;
    // Admitted at its full size (the message's other fields, such as a
    // sparse pull's row versions, included) before anything is sent; the
    // admission is held by the payload's release, so it lasts until gRPC
    // lets go.
    const uint64_t bytes = m.response.ByteSizeLong() +
                           (!m.landed                ? 0
                            : !m.lent.pieces.empty() ? m.lent.floats() * sizeof(float)
                                                     : m.values->bytes().size());
    absl::StatusOr<std::shared_ptr<const AnswersInFlight::Admission>>
        admitted = in_flight->Admit(bytes);
    if (!admitted.ok()) {
      m.values.reset();
      m.lent.Clear();
      m.response.clear_values();
      LogRateLimited(DefaultLogRateLimiter(), spdlog::level::warn,
                     "pull answers in flight at their limit",
                     "pull of table '{}' by worker {} refused: {}",
                     m.request.table(), m.request.worker_id(),
                     std::string(admitted.status().message()));
      return ToGrpcStatus(admitted.status());
    }
    std::shared_ptr<const AnswersInFlight::Admission> admission =
        std::move(*admitted);
    if (m.landed && !m.lent.pieces.empty()) {
      std::vector<absl::string_view> pieces;
      pieces.reserve(m.lent.pieces.size());
      for (absl::Span<const float> piece : m.lent.pieces) {
        pieces.emplace_back(reinterpret_cast<const char*>(piece.data()),
                            piece.size() * sizeof(float));
      }
      const grpc::Status encoded = ToGrpcStatus(EncodeWithPayload(
          m.response, Response::kValuesFieldNumber, pieces,
          [hold = std::move(m.lent.hold), admission] {}, response));
      m.lent.Clear();
      return encoded;
    }
    if (m.landed) {
      std::shared_ptr<AnswerBuffers::Buffer> values = std::move(m.values);
      const absl::Span<char> room = values->bytes();
      return ToGrpcStatus(EncodeWithPayload(
          m.response, Response::kValuesFieldNumber,
          absl::string_view(room.data(), room.size()), [values, admission] {},
          response));
    }
    auto values = std::make_shared<const std::string>(
        std::move(*m.response.mutable_values()));
    m.response.clear_values();
    return ToGrpcStatus(EncodeWithPayload(
        m.response, Response::kValuesFieldNumber, *values,
        [values, admission] {}, response));
  };
  auto* reactor = new Reactor(calls, pull, executor, &m->request,
                              &m->response, wait_until, std::move(hooks));
  reactor->Start(parsed.ok() ? allowed(m->request) : ToGrpcStatus(parsed));
  return reactor;
}

// A raw push: its tensor field `field` stays in the received slices (or one
// copy of them, when it spans several) and is read from there; every other
// field is parsed by protobuf into a `Header`. `allowed(header)` is the
// caller's authorization, `push(header, payload, answer)` the push itself;
// the payload is shared so the push may keep it (a staged dense slice).
// `measure` is what a gathered copy measures on the way, or that the payload
// stays in the received slices (PayloadMeasure, ReceivedPayload).
template <typename Header, typename Allowed, typename Push>
grpc::ServerUnaryReactor* RawPush(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response, uint32_t field,
                                  PayloadMeasure measure, Allowed allowed,
                                  Push push) {
  Header header;
  auto payload = std::make_shared<ReceivedPayload>();
  const absl::Status parsed =
      DecodeWithPayload(*request, field, &header, payload.get(), measure);
  if (!parsed.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(ToGrpcStatus(parsed));
    return reactor;
  }
  return Answer(context, allowed(header), [&] {
    v1::PushResponse answer;
    absl::Status status = push(header, payload, &answer);
    if (!status.ok()) return status;
    return EncodeMessage(answer, response);
  });
}

}  // namespace

grpc::ServerUnaryReactor* ParameterServerService::PullDense(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return RawPull<v1::PullDenseRequest, v1::PullDenseResponse>(
      &calls_, &ShardCalls::PullDense, &woken_pulls_, answer_buffers_.get(),
      answers_in_flight_,
      LargeAnswer::kLent, WaitUntil(*context),
      request, response, [&](const v1::PullDenseRequest& parsed) {
        return Allow(context, Rpc::kPullDense, parsed.worker_id());
      });
}

grpc::ServerUnaryReactor* ParameterServerService::PushDense(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // A raw gradient that arrived in several slices (one per HTTP/2 frame)
  // is left in them: the finite check and the apply read the floats where
  // they lie, with no gather into one buffer. A slice that waits for its
  // push's others is staged as a reference to the received payload
  // (StagedSlice::Holding), not a copy. An encoded gradient is gathered
  // for its decoder.
  return RawPush<v1::PushDenseRequest>(
      context, request, response, v1::PushDenseRequest::kGradientFieldNumber,
      PayloadMeasure::kFloatsLeftInPieces,
      [&](const v1::PushDenseRequest& header) {
        return Allow(context, Rpc::kPushDense, header.origin().worker_id());
      },
      [&](const v1::PushDenseRequest& header,
          const std::shared_ptr<ReceivedPayload>& gradient,
          v1::PushResponse* answer) {
        if (gradient->in_pieces() && !header.encoded()) {
          return calls_.PushDense(header, gradient->pieces(), answer,
                                  gradient);
        }
        gradient->Gather(PayloadMeasure::kNothing);
        return calls_.PushDense(header, gradient->bytes(), answer, gradient,
                                gradient->max_abs());
      });
}

grpc::ServerUnaryReactor* ParameterServerService::PullSparse(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return RawPull<v1::PullSparseRequest, v1::PullSparseResponse>(
      &calls_, &ShardCalls::PullSparse, &woken_pulls_, answer_buffers_.get(),
      answers_in_flight_,
      LargeAnswer::kCopied, WaitUntil(*context),
      request, response, [&](const v1::PullSparseRequest& parsed) {
        return Allow(context, Rpc::kPullSparse, parsed.worker_id());
      });
}

grpc::ServerUnaryReactor* ParameterServerService::PushSparse(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // The keys (an eighth of a dim-16 push) are left to protobuf. Rows
  // gathered from several slices have their max |g| measured in the copy's
  // loop, as a dense push's (an encoded push ignores the figure).
  return RawPush<v1::PushSparseRequest>(
      context, request, response,
      v1::PushSparseRequest::kGradientsFieldNumber,
      PayloadMeasure::kFloatMaxAbs,
      [&](const v1::PushSparseRequest& header) {
        return Allow(context, Rpc::kPushSparse, header.origin().worker_id());
      },
      [&](const v1::PushSparseRequest& header,
          const std::shared_ptr<ReceivedPayload>& gradients,
          v1::PushResponse* answer) {
        return calls_.PushSparse(header, gradients->bytes(), answer,
                                 gradients->max_abs());
      });
}

grpc::ServerUnaryReactor* ParameterServerService::Register(
    grpc::CallbackServerContext* context, const v1::RegisterRequest* request,
    v1::RegisterResponse* response) {
  return Answer(context, Allow(context, Rpc::kRegister, request->worker_id()),
                [&] { return calls_.Register(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::Leave(
    grpc::CallbackServerContext* context, const v1::LeaveRequest* request,
    v1::LeaveResponse* response) {
  return Answer(context, Allow(context, Rpc::kLeave, request->worker_id()),
                [&] { return calls_.Leave(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::Heartbeat(
    grpc::CallbackServerContext* context, const v1::HeartbeatRequest* request,
    v1::HeartbeatResponse* response) {
  return Answer(context, Allow(context, Rpc::kHeartbeat, request->worker_id()),
                [&] { return calls_.Heartbeat(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::SetConsistency(
    grpc::CallbackServerContext* context,
    const v1::SetConsistencyRequest* request,
    v1::SetConsistencyResponse* response) {
  return Answer(context, Allow(context, Rpc::kSetConsistency),
                [&] { return calls_.SetConsistency(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::Stats(
    grpc::CallbackServerContext* context, const v1::StatsRequest* request,
    v1::StatsResponse* response) {
  return Answer(context, Allow(context, Rpc::kStats),
                [&] { return calls_.Stats(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::DropTable(
    grpc::CallbackServerContext* context, const v1::DropTableRequest* request,
    v1::DropTableResponse* response) {
  return Answer(context, Allow(context, Rpc::kDropTable),
                [&] { return calls_.DropTable(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::Checkpoint(
    grpc::CallbackServerContext* context, const v1::CheckpointRequest* request,
    v1::CheckpointResponse* response) {
  return Answer(context, Allow(context, Rpc::kCheckpoint),
                [&] { return calls_.Checkpoint(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::EvictWorker(
    grpc::CallbackServerContext* context, const v1::EvictWorkerRequest* request,
    v1::EvictWorkerResponse* response) {
  return Answer(context, Allow(context, Rpc::kEvictWorker),
                [&] { return calls_.EvictWorker(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::ShardStatus(
    grpc::CallbackServerContext* context, const v1::ShardStatusRequest* request,
    v1::ShardStatusResponse* response) {
  return Answer(context, Allow(context, Rpc::kShardStatus),
                [&] { return calls_.ShardStatus(*request, response); });
}

grpc::ServerUnaryReactor* ParameterServerService::Rollback(
    grpc::CallbackServerContext* context, const v1::RollbackRequest* request,
    v1::RollbackResponse* response) {
  return Answer(context, Allow(context, Rpc::kRollback),
                [&] { return calls_.Rollback(*request, response); });
}

}  // namespace taups
