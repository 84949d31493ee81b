// Writing and reading fault-run histories (format in fault_history.h).
#include "tests/fault/fault_history.h"

#include <time.h>

#include <fstream>
#include <map>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace taups::fault {
namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string BitsToHex(const std::vector<bool>& bits) {
  std::vector<int> nibbles((bits.size() + 3) / 4, 0);
  for (size_t i = 0; i < bits.size(); ++i) {
    if (bits[i]) nibbles[i / 4] |= 1 << (i % 4);
  }
  std::string out = absl::StrCat(bits.size(), ":");
  for (int n : nibbles) out.push_back(kHex[n]);
  return out;
}

bool HexToBits(absl::string_view text, std::vector<bool>* bits) {
  const size_t colon = text.find(':');
  uint64_t count = 0;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(text.substr(0, colon), &count)) {
    return false;
  }
  const absl::string_view hex = text.substr(colon + 1);
  if (hex.size() != (count + 3) / 4) return false;
  bits->assign(count, false);
  for (uint64_t i = 0; i < count; ++i) {
    const char c = hex[i / 4];
    const int nibble = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (nibble < 0) return false;
    (*bits)[i] = (nibble >> (i % 4)) & 1;
  }
  return true;
}

// One parsed line: its kind and key=value tokens.
struct Record {
  std::string kind;
  absl::flat_hash_map<std::string, std::string> fields;

  bool Has(const std::string& key) const { return fields.contains(key); }
  const std::string& Text(const std::string& key) const {
    static const std::string kEmpty;
    auto it = fields.find(key);
    return it == fields.end() ? kEmpty : it->second;
  }
  template <typename T>
  bool Number(const std::string& key, T* out) const {
    auto it = fields.find(key);
    return it != fields.end() && absl::SimpleAtoi(it->second, out);
  }
};

bool Parse(absl::string_view line, Record* record) {
  std::vector<absl::string_view> tokens =
      absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (tokens.empty() || tokens.back() != "end") return false;  // torn line
  record->kind = std::string(tokens[0]);
  for (size_t i = 1; i + 1 < tokens.size(); ++i) {
    const size_t eq = tokens[i].find('=');
    if (eq == absl::string_view::npos) return false;
    record->fields[std::string(tokens[i].substr(0, eq))] =
        std::string(tokens[i].substr(eq + 1));
  }
  return true;
}

bool ParseAnswers(absl::string_view text, std::vector<ShardAnswer>* answers) {
  if (text.empty()) return true;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    std::vector<absl::string_view> f = absl::StrSplit(part, ':');
    ShardAnswer a;
    if (f.size() != 3 || !absl::SimpleAtoi(f[2], &a.new_version)) return false;
    a.accepted = f[0] == "1";
    a.duplicate = f[1] == "1";
    answers->push_back(a);
  }
  return true;
}

bool ParseVersions(absl::string_view text, std::vector<uint64_t>* versions) {
  if (text.empty()) return true;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(part, &v)) return false;
    versions->push_back(v);
  }
  return true;
}

using PushKey = std::tuple<uint32_t, uint64_t, uint64_t>;

