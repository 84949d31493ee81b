#include "server/dedup_window.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace taups {

DedupWindow::DedupWindow(size_t per_incarnation, size_t max_incarnations)
    : per_incarnation_(std::max<size_t>(1, per_incarnation)),
      max_incarnations_(std::max<size_t>(1, max_incarnations)) {}

DedupWindow::Lookup DedupWindow::Find(const PushOrigin& origin) const {
  Lookup lookup;
  if (origin.seq == 0) return lookup;
  auto it = windows_.find(Key{origin.worker_id, origin.worker_incarnation});
  if (it == windows_.end()) return lookup;
  const Window& window = it->second;
  auto answer = window.answers.find(origin.seq);
  if (answer != window.answers.end()) {
    lookup.verdict = Verdict::kRepeat;
    lookup.answer = &answer->second;
  } else if (origin.seq <= window.forgotten_through) {
    lookup.verdict = Verdict::kForgotten;
    lookup.forgotten_through = window.forgotten_through;
  }
  return lookup;
}

void DedupWindow::Record(const PushOrigin& origin, PushAnswer answer) {
  if (origin.seq == 0) return;
  const Key key{origin.worker_id, origin.worker_incarnation};
  auto it = windows_.find(key);
  if (it == windows_.end()) {
    if (windows_.size() >= max_incarnations_) {
      auto oldest = std::min_element(
          windows_.begin(), windows_.end(), [](const auto& a, const auto& b) {
            return a.second.last_use < b.second.last_use;
          });
      windows_.erase(oldest);
    }
    it = windows_.emplace(key, Window{}).first;
  }
  Window& window = it->second;
  window.last_use = ++uses_;
  answer.outcome.row_taus.clear();
  answer.outcome.row_taus.shrink_to_fit();
  window.answers[origin.seq] = std::move(answer);
  while (window.answers.size() > per_incarnation_) {
    auto first = window.answers.begin();
    window.forgotten_through = std::max(window.forgotten_through, first->first);
    window.answers.erase(first);
  }
}

size_t DedupWindow::answers() const {
  size_t n = 0;
  for (const auto& [key, window] : windows_) n += window.answers.size();
  return n;
}

DedupSnapshot DedupWindow::Export() const {
  DedupSnapshot snapshot;
  snapshot.uses = uses_;
  for (const auto& [key, window] : windows_) {
    DedupSnapshot::Incarnation& inc = snapshot.incarnations.emplace_back();
    inc.worker_id = key.worker_id;
    inc.worker_incarnation = key.incarnation;
    inc.forgotten_through = window.forgotten_through;
    inc.last_use = window.last_use;
    inc.answers = window.answers;
  }
  // A stable order, so equal windows export equal snapshots.
  std::sort(snapshot.incarnations.begin(), snapshot.incarnations.end(),
            [](const auto& a, const auto& b) {
              return std::pair(a.worker_id, a.worker_incarnation) <
                     std::pair(b.worker_id, b.worker_incarnation);
            });
  return snapshot;
}

void DedupWindow::Import(const DedupSnapshot& snapshot) {
  windows_.clear();
  uses_ = snapshot.uses;
  for (const DedupSnapshot::Incarnation& inc : snapshot.incarnations) {
    Window& window = windows_[Key{inc.worker_id, inc.worker_incarnation}];
    window.forgotten_through = inc.forgotten_through;
    window.last_use = inc.last_use;
    window.answers = inc.answers;
    uses_ = std::max(uses_, inc.last_use);
  }
}

}  // namespace taups
