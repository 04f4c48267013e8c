#include "importers/kineto/kineto_json_reader.h"

#include "dreamscope/storage/trace_file.h"
#include "importers/common/json_split.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>

namespace dreamscope::kineto {

KinetoJsonReader::KinetoJsonReader(const std::filesystem::path& path, ImportStats& stats,
                                   const ImportProgressFn& progress, KinetoJsonSink& sink)
    : path_(path), stats_(stats), progress_(progress), sink_(sink), batch_(&own_batch_) {}

const char* KinetoJsonReader::TextReadable::readable(const char* p) {
  char* const data = reader.input_->data();
  return data + reader.input_->ensure(static_cast<std::size_t>(p - data));
}

void KinetoJsonReader::fail(const std::string& what) const { throw TraceError(path_.string() + ": " + what); }

bool KinetoJsonReader::read(InputBuffer& input, std::size_t bom, std::size_t first) {
  bytes_total_ = input.size;
  input_ = &input;
  text_ = input.storage.data() + bom;
  text_end_ = text_ + (input.size - bom);
  storage_end_ = input.storage.data() + input.storage.size();
  if (!read_in_pieces(text_ + (first - bom))) read_whole_document(text_[first - bom]);
  return saw_events_;
}

// The document a piece at a time (json_split.h): each top-level field but traceEvents as a
// document of its own, and the events in runs of about 256 kB, parsed in place between two
// separator bytes turned into brackets for the while. simdjson's index then takes a few MB,
// not four bytes per structural character of the whole file. False, with nothing read, where
// the scanner cannot follow the document from its start: the whole-document parse then
// says what is wrong with it, as simdjson words it.
bool KinetoJsonReader::read_in_pieces(char* open) {
  if (*open == '[') {
    saw_events_ = true;
    read_event_array(open);
    return true;
  }
  json_split::ObjectFields fields(open, text_end_, supply());
  std::string_view raw_key;
  const char* value = nullptr;
  bool read_any = false;
  while (fields.next(raw_key, value)) {
    if (raw_key == "\"traceEvents\"" && *value == '[') {
      saw_events_ = read_any = true;
      const char* after = read_event_array(const_cast<char*>(value));
      if (!after || stopped_) return true;
      fields.resume(after);
      continue;
    }
    const char* value_end = json_split::skip_value(value, text_end_, supply());
    if (!value_end) break;
    read_any = true;
    read_field_alone(raw_key, value, value_end);
    if (stopped_) return true;
    fields.resume(value_end);
  }
  if (fields.closed()) return true;
  if (!read_any) return false;
  damaged(fields.position(), "a top-level field that does not end");
  return true;
}

// The events of the array that opens at `open`; one past its ']', or nullptr where the
// reading stopped (damaged JSON, reported).
const char* KinetoJsonReader::read_event_array(char* open) {
  if (const char* bytes = std::getenv("DREAMSCOPE_IMPORT_RUN_BYTES")) {
    run_bytes_ = std::clamp<std::size_t>(std::strtoull(bytes, nullptr, 10), 1, kEventRunBytes);
  }
  json_split::ArrayRuns runs(open, text_end_, run_bytes_, supply());
  read_count_ = stats_.events_read;
  const char* after = reads_alongside(open) ? read_event_runs_alongside(runs) : read_event_runs_in_turn(runs);
  if (stopped_) return nullptr;
  if (after) return after;
  damaged(runs.position(), "an event that does not end");
  return nullptr;
}

// One run after the other, each handed over before the next is parsed. One past the array's
// ']', or nullptr where it did not close or the reading stopped.
const char* KinetoJsonReader::read_event_runs_in_turn(json_split::ArrayRuns& runs) {
  CutRun run;
  while (cut_next(runs, run)) {
    read_event_run(parser_, run);
    hand_over(own_batch_);
    if (stopped_) return nullptr;
  }
  return runs.closed() ? runs.position() : nullptr;
}

// Whether to parse the events on a thread of their own while this one hands them over: for
// arrays of a few runs or more, where a core is free. Reading the JSON takes a little longer
// than what the importer makes of the events; side by side an MTIA import takes 0.7 of the
// time on two cores. Imports running side by side (a job's ranks) leave the cores to each other.
std::atomic<unsigned> KinetoJsonReader::threads_reading_alongside_{0};

bool KinetoJsonReader::reads_alongside(const char* open) const {
  if (text_end_ - open < static_cast<std::ptrdiff_t>(4 * run_bytes_)) return false;
  // DREAMSCOPE_IMPORT_THREADS: 1 reads in turn, 2 alongside whatever else runs (tests, benches).
  const char* threads = std::getenv("DREAMSCOPE_IMPORT_THREADS");
  const std::string_view wanted = threads ? threads : "";
  if (wanted == "1") return false;
  if (wanted == "2") return true;
  return threads_reading_alongside_.load() + 2 <= std::max(1u, std::thread::hardware_concurrency());
}

// The runs parsed on a thread of their own while this thread cuts the runs ahead of it, hands
// each batch over as soon as it is parsed, and inflates the text ahead while it waits. Two
// batches, each with its own simdjson parser (whose strings the events point into), go back
// and forth between the threads. A run cut here goes to the reading thread once the scanner
// has moved past its last byte: the reader writes brackets around the run and blanks repeats
// in it, bytes the scanner must not be reading at the time. On two cores the scanner's pass
// was a fifth of the reading thread's work, which was the whole length of an import.
const char* KinetoJsonReader::read_event_runs_alongside(json_split::ArrayRuns& runs) {
  struct Slot {
    Batch batch;
    od::parser parser;
    bool full = false; // parsed, not yet handed over
  };
  std::array<Slot, 2> slots;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<CutRun> released; // cut, and the scanner is past them: the reading thread's to parse
  bool cutting_done = false, reading_done = false, cancelled = false;
  std::exception_ptr reading_failure;
  threads_reading_alongside_ += 2;
  // What a thread does while it waits: `work` for as long as `done` (asked under the lock)
  // is false and `work` found something to do.
  const auto busy_until = [&](auto done, auto work) {
    for (;;) {
      {
        std::lock_guard lock(mutex);
        if (done()) return;
      }
      if (!work()) return;
    }
  };

  std::thread reading;
  const auto read_runs = [&] {
    try {
      for (std::size_t k = 0;; ++k) {
        Slot& slot = slots[k % 2];
        CutRun run;
        const auto ready = [&] { return cancelled || (!slot.full && (!released.empty() || cutting_done)); };
        // Until a run is there, inflate (or read) the text ahead, as the other thread does
        // while it waits: whichever thread is idle does it.
        busy_until(ready, [&] { return input_->read_ahead(); });
        {
          std::unique_lock lock(mutex);
          changed.wait(lock, ready);
          if (cancelled || released.empty()) break;
          run = std::move(released.front());
          released.pop_front();
        }
        changed.notify_all(); // room to release another run
        batch_ = &slot.batch;
        read_event_run(slot.parser, run);
        const bool damaged = slot.batch.error;
        {
          std::lock_guard lock(mutex);
          slot.full = true;
        }
        changed.notify_all();
        if (damaged) break;
      }
    } catch (...) {
      reading_failure = std::current_exception();
    }
    {
      std::lock_guard lock(mutex);
      reading_done = true;
    }
    changed.notify_all();
  };
  try {
    reading = std::thread(read_runs);
  } catch (const std::system_error&) { // no thread to be had (a process or container limit)
    threads_reading_alongside_ -= 2;
    return read_event_runs_in_turn(runs);
  }

  auto stop_reading = [&] {
    {
      std::lock_guard lock(mutex);
      cancelled = true;
    }
    changed.notify_all();
    reading.join();
    threads_reading_alongside_ -= 2;
    batch_ = &own_batch_;
  };
  // Runs cut but not yet released: the scanner may still read their last bytes.
  std::deque<CutRun> cut;
  auto release = [&](bool all) {
    std::size_t n = 0;
    {
      std::lock_guard lock(mutex);
      while (!cut.empty() && (all || cut.front().last < runs.resume_point())) {
        released.push_back(std::move(cut.front()));
        cut.pop_front();
        ++n;
      }
      if (all) cutting_done = true;
    }
    if (n > 0 || all) changed.notify_all();
  };
  // The next run cut, while the reading thread has fewer than two to go: whether one was.
  auto cut_ahead = [&] {
    {
      std::lock_guard lock(mutex);
      if (cutting_done || released.size() >= 2 || reading_done) return false;
    }
    CutRun run;
    if (!cut_next(runs, run)) {
      release(true);
      return true;
    }
    cut.push_back(std::move(run));
    release(false);
    return true;
  };
  try {
    for (std::size_t k = 0;; ++k) {
      Slot& slot = slots[k % 2];
      // Until the run is parsed: cut the next runs, else inflate (or read) the text ahead.
      busy_until([&] { return slot.full || reading_done; }, [&] { return cut_ahead() || input_->read_ahead(); });
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return slot.full || reading_done; });
        if (!slot.full) break; // the reading ended, and every run it parsed is handed over
      }
      hand_over(slot.batch);
      {
        std::lock_guard lock(mutex);
        slot.full = false;
      }
      changed.notify_all();
      if (stopped_) break;
    }
  } catch (...) {
    stop_reading();
    throw;
  }
  stop_reading();
  if (reading_failure) std::rethrow_exception(reading_failure);
  if (stopped_) return nullptr;
  return runs.closed() ? runs.position() : nullptr;
}

