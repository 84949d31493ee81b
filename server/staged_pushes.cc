#include "server/staged_pushes.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/limits.h"

namespace taups {

StagedPushes& StagedPushes::operator=(StagedPushes&& other) noexcept {
  if (this != &other) {
    if (budget_ != nullptr) budget_->Release(BudgetUse::kStaged, bytes_);
    max_bytes_ = other.max_bytes_;
    budget_ = other.budget_;
    bytes_ = std::exchange(other.bytes_, 0);
    pushes_ = std::move(other.pushes_);
    other.pushes_.clear();
  }
  return *this;
}

StagedPushes::~StagedPushes() {
  if (budget_ != nullptr) budget_->Release(BudgetUse::kStaged, bytes_);
}

GradientPart StagedSlice::AsPart() const {
  GradientPart part;
  part.offset = offset;
  part.keys = keys;
  part.values = holder != nullptr ? held : absl::Span<const float>(values);
  if (holder != nullptr) part.pieces = held_pieces;
  part.max_abs = max_abs;
  return part;
}

StagedSlice StagedSlice::CopyOf(uint32_t index, const GradientPart& part) {
  StagedSlice slice;
  slice.index = index;
  slice.offset = part.offset;
  slice.keys.assign(part.keys.begin(), part.keys.end());
  part.CopyInto(&slice.values);
  slice.max_abs = part.max_abs;
  return slice;
}

StagedSlice StagedSlice::Holding(uint32_t index, const GradientPart& part,
                                 std::shared_ptr<const void> holder) {
  if (holder == nullptr || !part.keys.empty()) return CopyOf(index, part);
  StagedSlice slice;
  slice.index = index;
  slice.offset = part.offset;
  slice.holder = std::move(holder);
  slice.held = part.values;
  slice.held_pieces = part.pieces;
  slice.max_abs = part.max_abs;
  return slice;
}

absl::StatusOr<StagedPushes::Added> StagedPushes::Add(
    const PushOrigin& origin, uint32_t index, const PushHeader& header,
    const GradientPart& part, absl::Time now, StagedSlice* prepared) {
  if (index >= header.slices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice index ", index, " of a push of ", header.slices, " slices"));
  }
  auto it = pushes_.find(KeyOf(origin));
  if (it != pushes_.end()) {
    Push& push = it->second;
    if (!(push.header == header)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice ", index, " of push ", origin.seq, " from worker ",
          origin.worker_id, " disagrees with its first slice (slices ",
          header.slices, " vs ", push.header.slices, ", base_version ",
          header.base_version, " vs ", push.header.base_version, ", clock ",
          header.clock, " vs ", push.header.clock, ")"));
    }
    for (const StagedSlice& s : push.slices) {
      if (s.index == index) return Added::kDuplicate;
    }
    if (push.slices.size() + 1 == header.slices) return Added::kComplete;
  } else if (header.slices == 1) {
    return Added::kComplete;
  }
  const uint64_t bytes = part.size() * sizeof(float) +
                         part.keys.size() * sizeof(uint64_t);
  if (bytes_ + bytes > max_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "staging slice ", index, " (", bytes, " bytes) would hold ",
        bytes_ + bytes, " bytes of unfinished multi-slice pushes; the limit "
        "is ", max_bytes_, " (--max_staged_mb)"));
  }
  if (budget_ != nullptr && !budget_->TryReserve(BudgetUse::kStaged, bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "staging slice ", index, " (", bytes, " bytes) of a multi-slice push: ",
        BudgetInUse(*budget_)));
  }
  if (it == pushes_.end()) {
    it = pushes_.emplace(KeyOf(origin), Push{header, now, {}, 0}).first;
  }
  it->second.slices.push_back(prepared != nullptr ? std::move(*prepared)
                                                 : StagedSlice::CopyOf(index, part));
  it->second.bytes += bytes;
  bytes_ += bytes;
  return Added::kStaged;
}

bool StagedPushes::WouldComplete(const PushOrigin& origin, uint32_t index,
                                 const PushHeader& header) const {
  if (header.slices <= 1) return index == 0;
  auto it = pushes_.find(KeyOf(origin));
  if (it == pushes_.end() || !(it->second.header == header) ||
      it->second.slices.size() + 1 != header.slices) {
    return false;
  }
  for (const StagedSlice& s : it->second.slices) {
    if (s.index == index) return false;
  }
  return index < header.slices;
}

std::vector<StagedSlice> StagedPushes::Take(const PushOrigin& origin) {
  auto it = pushes_.find(KeyOf(origin));
  if (it == pushes_.end()) return {};
  std::vector<StagedSlice> slices = std::move(it->second.slices);
  bytes_ -= it->second.bytes;
  if (budget_ != nullptr) budget_->Release(BudgetUse::kStaged, it->second.bytes);
  pushes_.erase(it);
  std::sort(slices.begin(), slices.end(),
            [](const StagedSlice& a, const StagedSlice& b) {
              return a.index < b.index;
            });
  return slices;
}

void StagedPushes::Drop(const PushOrigin& origin) { Take(origin); }

std::vector<PushOrigin> StagedPushes::Older(absl::Time cutoff) const {
  std::vector<PushOrigin> old;
  for (const auto& [key, push] : pushes_) {
    if (push.first_seen < cutoff) {
      old.push_back(PushOrigin{std::get<0>(key), std::get<1>(key),
                               std::get<2>(key)});
    }
  }
  return old;
}

}  // namespace taups
