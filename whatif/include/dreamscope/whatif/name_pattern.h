// A regular expression over the names in a trace (tasks, annotations, categories, threads),
// in RE2 syntax: Perl/ECMAScript classes, alternation, repetition and groups, without
// backreferences or lookaround. Matching takes time linear in the name's length whatever the
// pattern, so a selector written by anybody runs over names written by anybody in bounded time
// and stack (docs/whatif.md, "Name patterns"). `(a+)+$` on a 100 000-character name is as
// quick as `a`.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace re2 {
class RE2;
}

namespace dreamscope::whatif {

class NamePattern {
 public:
  // Throws std::invalid_argument with RE2's reason when `pattern` is not valid RE2 syntax.
  explicit NamePattern(std::string_view pattern);
  ~NamePattern();
  NamePattern(NamePattern&&) noexcept;
  NamePattern& operator=(NamePattern&&) noexcept;

  // The pattern matches somewhere in `text` (a search, as grep does).
  bool found_in(std::string_view text) const;
  // The pattern matches all of `text`.
  bool matches_whole(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::unique_ptr<re2::RE2> re_;
};

} // namespace dreamscope::whatif