bool KinetoJsonReader::cut_next(json_split::ArrayRuns& runs, CutRun& run) {
  if (!runs.next(run.first, run.last)) return false;
  run.separators = runs.separators();
  run.rescanned = runs.resume_point();
  return true;
}

// The run `run` (cut by ArrayRuns), into a cleared batch_: its elements and the separator
// bytes around them parsed as the array they are, with `parser`.
void KinetoJsonReader::read_event_run(od::parser& parser, const CutRun& run) {
  const char* const first = run.first;
  const char* const last = run.last;
  batch_->clear();
  batch_->read_after = read_count_;
  // What was read is not read again (names and categories were copied): its pages go back
  // once the batch is handed over, and an import holds the text of a run at a time.
  batch_->give_back_below = static_cast<std::size_t>(std::min(last, run.rescanned) - input_->data());
  if (last <= first) return; // not a run (json_split never gives one)
  // simdjson reads the elements from the first one kept to the last, between two bytes
  // outside them turned into brackets for the while.
  std::string_view kept;
  if (!skip_repeated_elements(const_cast<char*>(first), const_cast<char*>(last), run.separators, run.rescanned,
                              kept)) {
    read_count_ += run_skipped_before_.back(); // every element repeats one already read
    batch_->read_after = read_count_;
    batch_->bytes_done = static_cast<std::uint64_t>(last - text_);
    run_elements_.clear();
    return;
  }
  char* const open = const_cast<char*>(kept.data()) - 1;
  char* const close = const_cast<char*>(kept.data() + kept.size());
  const char saved_open = *open, saved_close = *close;
  *open = '[';
  *close = ']';
  const std::size_t length = static_cast<std::size_t>(close + 1 - open);
  enter_document(open, length, static_cast<std::uint64_t>(open - text_));
  od::document doc;
  od::array events;
  const simdjson::padded_string_view json(open, length, static_cast<std::size_t>(storage_end_ - open));
  simdjson::error_code error = parser.iterate(json).get(doc);
  if (!error) {
    doc_started_ = true;
    error = doc.get_array().get(events);
  }
  if (error) {
    read_error(error, doc);
  } else {
    read_events(events, doc);
    if (!batch_->error) read_count_ += run_skipped_before_.back(); // the repeats after the last element read
  }
  batch_->read_after = read_count_;
  batch_->bytes_done = static_cast<std::uint64_t>(close - text_);
  run_elements_.clear();
  *open = saved_open;
  *close = saved_close;
}

