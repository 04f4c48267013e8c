// Golden import summaries, in the style of Perfetto's diff tests: every trace of the zoo
// (../shared/data/wild, ../shared/data/kineto-hta) and every hand-written fixture of an
// importer (tests/data/importers/<format>/) is imported, summed up as text (events kept per
// kind, import issues by stable id, devices, streams, steps and their durations, span) and
// compared with its golden file under tests/data/importers/golden/. A change shows as a line
// diff.
//
// Regenerate after an intended change, then review `git diff tests/data/importers/golden`:
//   DREAMSCOPE_REBASE_GOLDENS=1 build/release/tests/importers/importers_golden_tests
#include "import_test_util.h"

#include <dreamscope/storage/steps.h>
#include <dreamscope/storage/trace_file.h>
#include <dreamscope/storage/trace_summary.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace dreamscope::test {
namespace {

const std::filesystem::path kShared = DREAMSCOPE_SHARED_DATA_DIR;
const std::filesystem::path kFixtures = std::filesystem::path(DREAMSCOPE_TEST_DATA_DIR) / "importers";
const std::filesystem::path kGoldens = kFixtures / "golden";

struct Input {
  std::string name;            // golden file name, from the input's path
  std::filesystem::path path;
};

std::vector<Input> inputs() {
  std::vector<Input> out;
  auto add_tree = [&](const std::filesystem::path& root, const std::string& prefix) {
    if (!std::filesystem::exists(root)) return;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      const std::string rel = std::filesystem::relative(e.path(), root).string();
      // Not traces: READMEs, goldens, and the scripts that recorded the fixtures.
      if (rel.ends_with(".md") || rel.starts_with("golden/") || rel.ends_with(".summary") || rel.ends_with(".py")) {
        continue;
      }
      std::string name = prefix + rel;
      for (std::size_t p = name.find('/'); p != std::string::npos; p = name.find('/')) name.replace(p, 1, "__");
      out.push_back({name, e.path()});
    }
  };
  add_tree(kShared / "wild", "wild_");
  add_tree(kShared / "kineto-hta", "kineto-hta_");
  add_tree(kFixtures / "kineto", "fixture-kineto_");
  std::sort(out.begin(), out.end(), [](const Input& a, const Input& b) { return a.name < b.name; });
  return out;
}

std::string render(const Trace& t, const ImportStats& stats) {
  std::ostringstream o;
  o << "source        " << to_string(t.source()) << "\n";
  o << "events read   " << stats.events_read << "\n";
  o << "events kept   " << stats.events_kept << "\n";
  const KindCounts c = count_kinds(t);
  std::size_t cpu_annotations = 0, gpu_annotations = 0;
  const auto& a = t.annotations();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool gpu = t.tracks()[a.track[i]].kind == TrackKind::GpuStream;
    ++(gpu ? gpu_annotations : cpu_annotations);
  }
  o << "kept          runtime " << c.runtime << ", driver " << c.driver << ", kernel " << c.kernel << ", memcpy "
    << c.memcpy << ", memset " << c.memset << ", sync " << c.sync << ", cpu annotation " << cpu_annotations
    << ", gpu annotation " << gpu_annotations << ", flow " << t.flows().size() << ", memory "
    << t.memory_events().size() << "\n";
  for (const auto& [id, issue] : stats.issues) {
    o << "issue         " << id << " " << to_string(issue.severity) << " " << to_string(issue.effect) << " "
      << issue.count << "\n";
  }
  std::size_t with_events = 0;
  std::vector<bool> busy(t.processes().size(), false);
  for (TrackId tr{0}; tr < t.tracks().size(); ++tr) {
    const TrackInfo& info = t.tracks()[tr];
    const std::size_t n = t.cuda_api_on(tr).size() + t.gpu_ops_on(tr).size() + t.annotations_on(tr).size();
    if (info.kind == TrackKind::CpuThread && n > 0 && info.process < busy.size()) busy[info.process] = true;
  }
  for (bool b : busy) with_events += b;
  o << "processes     " << t.processes().size() << " (" << with_events << " with events)\n";
  std::vector<DeviceInfo> devices = t.devices();
  std::sort(devices.begin(), devices.end(), [](const auto& x, const auto& y) { return x.ordinal < y.ordinal; });
  for (const auto& d : devices) {
    o << "device        gpu " << d.ordinal << " '" << d.name << "' sm_" << d.compute_capability_major
      << d.compute_capability_minor << " " << d.sm_count << " SMs\n";
  }
  std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> streams;
  for (TrackId tr{0}; tr < t.tracks().size(); ++tr) {
    const TrackInfo& info = t.tracks()[tr];
    if (info.kind != TrackKind::GpuStream) continue;
    streams[{t.devices()[info.device].ordinal, info.stream}] +=
        t.gpu_ops_on(tr).size() + t.annotations_on(tr).size();
  }
  for (const auto& [key, n] : streams) {
    o << "stream        gpu " << key.first << " stream " << key.second << ": " << n << " events\n";
  }
  // The steps every analysis and prediction is reported by, with their measured durations:
  // an importer change that moves a step's start or end shows here (the first 12 of them).
  const std::vector<AnnotationIndex> steps = find_steps(t);
  o << "steps         " << steps.size() << "\n";
  constexpr std::size_t kStepsShown = 12;
  for (std::size_t i = 0; i < steps.size() && i < kStepsShown; ++i) {
    o << "step          " << step_label(t, steps[i]) << " " << a.end[steps[i]] - a.start[steps[i]] << " ns\n";
  }
  if (steps.size() > kStepsShown) o << "step          ... " << steps.size() - kStepsShown << " more\n";
  o << "span ns       " << (t.event_count() ? t.end_time() - t.begin_time() : 0) << "\n";
  const TraceSummary s = summarize(t, 0);
  o << "complete      " << (s.complete ? "yes" : "no") << "\n";
  const std::string empty = empty_import_problem(t);
  o << "usable        " << (empty.empty() ? "yes" : empty) << "\n";
  return o.str();
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// A unified-style line diff (longest common subsequence; summaries are a few dozen lines).
std::string diff(const std::string& expected, const std::string& actual) {
  const auto a = lines(expected), b = lines(actual);
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::string out;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      ++i, ++j;
    } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out += "+ " + b[j++] + "\n";
    } else {
      out += "- " + a[i++] + "\n";
    }
  }
  return out;
}

