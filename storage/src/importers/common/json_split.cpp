#include "importers/common/json_split.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dreamscope::json_split {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// One past the closing quote of the string whose opening quote is at p; nullptr if unclosed.
// memchr finds the next quote at memory speed; a quote preceded by an odd run of backslashes
// is escaped, and the search goes on after it.
const char* skip_string(const char* p, const char* end) {
  const char* q = p + 1;
  while (q < end) {
    const void* found = std::memchr(q, '"', static_cast<std::size_t>(end - q));
    if (!found) return nullptr;
    const char* quote = static_cast<const char*>(found);
    std::size_t backslashes = 0;
    for (const char* b = quote; b > p + 1 && b[-1] == '\\'; --b) ++backslashes;
    if (backslashes % 2 == 0) return quote + 1;
    q = quote + 1;
  }
  return nullptr;
}

} // namespace

const char* skip_space(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}

const char* skip_value(const char* p, const char* end) {
  if (p >= end) return nullptr;
  if (*p == '"') return skip_string(p, end);
  if (*p == '{' || *p == '[') {
    // Depth only: which bracket closes which is simdjson's to check.
    std::size_t depth = 0;
    while (p < end) {
      const char c = *p;
      if (c == '"') {
        p = skip_string(p, end);
        if (!p) return nullptr;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return p + 1;
      }
      ++p;
    }
    return nullptr;
  }
  // A number, true, false, null (or junk, for simdjson to reject): up to a delimiter.
  while (p < end && !is_space(*p) && *p != ',' && *p != '}' && *p != ']') ++p;
  return p;
}

const char* skip_value(const char* p, const char* end, TextSupply* supply) {
  if (!supply) return skip_value(p, end);
  // A value cut by the readable end may go on: ask for twice the text, until it ends.
  for (std::size_t ahead = std::size_t{1} << 16;; ahead *= 2) {
    const char* readable = supply->readable(p + std::min<std::size_t>(ahead, static_cast<std::size_t>(end - p)));
    const char* after = skip_value(p, readable);
    if (readable >= end || (after && after < readable)) return after;
  }
}

ObjectFields::Step ObjectFields::read_field(const char* end, std::string_view& raw_key, const char*& value) {
  const char* p = skip_space(p_, end);
  if (p >= end) return Step::OutOfText;
  if (*p == '}') {
    closed_ = true;
    p_ = p + 1;
    return Step::Closed;
  }
  if (!first_) {
    if (*p != ',') return Step::Damaged;
    p = skip_space(p + 1, end);
    if (p >= end) return Step::OutOfText;
  }
  if (*p != '"') return Step::Damaged;
  const char* key_end = skip_string(p, end);
  if (!key_end) return Step::OutOfText;
  const char* colon = skip_space(key_end, end);
  if (colon >= end) return Step::OutOfText;
  if (*colon != ':') return Step::Damaged;
  const char* v = skip_space(colon + 1, end);
  if (v >= end) return Step::OutOfText;
  first_ = false;
  raw_key = std::string_view(p, static_cast<std::size_t>(key_end - p));
  value = v;
  p_ = v;
  return Step::Field;
}

bool ObjectFields::next(std::string_view& raw_key, const char*& value) {
  if (closed_) return false;
  // Where the readable text ends before the field can be told, more of it is asked for and
  // the field read again: read_field changes nothing until it finds a field or the '}'.
  for (;;) {
    const Step step = read_field(readable_, raw_key, value);
    if (step != Step::OutOfText || readable_ >= end_) return step == Step::Field;
    // Twice what was readable past the field's start (resume() may have put it past that).
    const char* from = std::max(readable_, p_);
    const std::size_t ahead = std::max<std::size_t>(std::size_t{1} << 16, static_cast<std::size_t>(from - p_));
    readable_ = supply_->readable(from + std::min(ahead, static_cast<std::size_t>(end_ - from)));
  }
}

namespace {

// Bit i of each mask: byte i of the block is that character.
struct BlockMasks {
  std::uint64_t quote = 0, backslash = 0, open = 0, close = 0, comma = 0;
};

BlockMasks masks_of(const char* block) {
  BlockMasks m;
#if defined(__SSE2__)
  // '[' and '{' differ in bit 5 only, as do ']' and '}': one compare each after setting it.
  const __m128i bit5 = _mm_set1_epi8(0x20);
  for (int part = 0; part < 4; ++part) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 16 * part));
    const __m128i folded = _mm_or_si128(bytes, bit5);
    auto mask = [&](__m128i in, char c) {
      return static_cast<std::uint64_t>(static_cast<std::uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(in, _mm_set1_epi8(c)))))
             << (16 * part);
    };
    m.quote |= mask(bytes, '"');
    m.backslash |= mask(bytes, '\\');
    m.open |= mask(folded, '{');
    m.close |= mask(folded, '}');
    m.comma |= mask(bytes, ',');
  }
