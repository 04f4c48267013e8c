// `dreamscope analyze TRACE...`: where the time went, as terminal tables, Markdown for a CI job
// summary, JSON for scripts (schema in docs/analyze.md) or one self-contained HTML file. One
// trace of one process gets the single-trace report; a job (several ranks' traces, a trace of
// several ranks, or the ranks' *.summary.db) gets the job report across ranks
// (docs/multi-rank.md); --summary writes one rank's summary instead.
#include "commands.h"
#include "output.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/job.h>
#include <dreamscope/analyzers/job_analysis.h>
#include <dreamscope/analyzers/report.h>
#include <dreamscope/storage/trace_summary.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

namespace dreamscope::cli {

namespace {

namespace fs = std::filesystem;

struct AnalyzeOptions {
  std::vector<std::string> traces;
  std::string format = "text";
  std::string output;
  std::vector<std::string> only;
  std::size_t top = 15;
  bool no_step_filter = false;
  bool all_steps = false;
  bool summary = false;
  std::int64_t rank = kNoValue;
  std::size_t threads = 0;
};

// The analyses of a job's report, beside the single trace's.
constexpr std::string_view kJobSections[] = {"hta", "collectives", "stragglers"};

std::string section_names() {
  std::string names;
  for (auto s : analyzers::kAllSections) {
    if (!names.empty()) names += ", ";
    names += analyzers::to_string(s);
  }
  return names;
}

std::string job_section_names() {
  std::string names;
  for (auto s : kJobSections) names += (names.empty() ? "" : ", ") + std::string(s);
  return names;
}

std::string render(const analyzers::JobReport& report, const std::string& format) {
  if (format == "md") return analyzers::render_job_markdown(report);
  if (format == "json") return analyzers::render_job_json(report);
  if (format == "html") return analyzers::render_job_html(report);
  return analyzers::render_job_text(report);
}

std::size_t thread_count(std::size_t asked) {
  return asked ? asked : std::max(1u, std::thread::hardware_concurrency());
}

// Each rank of one loaded trace of several ranks, summarised on `threads` threads.
std::vector<analyzers::RankSummary> summarize_ranks_of(const Trace& trace, const std::string& name,
                                                       const analyzers::HtaOptions& hta, std::size_t threads) {
  const std::vector<JobRank> ranks = job_ranks(trace);
  std::vector<analyzers::RankSummary> out(ranks.size());
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t i; (i = next++) < ranks.size();) {
      try {
        out[i] = analyzers::summarize_rank(rank_subtrace(trace, ranks[i].rank), ranks[i].rank, name, hta);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < std::min(threads, ranks.size()); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  return out;
}

int write_summary(const AnalyzeOptions& o, const analyzers::JobInputs& in, const analyzers::HtaOptions& hta, bool allow_empty) {
  if (o.output.empty() || o.output == "-") {
    fmt::print(stderr, "dreamscope analyze: --summary needs -o FILE (rankN.summary.db)\n");
    return kExitUsage;
  }
  if (!in.summaries.empty() || in.traces.size() != 1) {
    fmt::print(stderr, "dreamscope analyze: --summary summarises one rank: give it one trace file ({} given)\n",
               in.traces.size() + in.summaries.size());
    return kExitUsage;
  }
  if (const auto problem = output_problem(o.output)) throw TraceError("cannot write " + o.output + ": " + *problem);
  const fs::path& file = in.traces.front();
  Trace trace = open_trace(file.string(), allow_empty, nullptr, {}, ImportDetail::WithoutOperators);
  const std::vector<JobRank> ranks = job_ranks(trace);
  std::int64_t rank = o.rank;
  if (ranks.size() > 1) {
    if (rank == kNoValue) {
      throw TraceError(
          fmt::format("{}: holds {} ranks; --rank R says which one to summarise", file.string(), ranks.size()));
    }
    trace = rank_subtrace(trace, rank);
  } else if (ranks.size() == 1) {
    if (rank != kNoValue && rank != ranks.front().rank) {
      throw TraceError(fmt::format("{}: is rank {}, not {}", file.string(), ranks.front().rank, rank));
    }
    rank = ranks.front().rank;
  } else if (rank == kNoValue) {
    rank = rank_from_file_name(file);
    if (rank == kNoValue) {
      throw TraceError(file.string() + ": names no rank, and its file name gives none; --rank R says which it is");
    }
  }
  analyzers::write_rank_summary(analyzers::summarize_rank(trace, rank, file.filename().string(), hta), o.output);
  return kExitOk;
}

const CommandRegistration analyze_command(50, "analyze", [](CLI::App& app) -> CommandAction {
  auto opts = std::make_shared<AnalyzeOptions>();
  auto* cmd = app.add_subcommand("analyze",
                                 "Where the time went: cross-stack breakdown per operation, "
                                 "HTA and TensorBoard-profiler analyses, data stalls, top kernels, "
                                 "the replayed run's critical path; for a distributed job, the same "
                                 "per rank and the collectives and stragglers across ranks");
  auto allow_empty = add_allow_empty_flag(cmd);
  cmd->add_option("trace", opts->traces,
                  "The trace (trace.db, PyTorch profiler JSON(.gz), Nsight Systems SQLite); for a job, several, a "
                  "folder or a glob of its ranks' traces, or of their *.summary.db")
      ->required();
  cmd->add_option("--format", opts->format, "text, md, json or html")
      ->check(CLI::IsMember({"text", "md", "json", "html"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "Write to this file instead of stdout (with --summary: the summary)");
  cmd->add_option("--only", opts->only,
                  "Only these analyses (comma-separated): " + section_names() + "; of a job: " + job_section_names())
      ->delimiter(',');
  cmd->add_option("--top", opts->top, "Rows in the longest tables and charts")->capture_default_str();
  cmd->add_flag("--all-steps", opts->all_steps,
                fmt::format("List every step in the per-step tables (steps, data-stalls, critical-path; of a job: "
                            "stragglers and each rank's steps). Without it a table of more steps than --top (in "
                            "JSON: than {}) lists that many: the first, the slowest and those around the median "
                            "duration, and says how many it left out",
                            analyzers::kJsonStepRows));
  cmd->add_flag("--no-step-filter", opts->no_step_filter,
                "Keep the last ProfilerStep's events in the HTA analyses (HTA leaves them out)");
  cmd->add_flag("--summary", opts->summary,
                "Write the rank's summary to -o (a small *.summary.db) instead of a report, to analyse the job "
                "later from its ranks' summaries");
  cmd->add_option(
      "--rank", opts->rank,
      "With --summary: the rank to summarise of a trace of several, or the rank of a trace that names none");
  cmd->add_option("--threads", opts->threads, "Ranks analysed at once (default: the machine's cores)");
  cmd->footer(
      "Examples:\n"
      "  dreamscope analyze trace.db\n"
      "  dreamscope analyze rank0.pt.trace.json.gz --only hta,top-kernels\n"
      "  dreamscope analyze trace.db --only critical-path\n"
      "  dreamscope analyze trace.db --format md >> \"$GITHUB_STEP_SUMMARY\"\n"
      "  dreamscope analyze trace.db --format html -o report.html\n"
      "A distributed job (docs/multi-rank.md):\n"
      "  dreamscope analyze traces/                      # a folder of per-rank traces\n"
      "  dreamscope analyze 'traces/rank*.json.gz' --only stragglers\n"
      "  dreamscope analyze job.db --format html -o job.html   # one trace of every rank\n"
      "  srun dreamscope analyze --summary -o summaries/rank-$SLURM_PROCID.summary.db trace-$SLURM_PROCID.db\n"
      "  dreamscope analyze summaries/                   # the job from its ranks' summaries\n"
      "Exit codes: 0 ok, 1 unreadable trace or summary, a trace with nothing to analyze (no events, an\n"
      "import that kept nothing; --allow-empty goes on) or unwritable output, 2 bad command line.");
  return [opts, allow_empty] {
    const AnalyzeOptions& o = *opts;
    std::vector<analyzers::ReportSection> sections;
    analyzers::JobReportOptions job_options{.top = o.top, .all_steps = o.all_steps};
    std::vector<std::string> one_trace_only;
    if (!o.only.empty()) {
      job_options.hta = job_options.collectives = job_options.stragglers = false;
      for (const auto& name : o.only) {
        const auto s = analyzers::report_section_from_string(name);
        if (s) sections.push_back(*s);
        if (name == "hta") job_options.hta = true;
        else if (name == "collectives") job_options.collectives = true;
        else if (name == "stragglers") job_options.stragglers = true;
        else if (s) one_trace_only.push_back(name);
        else {
          fmt::print(stderr, "dreamscope analyze: unknown analysis '{}' (known: {}; of a job: {})\n", name,
                     section_names(), job_section_names());
          return kExitUsage;
        }
      }
    }
    analyzers::HtaOptions hta;
    hta.profiler_step_filter = !o.no_step_filter;

    const analyzers::JobInputs in = analyzers::sort_job_inputs(o.traces);
    if (o.summary) return write_summary(o, in, hta, *allow_empty);
    if (o.rank != kNoValue) {
      fmt::print(stderr, "dreamscope analyze: --rank goes with --summary\n");
      return kExitUsage;
    }
    auto job_report = [&](std::vector<analyzers::RankSummary> summaries) {
      if (!one_trace_only.empty()) {
        fmt::print(stderr, "dreamscope analyze: --only {} is an analysis of one trace; a job's report has {}\n",
                   one_trace_only.front(), job_section_names());
        return kExitUsage;
      }
      const analyzers::JobReport report = analyzers::analyze_job(std::move(summaries), job_options);
      write_output(o.output, render(report, o.format));
      return kExitOk;
    };

    std::optional<Trace> single;
    if (in.summaries.empty() && in.traces.size() == 1) {
      // Analyses that read no operator's args do without them, and those that read no
      // operator (--only hta, say) without the operators too; the HTML report's timeline
      // draws every operator. A file of several ranks goes to their summaries, which read
      // none either.
      const bool operator_args = o.only.empty() || std::ranges::any_of(sections, analyzers::reads_operator_args);
      const bool operators = operator_args || o.format == "html" || std::ranges::any_of(sections, analyzers::reads_operators);
      single = open_trace(in.traces.front().string(), *allow_empty, nullptr, {},
                          operator_args ? ImportDetail::Full
                          : operators   ? ImportDetail::WithoutOperatorArgs
                                        : ImportDetail::WithoutOperators);
      if (job_ranks(*single).size() < 2) {
        analyzers::ReportOptions ro;
        if (!o.only.empty()) {
          if (sections.empty()) {
            fmt::print(stderr, "dreamscope analyze: --only {}: {} is one process's trace, not a job\n", o.only.front(),
                       in.traces.front().string());
            return kExitUsage;
          }
          ro.sections = sections;
        }
        ro.top = o.top;
        ro.all_steps = o.all_steps;
        ro.hta = hta;
        const auto report = analyzers::analyze_trace(*single, in.traces.front().filename().string(), ro);
        std::string text;
        if (o.format == "md") text = analyzers::render_markdown(report);
        else if (o.format == "json") text = analyzers::render_json(report);
        else if (o.format == "html") text = analyzers::render_html(report);
        else text = analyzers::render_text(report);
        write_output(o.output, text);
        return kExitOk;
      }
    }
    if (!o.output.empty() && o.output != "-") {
      if (const auto problem = output_problem(o.output)) throw TraceError("cannot write " + o.output + ": " + *problem);
    }
    if (single) {
      return job_report(
          summarize_ranks_of(*single, in.traces.front().filename().string(), hta, thread_count(o.threads)));
    }

    std::vector<analyzers::RankSummary> summaries;
    std::map<std::int64_t, std::string> rank_from; // what gave each rank: a summary file, a trace file
    auto claim = [&rank_from](std::int64_t rank, const std::string& from) {
      if (auto [it, fresh] = rank_from.emplace(rank, from); !fresh) {
        throw TraceError(it->second + " and " + from + " are both rank " + std::to_string(rank) +
                         "; a job has one trace per rank");
      }
    };
    for (const fs::path& f : in.summaries) {
      summaries.push_back(analyzers::read_rank_summary(f));
      claim(summaries.back().rank, f.string());
    }
    if (!in.traces.empty()) {
      std::mutex m;
      JobLoadOptions load;
      load.threads = thread_count(o.threads);
      load.detail = ImportDetail::WithoutOperators; // each trace goes into summarize_rank alone
      const bool allow = *allow_empty;
      load.check_file = [allow](const fs::path& path, const Trace& t) { check_not_empty(path.string(), t, allow); };
      for_each_rank(in.traces, load, [&](std::int64_t rank, Trace&& t, const fs::path& file) {
        analyzers::RankSummary s = analyzers::summarize_rank(t, rank, file.filename().string(), hta);
        t = Trace(); // the rank's trace goes before the next is loaded
        std::lock_guard lock(m);
        claim(s.rank, s.trace_name);
        summaries.push_back(std::move(s));
      });
    }
    return job_report(std::move(summaries));
  };
});

} // namespace
} // namespace dreamscope::cli
