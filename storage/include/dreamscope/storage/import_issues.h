// The problems importers count, each under a stable id, as Perfetto's stats table keys
// them: tests and golden summaries compare ids and counts, and the message beside each
// id is for people and may be reworded. An importer counts a problem with
// `ImportStats::note(id, example)`; an id that is not in this table is a programming error.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dreamscope {

// Info: input dropped on purpose, as the peer tools do (HTA drops events without dur), or a
// quirk of the recording tool that loses nothing; Warning: input that was malformed, or
// that the importer could not place.
enum class ImportSeverity : std::uint8_t { Info = 0, Warning = 1 };

// What happened to the input the problem was found in.
enum class ImportEffect : std::uint8_t {
  Dropped, // the event is not in the trace (counted as dropped by `info`)
  Partial, // the event is kept, a part of it (an arg, a name, a step) is not
  Kept,    // the event is kept whole; the note only says how it was read
  Lost,    // the rest of the input could not be read
};

struct ImportIssueKind {
  std::string_view id;
  ImportSeverity severity;
  ImportEffect effect;
  std::string_view message;
};

std::string_view to_string(ImportSeverity s); // "warning", "info"
std::string_view to_string(ImportEffect e);   // "dropped", "partial", "kept", "lost"

// Every kind, in a stable order (the order of the table in import_issues.cpp).
std::span<const ImportIssueKind> import_issue_kinds();
// The kind with this id; throws std::logic_error for an unknown id.
const ImportIssueKind& import_issue_kind(std::string_view id);

// An imported trace's issues as its meta.import_issues keeps them, so that commands that
// open the trace later (info, the empty-import check) see ids, counts and effects.
struct RecordedImportIssue {
  std::string id;
  std::int64_t count = 0;
  ImportSeverity severity = ImportSeverity::Warning;
  ImportEffect effect = ImportEffect::Dropped;
};
std::vector<RecordedImportIssue> parse_import_issues(std::string_view meta_text);

} // namespace dreamscope
