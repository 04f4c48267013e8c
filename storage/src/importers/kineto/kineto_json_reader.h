// Reading a PyTorch profiler (Kineto) JSON document: the JSON side of import_kineto.cpp, which
// keeps what the events mean. simdjson's on-demand parser reads each traceEvents element
// field by field into a RawEvent, in batches that the sink gets in the document's order (the
// parsing may run on a thread of its own, while the calling thread cuts the runs ahead of it
// and hands the batches over); the other top-level fields go to the sink as values. No
// document tree is built.
//
// The events go to simdjson in runs of 256 kB (json_split.h), so that its index of the text,
// 4 bytes per structural character, stays a few MB instead of most of the file's size, and
// the pages of each run are given back once it is read. A large input arrives as it is read
// (import_input.h, open_input): the text the reader asks for is read or inflated then, and
// the pages given back serve the text still to come, so an import holds a few MB of it.
// Damage keeps what came before it: a syntax error before any event fails the import, after
// one it is counted (kineto_damaged_json) and the reading stops.
#pragma once

#include "dreamscope/storage/importers.h"
#include "importers/common/import_input.h"
#include "importers/common/json_split.h"
#include "importers/kineto/kineto_format.h"

#include <simdjson.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope::kineto {

// What the reader hands over. The strings of an event are views into the text, valid until
// the next event; what outlives it must be copied, as the text is given back run by run.
// The reader may parse on a thread of its own: handle_event and top_level_field are always
// called on the thread that called read(), in the document's order; the two questions below
// may be asked from the reading thread, and must depend on the event alone.
class KinetoJsonSink {
 public:
  virtual void handle_event(const RawEvent& event) = 0;
  // A top-level field other than traceEvents (deviceProperties, distributedInfo, ...).
  virtual void top_level_field(std::string_view key, od::value& value, od::document& doc) = 0;
  // Whether the event's args are read at all, asked when its "args" field comes: simdjson
  // skips those that are not without parsing them. The fields before "args" are read by
  // then (Kineto writes ph, cat and name first); one not yet read is empty.
  virtual bool args_read(const RawEvent& event) const = 0;
  // Whether handing over this event again, once handled, would change nothing: the reader
  // then skips elements written byte for byte as this one was, unparsed, and only counts them.
  virtual bool repeat_changes_nothing(const RawEvent& event) const = 0;

 protected:
  ~KinetoJsonSink() = default;
};

class KinetoJsonReader {
 public:
  KinetoJsonReader(const std::filesystem::path& path, ImportStats& stats, const ImportProgressFn& progress,
                   KinetoJsonSink& sink);

  // Reads the document of `input` that starts at byte `first` ('{' or '['), after a byte
  // order mark of `bom` bytes. Whether it had a traceEvents array. Throws TraceError naming
  // the file where the document is not JSON.
  bool read(InputBuffer& input, std::size_t bom, std::size_t first);
  // Whether damage stopped the reading before the document's end.
  bool stopped() const { return stopped_; }