// Elements that repeat, byte for byte, one whose repetition changes nothing are not read
// again: the MTIA trace writes each name of a process or thread 62k times, 310k of its 456k
// events, in one block at its end. The text simdjson reads (`kept`) runs from the first
// element that is not such a repeat to the last; repeats between them become spaces, with
// the comma after each. A run of repeats alone is not parsed at all (false): simdjson would
// still index every byte of it. What simdjson does see is listed in run_elements_, with the
// count of elements skipped before each (read_events counts them). Text from `rescanned` on
// stays as it is: the scanner's state there is that of the text as it was, and it reads
// that part again to find the next run.
bool KinetoJsonReader::skip_repeated_elements(char* first, char* last, const std::vector<const char*>& separators,
                                              const char* rescanned, std::string_view& kept) {
  run_elements_.clear();
  run_skipped_before_.clear();
  run_element_ = 0;
  skipped_elements_.clear();
  std::uint32_t skipped = 0;
  char* start = first;
  for (std::size_t i = 0; i <= separators.size(); ++i) {
    char* const end = i < separators.size() ? const_cast<char*>(separators[i]) : last;
    const std::string_view text = trim(std::string_view(start, static_cast<std::size_t>(end - start)));
    if (end < rescanned && repeated_.contains(text)) {
      if (!run_elements_.empty()) skipped_elements_.push_back({start, end});
      ++skipped;
    } else {
      run_elements_.push_back(text);
      run_skipped_before_.push_back(skipped);
      skipped = 0;
    }
    if (end != last) start = end + 1;
  }
  run_skipped_before_.push_back(skipped);
  if (run_elements_.empty()) return false;
  const char* const kept_end = run_elements_.back().data() + run_elements_.back().size();
  for (const auto& [from, comma] : skipped_elements_) {
    if (comma >= kept_end) break; // after the last element kept: outside what simdjson reads
    std::fill(from, comma + 1, ' ');
  }
  kept = std::string_view(run_elements_.front().data(), static_cast<std::size_t>(kept_end - run_elements_.front().data()));
  return true;
}

