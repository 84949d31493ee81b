#include "server/dedup_window.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/limits.h"

namespace taups {
namespace {

// Heap bytes of an absl::Status with a message (its shared rep) besides the
// message itself; std::string's own allocation rounds up a little more.
constexpr uint64_t kStatusRepBytes = 64;
constexpr uint64_t kStringSlackBytes = 16;

// `text` cut to DedupWindow::kMaxRememberedMessage bytes.
std::string Clipped(absl::string_view text) {
  if (text.size() <= DedupWindow::kMaxRememberedMessage) return std::string(text);
  constexpr absl::string_view kCut = " [...]";
  return absl::StrCat(text.substr(0, DedupWindow::kMaxRememberedMessage - kCut.size()),
                      kCut);
}

}  // namespace

uint64_t DedupWindow::WindowBytes(size_t per_incarnation) {
  // A std::map node: its three links and colour, then the value.
  const uint64_t node = 4 * sizeof(void*) + sizeof(std::pair<const uint64_t, PushAnswer>);
  const uint64_t messages =
      kStatusRepBytes + 2 * (kMaxRememberedMessage + kStringSlackBytes);
  const uint64_t slot = sizeof(std::pair<const Key, Window>) + 1;
  return std::max<uint64_t>(1, per_incarnation) * (node + messages) + slot;
}

DedupWindow::DedupWindow(size_t per_incarnation, size_t max_incarnations,
                         MemoryBudget* budget)
    : per_incarnation_(std::max<size_t>(1, per_incarnation)),
      max_incarnations_(std::max<size_t>(1, max_incarnations)),
      budget_(budget),
      window_bytes_(WindowBytes(per_incarnation_)) {}

DedupWindow::~DedupWindow() { ReleaseAll(); }

void DedupWindow::ReleaseAll() {
  if (budget_ != nullptr) budget_->Release(BudgetUse::kWorkerState, charged_);
  charged_ = 0;
}

bool DedupWindow::MakeWindow(const Key& key) {
  if (windows_.size() >= max_incarnations_) {
    // The least recently used window goes; its charge serves the new one.
    auto oldest = std::min_element(
        windows_.begin(), windows_.end(), [](const auto& a, const auto& b) {
          return a.second.last_use < b.second.last_use;
        });
    windows_.erase(oldest);
  } else if (budget_ != nullptr) {
    if (!budget_->TryReserve(BudgetUse::kWorkerState, window_bytes_)) return false;
    charged_ += window_bytes_;
  }
  windows_.emplace(key, Window{});
  return true;
}

absl::Status DedupWindow::Admit(const PushOrigin& origin) {
  if (origin.seq == 0) return absl::OkStatus();
  const Key key{origin.worker_id, origin.worker_incarnation};
  if (windows_.contains(key) || MakeWindow(key)) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "worker ", origin.worker_id, " (incarnation ", origin.worker_incarnation,
      "): its window of answers to recent pushes (", per_incarnation_,
      " answers, so a retried push is not applied twice) needs ",
      HumanBytes(window_bytes_), " beside the ", windows_.size(),
      " windows of this table part; ", BudgetInUse(*budget_)));
}

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
    if (!MakeWindow(key)) return;  // over the budget: not remembered
    it = windows_.find(key);
  }
  Window& window = it->second;
  window.last_use = ++uses_;
  answer.outcome.row_taus.clear();
  answer.outcome.row_taus.shrink_to_fit();
  if (answer.outcome.reject_reason.size() > kMaxRememberedMessage) {
    answer.outcome.reject_reason = Clipped(answer.outcome.reject_reason);
  }
  if (answer.status.message().size() > kMaxRememberedMessage) {
    answer.status = absl::Status(answer.status.code(), Clipped(answer.status.message()));
  }
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
  ReleaseAll();
  uses_ = snapshot.uses;
  for (const DedupSnapshot::Incarnation& inc : snapshot.incarnations) {
    const Key key{inc.worker_id, inc.worker_incarnation};
    // A window the budget cannot take now is not restored (that
    // incarnation's late duplicates would be taken as new).
    if (!windows_.contains(key) && !MakeWindow(key)) continue;
    Window& window = windows_[key];
    window.forgotten_through = inc.forgotten_through;
    window.last_use = inc.last_use;
    window.answers = inc.answers;
    uses_ = std::max(uses_, inc.last_use);
  }
}

}  // namespace taups