// Test names say the input, not its bytes.
void PrintTo(const Input& in, std::ostream* os) { *os << in.path.string(); }

class ImportGolden : public ::testing::TestWithParam<Input> {};

// The summary of the input's import, or the error it gave, without the path.
std::string summary_of(const Input& in) {
  try {
    ImportStats stats;
    Trace t = load_trace(in.path, &stats);
    return render(t, stats);
  } catch (const TraceError& e) {
    // Some inputs are refused on purpose; the golden keeps the message, without the path.
    std::string what = e.what();
    if (what.starts_with(in.path.string())) what = "<file>" + what.substr(in.path.string().size());
    return "error         " + what + "\n";
  }
}

std::string golden_of(const Input& in) {
  std::ifstream f(kGoldens / (in.name + ".summary"));
  std::stringstream expected;
  expected << f.rdbuf();
  return expected.str();
}

TEST_P(ImportGolden, SummaryMatchesGolden) {
  const Input& in = GetParam();
  const std::string actual = summary_of(in);
  const auto golden = kGoldens / (in.name + ".summary");
  if (std::getenv("DREAMSCOPE_REBASE_GOLDENS")) {
    std::filesystem::create_directories(kGoldens);
    std::ofstream(golden) << actual;
    GTEST_SKIP() << "rebased " << golden;
  }
  ASSERT_TRUE(std::filesystem::exists(golden)) << golden << " is missing; regenerate with DREAMSCOPE_REBASE_GOLDENS=1 (see the file comment)";
  const std::string expected = golden_of(in);
  EXPECT_EQ(expected, actual) << in.path << " differs from " << golden << " (- golden, + now):\n" << diff(expected, actual);
}

// The same input read as a stream (import_input.h, open_input): inflated or read a page at a
// time as the reader asks for it, with the pages it gave back moved ahead, 4 kB at a time.
// Every file of the zoo streams here, not only those of 8 MB and more: gzip files whose
// trailer lies or that are cut short go back to the whole-file path, which must then say
// what it says without streaming.
TEST_P(ImportGolden, StreamedSummaryMatchesGolden) {
  const Input& in = GetParam();
  const auto golden = kGoldens / (in.name + ".summary");
  if (std::getenv("DREAMSCOPE_REBASE_GOLDENS") || !std::filesystem::exists(golden)) GTEST_SKIP() << "no golden yet";
  ::setenv("DREAMSCOPE_IMPORT_STREAM_FROM", "0", 1);
  ::setenv("DREAMSCOPE_IMPORT_STREAM_CHUNK", "4096", 1);
  const std::string actual = summary_of(in);
  ::unsetenv("DREAMSCOPE_IMPORT_STREAM_FROM");
  ::unsetenv("DREAMSCOPE_IMPORT_STREAM_CHUNK");
  const std::string expected = golden_of(in);
  EXPECT_EQ(expected, actual) << in.path << " streamed differs from " << golden << " (- golden, + now):\n"
                              << diff(expected, actual);
}

std::string test_name(const ::testing::TestParamInfo<Input>& info) {
  std::string n;
  for (char ch : info.param.name) n += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Zoo, ImportGolden, ::testing::ValuesIn(inputs()), test_name);

TEST(ImportGoldenSet, EveryGoldenHasItsInput) {
  // A golden whose input vanished is a test that silently stopped running.
  std::set<std::string> names;
  for (const auto& in : inputs()) names.insert(in.name + ".summary");
  for (const auto& e : std::filesystem::directory_iterator(kGoldens)) {
    EXPECT_TRUE(names.count(e.path().filename().string())) << e.path() << " has no input";
  }
  // The zoo as its README lists it: 14 wild folders (21 files: DLRM has 8 ranks), 16 HTA
  // traces, plus the fixtures.
  EXPECT_GE(names.size(), 21u + 16u + 4u);
}

TEST(ImportIssueIds, EveryIdIsDocumentedAndUnique) {
  std::ifstream f(std::filesystem::path(DREAMSCOPE_SOURCE_DIR) / "docs" / "importers.md");
  std::stringstream doc;
  doc << f.rdbuf();
  std::set<std::string_view> seen;
  for (const auto& kind : import_issue_kinds()) {
    EXPECT_TRUE(seen.insert(kind.id).second) << kind.id << " twice";
    EXPECT_NE(doc.str().find("| `" + std::string(kind.id) + "` |"), std::string::npos)
        << kind.id << " is missing from the table in docs/importers.md";
  }
  EXPECT_THROW(import_issue_kind("no_such_issue"), std::logic_error);
}

} // namespace
} // namespace dreamscope::test
