#include <dreamscope/whatif/name_pattern.h>

#include <re2/re2.h>

#include <stdexcept>

namespace dreamscope::whatif {

namespace {

RE2::Options pattern_options() {
  RE2::Options o;
  // Errors become exceptions with the file position; RE2 must not also print them.
  o.set_log_errors(false);
  // A pattern's compiled program is bounded (RE2's default, 8 MiB): a{1000}{1000} is refused
  // as too large instead of taking the machine's memory.
  o.set_max_mem(8 << 20);
  return o;
}

} // namespace

NamePattern::NamePattern(std::string_view pattern)
    : pattern_(pattern), re_(std::make_unique<RE2>(re2::StringPiece(pattern.data(), pattern.size()), pattern_options())) {
  if (!re_->ok()) throw std::invalid_argument(re_->error());
}

NamePattern::~NamePattern() = default;
NamePattern::NamePattern(NamePattern&&) noexcept = default;
NamePattern& NamePattern::operator=(NamePattern&&) noexcept = default;

bool NamePattern::found_in(std::string_view text) const {
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool NamePattern::matches_whole(std::string_view text) const {
  return RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

} // namespace dreamscope::whatif