bool KinetoJsonReader::RepeatedTexts::contains(std::string_view text) const {
  if (text.size() >= kMaxLength) return false;
  for (const std::string& known : by_length_[text.size()]) {
    if (std::memcmp(known.data(), text.data(), text.size()) == 0) return true;
  }
  return false;
}

void KinetoJsonReader::RepeatedTexts::add(std::string_view text) {
  if (text.size() >= kMaxLength) return;
  std::vector<std::string>& same_length = by_length_[text.size()];
  if (same_length.size() < kMaxPerLength && !contains(text)) same_length.emplace_back(text);
}

// One top-level field, as the object {key: value} alone.
void KinetoJsonReader::read_field_alone(std::string_view raw_key, const char* value, const char* value_end) {
  std::string text;
  text.reserve(raw_key.size() + static_cast<std::size_t>(value_end - value) + 2);
  text += '{';
  text += raw_key;
  text += ':';
  text.append(value, value_end);
  text += '}';
  const simdjson::padded_string& padded = kept_documents_.emplace_back(text);
  enter_document(padded.data(), padded.size(), static_cast<std::uint64_t>(raw_key.data() - text_));
  od::document doc;
  od::object object;
  if (auto error = parser_.iterate(padded).get(doc)) return json_error(error, doc);
  doc_started_ = true;
  if (auto error = doc.get_object().get(object)) return json_error(error, doc);
  for (auto field_result : object) {
    od::field field;
    if (auto error = std::move(field_result).get(field)) return json_error(error, doc);
    std::string_view key;
    if (auto error = field.unescaped_key().get(key)) return json_error(error, doc);
    od::value v = field.value();
    top_level_field(key, v, doc);
  }
}

