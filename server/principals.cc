#include "server/principals.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace taups {

const char* RoleName(Role role) {
  switch (role) {
    case Role::kWorker: return "worker";
    case Role::kAdmin: return "admin";
    case Role::kReader: return "reader";
  }
  return "unknown";
}

namespace {

constexpr size_t kMinTokenLength = 16;

bool ParseRole(absl::string_view word, Role* role) {
  for (Role r : {Role::kWorker, Role::kAdmin, Role::kReader}) {
    if (word == RoleName(r)) {
      *role = r;
      return true;
    }
  }
  return false;
}

bool ParseWorkerIds(absl::string_view text, uint32_t* first, uint32_t* last) {
  std::pair<absl::string_view, absl::string_view> parts =
      absl::StrSplit(text, absl::MaxSplits('-', 1));
  if (!absl::SimpleAtoi(parts.first, first)) return false;
  if (parts.second.empty() && text.back() != '-') {
    *last = *first;
    return true;
  }
  return absl::SimpleAtoi(parts.second, last) && *first <= *last;
}

bool SameGrant(const Principal& a, const Principal& b) {
  return a.role == b.role && a.first_worker == b.first_worker &&
         a.last_worker == b.last_worker;
}

}  // namespace

absl::StatusOr<PrincipalTable> PrincipalTable::Parse(absl::string_view text,
                                                     absl::string_view origin) {
  PrincipalTable table;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, " line ", line_number, ": ", why));
    };
    line = line.substr(0, line.find('#'));
    std::vector<absl::string_view> words =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (words.empty()) continue;
    if (words.size() < 4 || words.size() > 5) {
      return fail("expected: token|cert <credential> <principal> <role> [<worker ids>]");
    }
    const bool is_token = words[0] == "token";
    if (!is_token && words[0] != "cert") {
      return fail(absl::StrCat("'", words[0], "' is neither token nor cert"));
    }
    if (is_token && words[1].size() < kMinTokenLength) {
      return fail(absl::StrCat("token shorter than ", kMinTokenLength,
                               " characters"));
    }
    Principal principal;
    principal.name = std::string(words[2]);
    if (!ParseRole(words[3], &principal.role)) {
      return fail(absl::StrCat("role '", words[3],
                               "' is not worker, admin or reader"));
    }
    const bool worker = principal.role == Role::kWorker;
    if (worker != (words.size() == 5)) {
      return fail(worker ? "a worker needs its worker ids (e.g. 3 or 0-7)"
                         : "only a worker has worker ids");
    }
    if (worker && !ParseWorkerIds(words[4], &principal.first_worker,
                                  &principal.last_worker)) {
      return fail(absl::StrCat("worker ids '", words[4],
                               "' are not N or FIRST-LAST with FIRST <= LAST"));
    }
    auto [named, inserted] =
        table.by_name_.try_emplace(principal.name, table.principals_.size());
    if (inserted) {
      for (const Principal& other : table.principals_) {
        if (worker && other.role == Role::kWorker &&
            principal.first_worker <= other.last_worker &&
            other.first_worker <= principal.last_worker) {
          return fail(absl::StrCat("worker ids of '", principal.name,
                                   "' overlap those of '", other.name, "'"));
        }
      }
      table.principals_.push_back(principal);
    } else if (!SameGrant(table.principals_[named->second], principal)) {
      return fail(absl::StrCat("'", principal.name,
                               "' appears earlier with another role or ids"));
    }
    const size_t index = named->second;
    if (is_token) {
      for (const auto& [secret, unused] : table.tokens_) {
        if (secret == words[1]) return fail("token already listed");
      }
      table.tokens_.emplace_back(std::string(words[1]), index);
    } else if (!table.cert_names_.try_emplace(words[1], index).second) {
      return fail(absl::StrCat("certificate name '", words[1],
                               "' already listed"));
    }
  }
  return table;
}

absl::StatusOr<PrincipalTable> PrincipalTable::Load(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("auth file ", path, ": ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "auth file ", path, " may be read by group or others (mode 0",
        (st.st_mode >> 6) & 7, (st.st_mode >> 3) & 7, st.st_mode & 7,
        "); chmod 600 it"));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("auth file ", path, " cannot be opened"));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return Parse(text.str(), absl::StrCat("auth file ", path));
}

const Principal* PrincipalTable::FindByToken(absl::string_view token) const {
  const Principal* found = nullptr;
  for (const auto& [secret, index] : tokens_) {
    // Constant time for equal lengths; lengths are not secret enough to hide.
    unsigned char differ = secret.size() != token.size();
    const size_t n = std::min(secret.size(), token.size());
    for (size_t i = 0; i < n; ++i) differ |= secret[i] ^ token[i];
    if (differ == 0) found = &principals_[index];
  }
  return found;
}

const Principal* PrincipalTable::FindByCertName(absl::string_view name) const {
  auto it = cert_names_.find(name);
  return it == cert_names_.end() ? nullptr : &principals_[it->second];
}

const Principal* PrincipalTable::FindByName(absl::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &principals_[it->second];
}

}  // namespace taups
