// Reading a PyTorch profiler (Kineto) JSON document: the JSON side of import_kineto.cpp, which
// keeps what the events mean. simdjson's on-demand parser reads each traceEvents element
// field by field into a RawEvent and hands it to the sink at once; the other top-level
// fields go to the sink as values. No document tree is built.
//
// The events go to simdjson in runs of 256 kB (json_split.h), so that its index of the text,
// 4 bytes per structural character, stays a few MB instead of most of the file's size, and
// the pages of each run are given back once it is read: an import holds the text about once.
// Damage keeps what came before it: a syntax error before any event fails the import, after
// one it is counted (kineto_damaged_json) and the reading stops.
#pragma once

#include "dreamscope/importers.h"
#include "import_input.h"
#include "kineto_format.h"

#include <simdjson.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::kineto {

// What the reader hands over. The strings of the event are views into the text, valid until
// the next event; what outlives it must be copied, as the text is given back run by run.
class KinetoJsonSink {
 public:
  virtual void handle_event() = 0; // the RawEvent given to the reader holds the element
  // A top-level field other than traceEvents (deviceProperties, distributedInfo, ...).
  virtual void top_level_field(std::string_view key, od::value& value, od::document& doc) = 0;
  // Whether the args of this metadata event ("ph": "M", its fields before "args" read) are
  // of use: simdjson skips those that are not without parsing them.
  virtual bool metadata_args_wanted(const RawEvent& event) = 0;
  // Whether handing over this event, just handled, again would change nothing: the reader
  // then skips elements written byte for byte as this one was, unparsed, and only counts them.
  virtual bool repeat_changes_nothing(const RawEvent& event) = 0;

 protected:
  ~KinetoJsonSink() = default;
};

class KinetoJsonReader {
 public:
  KinetoJsonReader(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress,
                   RawEvent& event, KinetoJsonSink& sink);

  // Reads the document of `input` that starts at byte `first` ('{' or '['), after a byte
  // order mark of `bom` bytes. Whether it had a traceEvents array. Throws TraceError naming
  // the file where the document is not JSON.
  bool read(InputBuffer& input, std::size_t bom, std::size_t first);
  // Whether damage stopped the reading before the document's end.
  bool stopped() const { return stopped_; }

  // For the sink's own reading of a value: its type and text (strings unescaped, others as
  // written). False where simdjson cannot read it.
  bool read_value(od::value& v, JsonValue& out);
  // A syntax error in `doc`: fails the import before any event was read, else counts it and
  // stops the reading. `what` replaces simdjson's wording.
  void json_error(simdjson::error_code error, od::document& doc, const char* what = nullptr);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  bool read_in_pieces(char* open);
  const char* read_event_array(char* open);
  void read_event_run(char* open, char* close, const std::vector<const char*>& separators, const char* rescanned);
  void blank_repeated_elements(char* first, char* last, const std::vector<const char*>& separators,
                               const char* rescanned);
  void count_skipped_before(std::size_t element);
  void read_field_alone(std::string_view raw_key, const char* value, const char* value_end);
  void damaged(const char* at, const char* what);
  void read_whole_document(char first);
  void top_level_field(std::string_view key, od::value& value, od::document& doc);
  void enter_document(const char* text, std::size_t length, std::uint64_t offset);
  std::uint64_t offset(od::document& doc) const;
  bool key_of(od::field& field, std::string_view& key);
  void read_events(od::array& events, od::document& doc);
  bool metadata_args_unused() const;
  bool read_args(od::value& v);

  // Events are parsed in runs of about this many bytes (read_in_pieces).
  static constexpr std::size_t kEventRunBytes = std::size_t{256} << 10;

  // Texts of elements whose repetition changes nothing (KinetoJsonSink::repeat_changes_nothing),
  // found by length first: most elements have a length no such text has, and cost a lookup.
  // Bounded, so that a trace of many distinct metadata events pays little for it.
  class RepeatedTexts {
   public:
    bool contains(std::string_view text) const;
    void add(std::string_view text);

   private:
    static constexpr std::size_t kMaxLength = 512, kMaxPerLength = 4;
    std::vector<std::vector<std::string>> by_length_ = std::vector<std::vector<std::string>>(kMaxLength);
  };

  const std::filesystem::path& path_;
  ImportStats& stats_;
  const ImportProgressFn& progress_;
  RawEvent& event_;
  KinetoJsonSink& sink_;
  JsonValue name_value_;
  od::parser parser_;
  ByteBuffer* storage_ = nullptr;  // the input, whose pages read_event_array gives back
  char* text_ = nullptr;           // the JSON, after any byte order mark
  const char* text_end_ = nullptr; // its end; readable padding follows up to storage_end_
  const char* storage_end_ = nullptr;
  const char* doc_text_ = nullptr; // the document simdjson parses now: a run, a field, all
  const char* doc_end_ = nullptr;
  std::uint64_t doc_offset_ = 0; // its first byte's offset in the file, about
  bool doc_started_ = false;
  // Copies parsed apart (a top-level field, the text after damage): events and names read
  // from them are views into them until the import ends.
  std::deque<simdjson::padded_string> kept_documents_;
  std::uint64_t bytes_total_ = 0;
  bool stopped_ = false, saw_events_ = false;
  std::uint64_t next_progress_ = 0x10000;
  RepeatedTexts repeated_;
  // The run being read: the text of each element simdjson sees, and how many elements
  // skipped as repeats come before each of them (one more entry: those after the last).
  std::vector<std::string_view> run_elements_;
  std::vector<std::uint32_t> run_skipped_before_;
  std::size_t run_element_ = 0; // the next element of the run that read_events reads
};

} // namespace dreamscope::kineto