// Where the scanner could not follow the text: simdjson reads what is left, from `at` to
// the end, as the rest of an array, and says what is wrong with it; what it still reads
// before that counts.
void KinetoJsonReader::damaged(const char* at, const char* what) {
  text_readable_.readable(text_end_);
  std::string rest;
  rest.reserve(static_cast<std::size_t>(text_end_ - at) + 1);
  rest += '[';
  rest.append(at, text_end_);
  const simdjson::padded_string& padded = kept_documents_.emplace_back(rest);
  enter_document(padded.data(), padded.size(), static_cast<std::uint64_t>(at - text_) - 1);
  od::document doc;
  od::array events;
  if (auto error = parser_.iterate(padded).get(doc)) return json_error(error, doc);
  doc_started_ = true;
  if (auto error = doc.get_array().get(events)) return json_error(error, doc);
  read_in_turn(events, doc);
  if (!stopped_) json_error(simdjson::TAPE_ERROR, doc, what);
}

// The whole document at once: for what read_in_pieces cannot follow from its start.
void KinetoJsonReader::read_whole_document(char first) {
  text_readable_.readable(text_end_);
  od::document doc;
  const std::size_t length = static_cast<std::size_t>(text_end_ - text_);
  enter_document(text_, length, 0);
  const simdjson::padded_string_view json(text_, length, static_cast<std::size_t>(storage_end_ - text_));
  auto error = parser_.iterate(json).get(doc);
  if (error) fail(std::string("not valid JSON (") + simdjson::error_message(error) + ")");
  doc_started_ = true;
  if (first == '[') {
    od::array events;
    if (doc.get_array().get(events)) fail("not valid JSON (top-level array)");
    saw_events_ = true;
    read_in_turn(events, doc);
    return;
  }
  od::object root;
  if ((error = doc.get_object().get(root))) fail(std::string("not valid JSON (") + simdjson::error_message(error) + ")");
  for (auto field_result : root) {
    // After a syntax error simdjson's field is unusable: stop reading the document.
    od::field field;
    if ((error = std::move(field_result).get(field))) return json_error(error, doc);
    std::string_view key;
    if ((error = field.unescaped_key().get(key))) return json_error(error, doc);
    od::value value = field.value();
    top_level_field(key, value, doc);
    if (stopped_) return;
  }
}

void KinetoJsonReader::top_level_field(std::string_view key, od::value& value, od::document& doc) {
  if (key == "traceEvents") {
    od::array events;
    if (value.get_array().get(events)) fail("traceEvents is not an array");
    saw_events_ = true;
    read_in_turn(events, doc);
  } else {
    sink_.top_level_field(key, value, doc);
  }
}

void KinetoJsonReader::enter_document(const char* text, std::size_t length, std::uint64_t offset) {
  doc_started_ = false; // until simdjson has started it
  doc_text_ = text;
  doc_end_ = text + length;
  doc_offset_ = offset;
}

std::uint64_t KinetoJsonReader::offset(od::document& doc) const {
  // A document simdjson refused to start has no location: where it starts, then.
  if (!doc_started_) return std::min(bytes_total_, doc_offset_);
  const char* p = nullptr;
  if (doc.current_location().get(p) || p < doc_text_ || p > doc_end_) return bytes_total_;
  return std::min<std::uint64_t>(bytes_total_, doc_offset_ + static_cast<std::uint64_t>(p - doc_text_));
}