void Apply(const Record& r, History& history, std::map<PushKey, size_t>& open) {
  if (r.kind == "push") {
    PushOp op;
    if (!r.Number("w", &op.worker) || !r.Number("inc", &op.incarnation) ||
        !r.Number("seq", &op.seq) || !r.Number("slot", &op.slot) ||
        !r.Number("clock", &op.clock) || !r.Number("t0", &op.t0)) {
      return;
    }
    open[{op.worker, op.incarnation, op.seq}] = history.pushes.size();
    history.pushes.push_back(op);
  } else if (r.kind == "pushed") {
    PushKey key;
    if (!r.Number("w", &std::get<0>(key)) || !r.Number("inc", &std::get<1>(key)) ||
        !r.Number("seq", &std::get<2>(key))) {
      return;
    }
    auto it = open.find(key);
    if (it == open.end()) return;
    PushOp& op = history.pushes[it->second];
    std::vector<ShardAnswer> answers;
    if (!r.Number("t1", &op.t1) || !ParseAnswers(r.Text("shards"), &answers)) return;
    op.status = r.Text("status");
    op.shards = std::move(answers);
    op.finished = true;
  } else if (r.kind == "pull") {
    PullOp op;
    if (!r.Number("w", &op.worker) || !r.Number("inc", &op.incarnation) ||
        !r.Number("clock", &op.clock) || !r.Number("step", &op.step) ||
        !r.Number("t0", &op.t0) || !r.Number("t1", &op.t1) ||
        !ParseVersions(r.Text("versions"), &op.versions)) {
      return;
    }
    op.status = r.Text("status");
    if (op.status == "OK" && !HexToBits(r.Text("seen"), &op.seen)) return;
    history.pulls.push_back(std::move(op));
  } else if (r.kind == "shard" || r.kind == "worker") {
    ProcessEvent e;
    e.shard = r.kind == "shard";
    if (!r.Number(e.shard ? "s" : "w", &e.index) || !r.Number("t", &e.t)) return;
    e.what = r.Text("what");
    if (r.Has("restored") && r.Text("restored") != "none") {
      e.restored = r.Number("restored", &e.restored_version);
    }
    history.events.push_back(e);
  }
}

}  // namespace

int64_t NowNanos() {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  return int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

absl::StatusOr<HistoryWriter> HistoryWriter::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "a");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open history ", path));
  }
  return HistoryWriter(file);
}

HistoryWriter::HistoryWriter(HistoryWriter&& other) noexcept : file_(other.file_) {
  other.file_ = nullptr;
}

HistoryWriter::~HistoryWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

void HistoryWriter::Line(const std::string& line) {
  std::fputs((line + " end\n").c_str(), file_);
  std::fflush(file_);
}

void HistoryWriter::PushSent(const PushOp& op) {
  Line(absl::StrCat("push w=", op.worker, " inc=", op.incarnation, " seq=", op.seq,
                    " slot=", op.slot, " clock=", op.clock, " t0=", op.t0));
}

void HistoryWriter::PushDone(const PushOp& op) {
  std::vector<std::string> answers;
  for (const ShardAnswer& a : op.shards) {
    answers.push_back(absl::StrCat(a.accepted ? 1 : 0, ":", a.duplicate ? 1 : 0,
                                   ":", a.new_version));
  }
  Line(absl::StrCat("pushed w=", op.worker, " inc=", op.incarnation, " seq=", op.seq,
                    " t1=", op.t1, " status=", op.status,
                    " shards=", absl::StrJoin(answers, ",")));
}

void HistoryWriter::Pulled(const PullOp& op) {
  Line(absl::StrCat("pull w=", op.worker, " inc=", op.incarnation, " clock=", op.clock,
                    " step=", op.step, " t0=", op.t0, " t1=", op.t1,
                    " status=", op.status, " versions=", absl::StrJoin(op.versions, ","),
                    " seen=", op.status == "OK" ? BitsToHex(op.seen) : "-"));
}

void HistoryWriter::Event(const ProcessEvent& e) {
  std::string line = absl::StrCat(e.shard ? "shard s=" : "worker w=", e.index,
                                  " what=", e.what, " t=", e.t);
  if (e.what == "ready") {
    absl::StrAppend(&line, " restored=",
                    e.restored ? absl::StrCat(e.restored_version) : "none");
  }
  Line(line);
}

absl::StatusOr<History> ReadHistory(const std::vector<std::string>& paths) {
  History history;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    std::map<PushKey, size_t> open;
    std::string line;
    while (std::getline(in, line)) {
      Record record;
      if (Parse(line, &record)) Apply(record, history, open);
    }
  }
  return history;
}

}  // namespace taups::fault