  // For the sink's own reading of a value: its type and text (strings unescaped, others as
  // written). False where simdjson cannot read it.
  bool read_value(od::value& v, JsonValue& out) const;
  // A syntax error in `doc`: fails the import before any event was read, else counts it and
  // stops the reading. `what` replaces simdjson's wording.
  void json_error(simdjson::error_code error, od::document& doc, const char* what = nullptr);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  // The input's text as it becomes readable (inflated or read as the reading goes).
  struct TextReadable final : json_split::TextSupply {
    explicit TextReadable(KinetoJsonReader& r) : reader(r) {}
    const char* readable(const char* p) override;
    KinetoJsonReader& reader;
  };
  json_split::TextSupply* supply() { return input_->streamed() ? &text_readable_ : nullptr; }
  TextReadable text_readable_{*this};
  bool read_in_pieces(char* open);
  const char* read_event_array(char* open);
  // The events of a document or run, read into batch_ (and handed over from there).
  void read_events(od::array& events, od::document& doc);
  bool read_args(od::value& v, RawEvent& event);
  void read_error(simdjson::error_code error, od::document& doc, const char* what = nullptr);
  // A run of elements, parsed by `parser` into batch_ (see read_event_array).
  // A run of elements as ArrayRuns cut it: from its first element's first byte to one past
  // its last element's last, the commas between them, and where the scanner went on from.
  struct CutRun {
    const char* first = nullptr;
    const char* last = nullptr;
    std::vector<const char*> separators;
    const char* rescanned = nullptr;
  };
  // The next run of `runs` into `run`; false where there is none (runs.next()).
  static bool cut_next(json_split::ArrayRuns& runs, CutRun& run);
  void read_event_run(od::parser& parser, const CutRun& run);
  bool skip_repeated_elements(char* first, char* last, const std::vector<const char*>& separators,
                              const char* rescanned, std::string_view& kept);
  const char* read_event_runs_in_turn(json_split::ArrayRuns& runs);
  const char* read_event_runs_alongside(json_split::ArrayRuns& runs);
  bool reads_alongside(const char* open) const;
  void read_field_alone(std::string_view raw_key, const char* value, const char* value_end);
  void damaged(const char* at, const char* what);
  void read_whole_document(char first);
  void top_level_field(std::string_view key, od::value& value, od::document& doc);
  void enter_document(const char* text, std::size_t length, std::uint64_t offset);
  std::uint64_t offset(od::document& doc) const;
  bool string_as_written(const char* start, std::string_view& text) const;
  bool key_of(od::field& field, std::string_view& key) const;
  void report_damage(const std::string& message, std::uint64_t at);

  // Events read but not yet handed over, with what the reading noted between them. The sink
  // gets them from hand_over(), on the thread that called read().
  struct ReadNote {
    const char* id;
    std::string example;
  };
  struct ReadEvent {
    RawEvent event;
    std::uint64_t number = 0;    // the element's number in the array (events_read once read)
    bool handed_over = false;    // false: a field of the wrong type, or not an object
    std::vector<ReadNote> notes; // before the event, in order
  };
  struct Batch {
    std::vector<ReadEvent> events; // events[0, size) hold this batch
    std::size_t size = 0;
    std::uint64_t read_after = 0;   // events_read once the batch is handed over
    std::uint64_t bytes_done = 0;   // where the reading is in the file, for progress
    bool error = false;             // the reading stopped after these events: damaged JSON
    std::string error_message;
    std::uint64_t error_offset = 0;
    std::size_t give_back_below = 0; // text below this offset is read (0: nothing)
    void clear() { size = 0; error = false; error_message.clear(); give_back_below = 0; }
    ReadEvent& add() {
      if (size == events.size()) events.emplace_back();
      ReadEvent& e = events[size++];
      e.event.clear();
      e.notes.clear();
      e.handed_over = false;
      return e;
    }
  };
  void hand_over(Batch& batch);
  void read_in_turn(od::array& events, od::document& doc);
  void hand_over_read(od::document& doc);
  // Events in a batch read in turn before it is handed over (a run holds a few thousand).
  static constexpr std::size_t kBatchEvents = 4096;
  static std::atomic<unsigned> threads_reading_alongside_; // over every import in the process
  // Events are parsed in runs of about this many bytes (read_in_pieces), unless
  // DREAMSCOPE_IMPORT_RUN_BYTES says otherwise (tests and fuzzing, for many runs in a small file).
  static constexpr std::size_t kEventRunBytes = std::size_t{256} << 10;
  std::size_t run_bytes_ = kEventRunBytes;

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
  KinetoJsonSink& sink_;
  JsonValue name_value_;
  od::parser parser_;
  InputBuffer* input_ = nullptr;   // the input, whose pages read_event_array gives back
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
  std::uint64_t read_count_ = 0; // elements read so far, as the reading (maybe ahead) counts them
  Batch* batch_ = nullptr;       // the batch read_events fills
  Batch own_batch_;              // for reading in turn
  RepeatedTexts repeated_;
  // The run being read: the text of each element simdjson sees, and how many elements
  // skipped as repeats come before each of them (one more entry: those after the last).
  std::vector<std::string_view> run_elements_;
  std::vector<std::uint32_t> run_skipped_before_;
  std::size_t run_element_ = 0; // the next element of the run that read_events reads
  struct SkippedElement {
    char* first; // its first byte (or the space before it)
    char* comma; // the separator after it
  };
  std::vector<SkippedElement> skipped_elements_; // of the run, after its first element kept
};

} // namespace dreamscope::kineto