#else
  for (int i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    switch (block[i]) {
      case '"': m.quote |= bit; break;
      case '\\': m.backslash |= bit; break;
      case '{': case '[': m.open |= bit; break;
      case '}': case ']': m.close |= bit; break;
      case ',': m.comma |= bit; break;
      default: break;
    }
  }
#endif
  return m;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define DREAMSCOPE_HAVE_AVX2_MASKS 1
// The same masks 32 bytes at a time, for CPUs with AVX2 (chosen at run time).
__attribute__((target("avx2"))) inline BlockMasks masks_of_avx2(const char* block) {
  BlockMasks m;
  const __m256i bit5 = _mm256_set1_epi8(0x20);
  for (int part = 0; part < 2; ++part) {
    const __m256i bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32 * part));
    const __m256i folded = _mm256_or_si256(bytes, bit5);
    const int shift = 32 * part;
    // No lambda: it would not inherit the function's target.
    m.quote |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8('"'))))} << shift;
    m.backslash |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8('\\'))))} << shift;
    m.open |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, _mm256_set1_epi8('{'))))} << shift;
    m.close |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(folded, _mm256_set1_epi8('}'))))} << shift;
    m.comma |= std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(','))))} << shift;
  }
  return m;
}
#endif

// Bit i: the xor of bits 0..i. Over the unescaped quotes: inside a string (its opening quote
// included, its closing quote not).
inline std::uint64_t prefix_xor(std::uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

// What ArrayRuns needs of a 64-byte block: its brackets and commas outside strings, the
// string and escape state after it, and, where the array cannot close in it (more brackets
// open before it than close in it), the commas at the array's own depth.
struct BlockScan {
  std::uint64_t open = 0, close = 0, comma = 0;
  bool may_close = false;
  std::uint64_t separators = 0; // commas at depth 1; where !may_close
  std::size_t depth_after = 0;  // where !may_close
  bool in_string_after = false, escaped_after = false;
};

template <BlockMasks (*Masks)(const char*)>
inline __attribute__((always_inline)) BlockScan scan_block(const char* block, bool in_string_before,
                                                           bool escaped_before, std::size_t depth) {
  const BlockMasks m = Masks(block);
  BlockScan scan;
  // Escaped bytes: each backslash not itself escaped escapes the byte after it. Backslashes
  // are rare in traces, so they are followed one by one.
  std::uint64_t escaped = escaped_before ? 1 : 0;
  for (std::uint64_t b = m.backslash & ~escaped; b != 0;) {
    const int i = __builtin_ctzll(b);
    if (i == 63) {
      scan.escaped_after = true;
      break;
    }
    escaped |= std::uint64_t{2} << i;
    b &= ~((std::uint64_t{4} << i) - 1); // past the backslash and the byte it escapes
  }
  const std::uint64_t in_string = prefix_xor(m.quote & ~escaped) ^ (in_string_before ? ~std::uint64_t{0} : 0);
  scan.in_string_after = (in_string >> 63) & 1;
  scan.open = m.open & ~in_string;
  scan.close = m.close & ~in_string;
  scan.comma = m.comma & ~in_string;
  const auto count = [](std::uint64_t x) { return static_cast<std::size_t>(__builtin_popcountll(x)); };
  scan.may_close = depth <= count(scan.close);
  if (!scan.may_close) {
    // The depth at each comma is the brackets opened before it less those closed: two
    // popcounts, not a branch per bracket. Most commas are inside events (between fields,
    // in args), and most blocks close too few brackets to come back to the array's depth:
    // then none of their commas is a separator, and none is looked at.
    const std::uint64_t commas = depth > count(scan.close) + 1 ? 0 : scan.comma;
    for (std::uint64_t bits = commas; bits != 0; bits &= bits - 1) {
      const int i = __builtin_ctzll(bits);
      const std::uint64_t before = (std::uint64_t{1} << i) - 1;
      if (depth + count(scan.open & before) - count(scan.close & before) == 1) scan.separators |= std::uint64_t{1} << i;
    }
    scan.depth_after = depth + count(scan.open) - count(scan.close);
  }
  return scan;
}

BlockScan scan_block_baseline(const char* block, bool in_string, bool escaped, std::size_t depth) {
  return scan_block<masks_of>(block, in_string, escaped, depth);
}

// Where the scan must look closer: from `state.at` on, the first block that may hold a
// separator or the array's ']', its scan in `found` and the state before it in `state`;
// false where no whole block before `limit` does (`state` then at the first block that does
// not fit). Most blocks lie inside an element and hold neither: a loop over them keeps the
// state in registers, where a call per block and its result through memory made the scan of
// the MTIA trace 10-20 % slower.
struct ScanState {
  const char* at;
  std::size_t depth;
  bool in_string, escaped;
};

template <BlockMasks (*Masks)(const char*)>
inline __attribute__((always_inline)) bool skip_blocks(ScanState& state, const char* limit, BlockScan& found) {
  const char* p = state.at;
  std::size_t depth = state.depth;
  bool in_string = state.in_string, escaped = state.escaped;
  bool any = false;
  while (limit - p >= 64) {
    const BlockScan scan = scan_block<Masks>(p, in_string, escaped, depth);
    if (scan.may_close || scan.separators != 0) {
      found = scan;
      any = true;
      break;
    }
    depth = scan.depth_after;
    in_string = scan.in_string_after;
    escaped = scan.escaped_after;
    p += 64;
  }
  state = {p, depth, in_string, escaped};
  return any;
}

bool skip_blocks_baseline(ScanState& state, const char* limit, BlockScan& found) {
  return skip_blocks<masks_of>(state, limit, found);
}

#if defined(DREAMSCOPE_HAVE_AVX2_MASKS)
// For CPUs with AVX2 (and so popcnt, which the baseline target lacks); chosen at run time by
// a pointer set at start-up, not an ifunc, which sanitizers' start-up does not survive.
__attribute__((target("avx2,popcnt"))) BlockScan scan_block_avx2(const char* block, bool in_string, bool escaped,
                                                                  std::size_t depth) {
  return scan_block<masks_of_avx2>(block, in_string, escaped, depth);
}

__attribute__((target("avx2,popcnt"))) bool skip_blocks_avx2(ScanState& state, const char* limit, BlockScan& found) {
  return skip_blocks<masks_of_avx2>(state, limit, found);
}
#endif

using ScanBlockFn = BlockScan (*)(const char*, bool, bool, std::size_t);
using SkipBlocksFn = bool (*)(ScanState&, const char*, BlockScan&);

bool cpu_has_avx2() {
#if defined(DREAMSCOPE_HAVE_AVX2_MASKS)
  __builtin_cpu_init(); // this runs among the static constructors, maybe before libgcc's
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
#else
  return false;
#endif
}

#if defined(DREAMSCOPE_HAVE_AVX2_MASKS)
const ScanBlockFn scan_block_fn = cpu_has_avx2() ? scan_block_avx2 : scan_block_baseline;
const SkipBlocksFn skip_blocks_fn = cpu_has_avx2() ? skip_blocks_avx2 : skip_blocks_baseline;
#else
const ScanBlockFn scan_block_fn = scan_block_baseline;
const SkipBlocksFn skip_blocks_fn = skip_blocks_baseline;
#endif

} // namespace