// Syntax errors: before any event was read the file is not a trace; after, the events
// read so far are kept and the rest is reported lost, as a truncated trace is still useful.
// Either way the caller stops reading: nothing after a syntax error can be trusted.
void KinetoJsonReader::json_error(simdjson::error_code error, od::document& doc, const char* what) {
  report_damage(what ? std::string(what) : std::string(simdjson::error_message(error)), offset(doc));
}

void KinetoJsonReader::report_damage(const std::string& message, std::uint64_t at) {
  if (stats_.events_read == 0) {
    fail("not valid JSON (" + message + " at byte " + std::to_string(std::min(bytes_total_, at)) + ")");
  }
  stats_.note("kineto_damaged_json", message + " after event #" + std::to_string(stats_.events_read));
  stopped_ = true;
}

// The string whose text starts at `start` (after its opening quote) as written in the
// document, where it holds no escape: nearly every key and value of a trace. simdjson's
// unescaping copy, which the on-demand front end does byte by byte in a build for any
// x86-64, is then not needed. The closing quote is there: stage 1 matched every string.
bool KinetoJsonReader::string_as_written(const char* start, std::string_view& text) const {
  const char* p = start;
  while (p < doc_end_ && *p != '"' && *p != '\\') ++p;
  if (p >= doc_end_ || *p != '"') return false;
  text = std::string_view(start, static_cast<std::size_t>(p - start));
  return true;
}

bool KinetoJsonReader::key_of(od::field& field, std::string_view& key) const {
  return string_as_written(field.key().raw(), key) || !field.unescaped_key().get(key);
}

bool KinetoJsonReader::read_value(od::value& v, JsonValue& out) const {
  od::json_type type;
  if (v.type().get(type)) return false;
  out.type = type;
  out.present = true;
  switch (type) {
    case od::json_type::string:
      // raw_json_token does not consume the value (what is not consumed, the iteration skips).
      return string_as_written(v.raw_json_token().data() + 1, out.text) || !v.get_string().get(out.text);
    case od::json_type::number:
    case od::json_type::boolean:
    case od::json_type::null: {
      out.text = trim(v.raw_json_token());
      if (type == od::json_type::boolean) return !v.get_bool().error();
      if (type == od::json_type::null) return !v.is_null().error();
      return true;
    }
    case od::json_type::array: {
      od::array a;
      if (v.get_array().get(a)) return false;
      if (a.raw_json().get(out.text)) return false;
      out.text = trim(out.text);
      return true;
    }
    case od::json_type::object: {
      od::object o;
      if (v.get_object().get(o)) return false;
      if (o.raw_json().get(out.text)) return false;
      out.text = trim(out.text);
      return true;
    }
  }
  return false;
}

