// Finds the top-level fields of a JSON object and runs of whole elements of a large array
// without parsing them, so that an importer can hand simdjson one field or a few megabytes of
// events at a time. simdjson indexes the document it parses up front, 4 bytes per structural
// character: 78 MB for the 87 MB of the MTIA trace, on top of the text itself.
//
// The scanner follows strings (with their escapes) and brackets only; it does not validate.
// simdjson validates each piece it parses, so a document the scanner accepts but simdjson does
// not still fails where it is damaged. Where the scanner cannot follow the text (a string or a
// bracket left open), it says so and where.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace dreamscope::json_split {

// The first byte at or after p that is not JSON whitespace (or end).
const char* skip_space(const char* p, const char* end);

// Text that becomes readable as it is read (a streamed input, inflated as the reading goes):
// readable(p) makes the bytes before p readable and returns where the readable text ends
// now, at p or after it, never past the text's end. Without one, all the text is readable.
class TextSupply {
 public:
  virtual const char* readable(const char* p) = 0;

 protected:
  ~TextSupply() = default;
};

// One past the JSON value that starts at p (a string, object, array or scalar), or nullptr
// where the text ends before the value does.
const char* skip_value(const char* p, const char* end);
// The same where the text arrives from `supply` (which may be null) as it is read.
const char* skip_value(const char* p, const char* end, TextSupply* supply);

// The fields of an object, in order: construct at its '{', then next() until it returns false.
class ObjectFields {
 public:
  ObjectFields(const char* open, const char* end, TextSupply* supply = nullptr)
      : p_(open + 1), end_(end), supply_(supply), readable_(supply ? open + 1 : end) {}
  // The next field: its key as written (quotes included) and where its value starts. The
  // caller moves past the value with skip_value() or otherwise, and says where with resume().
  bool next(std::string_view& raw_key, const char*& value);
  void resume(const char* after_value) { p_ = after_value; }
  // After next() returned false: whether the object closed, and one past its '}'.
  bool closed() const { return closed_; }
  const char* position() const { return p_; }

 private:
  enum class Step { Field, Closed, Damaged, OutOfText };
  Step read_field(const char* end, std::string_view& raw_key, const char*& value);

  const char* p_;
  const char* end_;
  TextSupply* supply_;
  const char* readable_; // the text before it is readable
  bool first_ = true, closed_ = false;
};

// Runs of whole elements of an array, each run about `bytes` long (at least one element).
// The array is scanned 64 bytes at a time (strings, their escapes and the brackets outside
// them as bit masks, as simdjson's first stage does), not byte by byte: the scan is a pass
// over every byte of the events, and at one byte per step it cost a fifth of an import.
class ArrayRuns {
 public:
  ArrayRuns(const char* open, const char* end, std::size_t bytes, TextSupply* supply = nullptr);
  // The next run: from its first element's first byte to one past its last element's last.
  bool next(const char*& first, const char*& last);
  // After next() returned false: whether the array closed (then position() is one past its
  // ']'), or else where the text the scanner could not follow starts (an element that does
  // not end before the text does).
  bool closed() const { return closed_; }
  const char* position() const { return position_; }
  // Where the next scan starts: no byte before it is read again.
  const char* resume_point() const { return scan_; }
  // The commas between the elements of the run next() gave last, in order: the scan finds
  // them anyway, and with them a reader sees each element's text before parsing the run.
  const std::vector<const char*>& separators() const { return separators_; }

 private:
  // Scans from scan_ to the first comma or closing bracket at the array's own depth at or
  // after `from`; nullptr where the text ends first.
  const char* next_separator(const char* from);
  const char* element_separator(const char* at, const char* from);
  // skip_space, asking the supply for more text while the readable text is all space.
  const char* skip_readable_space(const char* p);
  // The text before min(p, end_) made readable.
  void make_readable(const char* p);
  // Forgets the separators at or after `end`, the end of the run given.
  void drop_separators_from(const char* end);

  const char* end_;
  std::size_t bytes_;
  TextSupply* supply_;
  const char* readable_; // the text before it is readable
  const char* run_start_;         // the first element of the next run (or the array's end)
  const char* position_ = nullptr;
  // The scan's state at scan_, a multiple of 64 bytes from the array's '[' + 1.
  const char* scan_;
  std::size_t depth_ = 1;     // brackets open, the array's own included
  bool in_string_ = false;    // scan_ is inside a string
  bool escaped_ = false;      // the byte at scan_ is escaped by a backslash before it
  bool closed_ = false, done_ = false;
  bool at_close_ = false;      // run_start_ is the array's ']'
  bool empty_element_ = false; // the scan stopped at a comma with no element before it
  const char* last_comma_ = nullptr; // the last comma seen that ends an element
  std::vector<const char*> separators_;
};

} // namespace dreamscope::json_split