ArrayRuns::ArrayRuns(const char* open, const char* end, std::size_t bytes, TextSupply* supply)
    : end_(end), bytes_(bytes), supply_(supply), readable_(supply ? open + 1 : end), run_start_(nullptr),
      scan_(open + 1) {
  run_start_ = skip_readable_space(open + 1);
}

void ArrayRuns::make_readable(const char* p) {
  if (readable_ < end_ && readable_ < p) readable_ = supply_->readable(std::min(p, end_));
}

const char* ArrayRuns::skip_readable_space(const char* p) {
  for (;;) {
    const char* q = skip_space(p, readable_);
    if (q < readable_ || readable_ >= end_) return q;
    make_readable(q + std::min<std::size_t>(std::size_t{1} << 16, static_cast<std::size_t>(end_ - q)));
    p = q;
  }
}

const char* ArrayRuns::next_separator(const char* from) {
  while (scan_ < end_) {
    // The block, and the 64 bytes after it: a parser of a run that ends in this block reads
    // that far as padding, and text is only written where no one reads.
    make_readable(scan_ + std::min<std::size_t>(128, static_cast<std::size_t>(end_ - scan_)));
    // Past the blocks that hold no separator and not the array's end, to one that may.
    ScanState state{scan_, depth_, in_string_, escaped_};
    BlockScan scan;
    const bool closer = skip_blocks_fn(state, readable_ >= end_ ? end_ : readable_ - 64, scan);
    scan_ = state.at;
    depth_ = state.depth;
    in_string_ = state.in_string;
    escaped_ = state.escaped;
    if (!closer) {
      if (scan_ >= end_) break;
      // Either the next block and the 64 bytes after it are not readable yet (asked for
      // above), or the last block is short: copied, with spaces after the text.
      if (end_ - scan_ >= 64) continue;
      char tail[64];
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, scan_, static_cast<std::size_t>(end_ - scan_));
      scan = scan_block_fn(tail, in_string_, escaped_, depth_);
    }
    // A separator found inside this block is returned with the state left at the block's
    // start: the next call scans the block again, from a later `from`.
    std::size_t depth = depth_;
    if (!scan.may_close) {
      for (std::uint64_t bits = scan.separators; bits != 0; bits &= bits - 1) {
        if (const char* at = element_separator(scan_ + __builtin_ctzll(bits), from)) return at;
      }
      depth = scan.depth_after;
    } else {
      for (std::uint64_t bits = scan.open | scan.close | scan.comma; bits != 0; bits &= bits - 1) {
        const int i = __builtin_ctzll(bits);
        const std::uint64_t bit = std::uint64_t{1} << i;
        const char* at = scan_ + i;
        if (scan.open & bit) {
          ++depth;
        } else if (scan.close & bit) {
          if (--depth == 0) return at; // the array's own ']'
        } else if (depth == 1) {
          if (const char* found = element_separator(at, from)) return found;
        }
      }
    }
    depth_ = depth;
    in_string_ = scan.in_string_after;
    escaped_ = scan.escaped_after;
    scan_ += 64;
  }
  return nullptr;
}