// The elements of `events` into batch_, each with its number and what its reading noted;
// on the reading thread, so the sink is not called (hand_over does that).
void KinetoJsonReader::read_events(od::array& events, od::document& doc) {
  for (auto element : events) {
    od::value v;
    simdjson::error_code error = element.get(v);
    if (error) return read_error(error, doc);
    // In a run: the element's text, and the repeats skipped before it.
    std::string_view element_text;
    if (run_element_ < run_elements_.size()) {
      read_count_ += run_skipped_before_[run_element_];
      element_text = run_elements_[run_element_++];
    }
    ReadEvent& item = batch_->add();
    item.number = ++read_count_;
    od::object obj;
    if (v.get_object().get(obj)) {
      // Skip the non-object element itself; a syntax error shows up on the next step.
      item.notes.push_back({"kineto_element_not_object", "element #" + std::to_string(item.number)});
      continue;
    }
    RawEvent& event = item.event;
    bool bad_field = false;
    for (auto field_result : obj) {
      od::field field;
      if ((error = std::move(field_result).get(field))) return read_error(error, doc);
      std::string_view key;
      if (!key_of(field, key)) return read_error(simdjson::STRING_ERROR, doc);
      od::value fv = field.value();
      bool ok = true;
      if (key.size() <= 4) {
        if (key == "ph") ok = !fv.get_string().get(event.ph);
        else if (key == "cat") ok = !fv.get_string().get(event.cat);
        else if (key == "name") {
          ok = read_value(fv, name_value_);
          event.name = name_value_.text;
        }
        else if (key == "pid") ok = read_value(fv, event.pid);
        else if (key == "tid") ok = read_value(fv, event.tid);
        else if (key == "ts") ok = read_value(fv, event.ts);
        else if (key == "dur") ok = read_value(fv, event.dur);
        else if (key == "id") ok = read_value(fv, event.id);
        else if (key == "bp") ok = !fv.get_string().get(event.bp);
        else if (key == "args") {
          // Args nothing reads (sort indices, say) are not parsed: simdjson skips the object.
          ok = !sink_.args_read(event) || read_args(fv, event);
        }
      }
      if (!ok) {
        item.notes.push_back({"kineto_field_wrong_type",
                              "field '" + std::string(key) + "' of element #" + std::to_string(item.number)});
        bad_field = true;
      }
    }
    if (!bad_field) {
      item.handed_over = true;
      if (!element_text.empty() && sink_.repeat_changes_nothing(event)) repeated_.add(element_text);
    }
    // Read on this thread (not into a slot of the reading thread's): hand over as it fills.
    if (batch_ == &own_batch_ && batch_->size >= kBatchEvents) hand_over_read(doc);
  }
}

bool KinetoJsonReader::read_args(od::value& v, RawEvent& event) {
  od::object obj;
  if (v.get_object().get(obj)) {
    event.args_not_object = true;
    return true;
  }
  for (auto field_result : obj) {
    od::field field;
    if (std::move(field_result).get(field)) return false;
    RawArg a;
    if (!key_of(field, a.key)) return false;
    od::value av = field.value();
    if (!read_value(av, a.value)) return false;
    event.args.push_back(a);
  }
  return true;
}

// A syntax error while reading events: the batch ends with it (hand_over reports it).
void KinetoJsonReader::read_error(simdjson::error_code error, od::document& doc, const char* what) {
  batch_->error = true;
  batch_->error_message = what ? std::string(what) : std::string(simdjson::error_message(error));
  batch_->error_offset = offset(doc);
}

// The events of a document read here and now (all of it, or the rest after damage), handed
// over every kBatchEvents: the text and simdjson's strings stay valid until the document ends.
void KinetoJsonReader::read_in_turn(od::array& events, od::document& doc) {
  batch_ = &own_batch_;
  own_batch_.clear();
  read_count_ = stats_.events_read;
  read_events(events, doc);
  hand_over_read(doc);
}

// own_batch_ as read so far in `doc`, handed over and cleared.
void KinetoJsonReader::hand_over_read(od::document& doc) {
  own_batch_.read_after = read_count_;
  own_batch_.bytes_done = offset(doc);
  hand_over(own_batch_);
  own_batch_.clear();
}

// On the thread that called read(): the batch's events to the sink, its notes to the stats,
// in the document's order, then the damage that ended it, if any.
void KinetoJsonReader::hand_over(Batch& batch) {
  for (std::size_t i = 0; i < batch.size; ++i) {
    ReadEvent& item = batch.events[i];
    stats_.events_read = item.number;
    for (ReadNote& note : item.notes) stats_.note(note.id, std::move(note.example));
    if (item.handed_over) sink_.handle_event(item.event);
  }
  stats_.events_read = batch.read_after;
  if (batch.error) report_damage(batch.error_message, batch.error_offset);
  if (batch.give_back_below > 0) input_->give_back_below(batch.give_back_below);
  if (stats_.events_read >= next_progress_ && progress_) {
    next_progress_ = stats_.events_read + 0x10000;
    progress_(ImportProgress{std::min(bytes_total_, batch.bytes_done), bytes_total_});
  }
}

} // namespace dreamscope::kineto
