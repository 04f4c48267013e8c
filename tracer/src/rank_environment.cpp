#include <dreamscope/tracer/rank_environment.h>

#include <dreamscope/storage/limits.h>

#include <cstdlib>

namespace dreamscope {

namespace {

// A whole number in [least, limits::kMaxWorldSize), digits only (what launchers write), or
// kNoValue. "007" is 7; "+3", " 3", "3.0" and "-1" are not numbers a launcher writes.
std::int64_t parse_count(const char* text, std::int64_t least) {
  if (!text || !*text) return kNoValue;
  std::int64_t v = 0;
  for (const char* c = text; *c; ++c) {
    if (*c < '0' || *c > '9') return kNoValue;
    v = v * 10 + (*c - '0');
    if (v >= limits::kMaxWorldSize) return kNoValue;
  }
  return v >= least ? v : kNoValue;
}

std::string ignored(const char* name, const char* value, const std::string& why) {
  return std::string(name) + "=" + limits::quoted(value, 40) + " " + why + ": ignored";
}

} // namespace

RankPlacement rank_from_environment(const EnvironmentLookup& lookup) {
  RankPlacement p;
  const auto set = [&](const char* name) -> const char* {
    if (!name) return nullptr;
    const char* v = lookup(name);
    return v && *v ? v : nullptr;
  };
  for (const RankVariables& family : kRankVariables) {
    const char* rank_text = set(family.rank);
    if (!rank_text) continue;
    const std::int64_t rank = parse_count(rank_text, 0);
    if (rank == kNoValue) {
      p.warnings.push_back(ignored(family.rank, rank_text, "is not a rank (a whole number below 2^24)"));
      continue;
    }
    p.rank = rank;
    p.rank_variable = family.rank;
    if (const char* text = set(family.world_size)) {
      const std::int64_t world = parse_count(text, 1);
      if (world == kNoValue) {
        p.warnings.push_back(ignored(family.world_size, text, "is not a world size (a whole number in [1, 2^24))"));
      } else if (world <= rank) {
        p.warnings.push_back(ignored(family.world_size, text, "is not above " + std::string(family.rank) + "=" +
                                                                  std::to_string(rank)));
      } else {
        p.world_size = world;
      }
    }
    if (const char* text = set(family.local_rank)) {
      const std::int64_t local = parse_count(text, 0);
      if (local == kNoValue) {
        p.warnings.push_back(ignored(family.local_rank, text, "is not a rank (a whole number below 2^24)"));
      } else if (p.world_size != kNoValue && local >= p.world_size) {
        p.warnings.push_back(ignored(family.local_rank, text, "is not below " + std::string(family.world_size) +
                                                                  "=" + std::to_string(p.world_size)));
      } else {
        p.local_rank = local;
      }
    }
    break;
  }
  return p;
}

RankPlacement rank_from_environment() {
  return rank_from_environment([](const char* name) -> const char* { return std::getenv(name); });
}

std::string rank_variable_names() {
  std::string out;
  constexpr std::size_t n = sizeof kRankVariables / sizeof kRankVariables[0];
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += kRankVariables[i].rank;
  }
  return out;
}

} // namespace dreamscope