// A comma at the array's depth: `at` where the scan stops there (a separator at or after
// `from`, or damage), else nullptr after noting it.
const char* ArrayRuns::element_separator(const char* at, const char* from) {
  // A comma with no element before it (",," or "[,") is damage: the scan stops there, and
  // the run that holds it is handed over as damaged.
  const char* before = at;
  while (before > run_start_ && is_space(before[-1])) --before;
  if (before == run_start_ || before[-1] == ',') {
    empty_element_ = true;
    return at;
  }
  if (at > run_start_) {
    last_comma_ = at;
    if (separators_.empty() || at > separators_.back()) separators_.push_back(at);
  }
  return at >= from ? at : nullptr; // a comma between two elements
}

bool ArrayRuns::next(const char*& first, const char*& last) {
  separators_.clear();
  if (done_) return false;
  const char* start = run_start_;
  if (at_close_) {
    closed_ = done_ = true;
    position_ = start + 1;
    return false;
  }
  // The first separator at the array's depth at or after the run's wanted end.
  const char* wanted = start + std::min<std::size_t>(bytes_, static_cast<std::size_t>(end_ - start));
  const char* separator = next_separator(wanted);
  first = start;
  last = separator;
  while (last && last > first && is_space(last[-1])) --last;
  // Damage: the text ends inside the array, the array closes with '}', or an element is
  // missing (",," or ",]").
  if (!separator || *separator == '}' || empty_element_ || (last > first && last[-1] == ',')) {
    // The elements before the last comma that ends one are a run; from the element after
    // that comma on, the text is damaged (and simdjson may still read an element or two of
    // it before it says what is wrong).
    done_ = true;
    if (last_comma_ > start) {
      last = last_comma_;
      while (last > first && is_space(last[-1])) --last;
      position_ = skip_readable_space(last_comma_ + 1);
      drop_separators_from(last);
      return true;
    }
    position_ = start;
    return false;
  }
  if (*separator == ']') {
    at_close_ = true;
    run_start_ = separator;
    if (last == first) return next(first, last); // an empty array, or a trailing comma
    drop_separators_from(last);
    return true;
  }
  run_start_ = skip_readable_space(separator + 1);
  drop_separators_from(last);
  return true;
}

void ArrayRuns::drop_separators_from(const char* end) {
  while (!separators_.empty() && separators_.back() >= end) separators_.pop_back();
}

} // namespace dreamscope::json_split
