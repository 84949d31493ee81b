// EventQueue: the heart of the discrete-event simulation. Events are ordered
// by (time, sequence number), where the sequence number is the order in which
// they were scheduled, so two events at the same simulated time always run in
// the same order and a simulation is a pure function of its inputs.
//
// Thread-compatible: one queue per simulation.
#ifndef TAUPS_BENCH_SIM_EVENT_QUEUE_H_
#define TAUPS_BENCH_SIM_EVENT_QUEUE_H_

#include <cstdint>
#include <queue>
#include <vector>

#include "absl/time/time.h"

namespace taups::sim {

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    absl::Time time;
    uint64_t seq = 0;
    Payload payload;
  };

  // Schedules `payload` at `time` (which may equal, but should not precede,
  // the time of the event being handled).
  void Schedule(absl::Time time, Payload payload) {
    heap_.push(Event{time, next_seq_++, std::move(payload)});
  }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  // Removes and returns the earliest event. Requires !empty().
  Event Pop() {
    Event event = heap_.top();
    heap_.pop();
    return event;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace taups::sim

#endif  // TAUPS_BENCH_SIM_EVENT_QUEUE_H_
