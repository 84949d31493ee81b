// The history a fault run leaves behind, and how it is written and read.
//
// Each fault_driver process appends one line per event to its own history
// file; the harness appends what it did to the processes (starts, kills,
// pauses) to an events file. Every line is a record kind followed by
// key=value tokens, so a half-written last line (a driver killed with -9)
// is recognisable and dropped. Times are CLOCK_REALTIME nanoseconds, the
// same clock in every process of the machine.
//
//   push   w= inc= seq= slot= clock= t0=               (before sending)
//   pushed w= inc= seq= t1= status= shards=A:D:V,...     (its answer: per
//          shard accepted, duplicate, new version; empty when status != OK)
//   pull   w= inc= clock= step= t0= t1= status= versions=V,... seen=<hex>
//          (seen: one bit per table element, set where the value was > 0)
//   shard  s= what=start|ready|kill|stop|cont t= [restored=V|none]
//   worker w= what=kill|stop|cont t=
//
// The table layout every driver shares: a dense table of num_shards * slots
// elements, split evenly, so shard s holds [s * slots, (s + 1) * slots).
// The push with slot g adds exactly 1 (SGD, learning rate 1, gradient -1;
// the mean of the step's arrivals under sync) to element s * slots + g of
// every shard and nothing else, so each element says how often that one
// push was applied on that shard.
//
// Thread-safety: plain values; HistoryWriter is not thread-safe.
#ifndef TAUPS_TESTS_FAULT_FAULT_HISTORY_H_
#define TAUPS_TESTS_FAULT_FAULT_HISTORY_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace taups::fault {

int64_t NowNanos();

struct ShardAnswer {
  bool accepted = false;
  bool duplicate = false;
  uint64_t new_version = 0;
};

// One push: sent at t0; `finished` once its answer (or error) came back.
struct PushOp {
  uint32_t worker = 0;
  uint64_t incarnation = 0;
  uint64_t seq = 0;
  uint64_t slot = 0;
  uint64_t clock = 0;  // the step it belongs to (sync) / worker clock
  int64_t t0 = 0, t1 = 0;
  bool finished = false;
  std::string status;  // "OK" or the error's code name
  std::vector<ShardAnswer> shards;  // per shard when status == "OK"
};

struct PullOp {
  uint32_t worker = 0;
  uint64_t incarnation = 0;
  uint64_t clock = 0;
  uint64_t step = 0;
  int64_t t0 = 0, t1 = 0;
  std::string status;
  std::vector<uint64_t> versions;  // per shard
  std::vector<bool> seen;          // per table element
};

// What the harness did, to a shard or a worker.
struct ProcessEvent {
  bool shard = true;  // false: a worker
  uint32_t index = 0;
  std::string what;   // start, ready, kill, stop, cont
  int64_t t = 0;
  bool restored = false;         // ready: came back from a checkpoint
  uint64_t restored_version = 0;
};

struct History {
  std::vector<PushOp> pushes;
  std::vector<PullOp> pulls;
  std::vector<ProcessEvent> events;
};

// Appends one record per call and flushes it, so a kill loses at most the
// line being written.
class HistoryWriter {
 public:
  static absl::StatusOr<HistoryWriter> Open(const std::string& path);
  HistoryWriter(HistoryWriter&& other) noexcept;
  ~HistoryWriter();

  void PushSent(const PushOp& op);
  void PushDone(const PushOp& op);
  void Pulled(const PullOp& op);
  void Event(const ProcessEvent& event);

 private:
  explicit HistoryWriter(std::FILE* file) : file_(file) {}
  void Line(const std::string& line);
  std::FILE* file_ = nullptr;
};

// Reads every file of `paths` into one history (pushes matched with their
// answers by (worker, incarnation, seq)). Unreadable files are an error;
// unparsable lines (a torn last line) are skipped.
absl::StatusOr<History> ReadHistory(const std::vector<std::string>& paths);

}  // namespace taups::fault

#endif  // TAUPS_TESTS_FAULT_FAULT_HISTORY_H_
