// Scenario files: parsing, parameters and overrides, and errors that name file and line.
#include <dreamscope/whatif/scenario.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace dreamscope::whatif;

namespace {

// The message of the ScenarioError `parse` throws for `text`, or "" if it parses.
std::string parse_error(const std::string& text) {
  try {
    Scenario::parse(text, "bad.toml");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

constexpr const char* kWorkers = R"(
name = "more-workers"
description = "prep on a pool"

[parameters]
workers = { default = 2, help = "pool size" }
cores = 0
speed = 1.5

[[transform]]
op = "move"
when = "${workers > 0}"
select = { category = "prep" }
pool = "${workers}"
cores = "${cores}"

[[transform]]
op = "scale"
select = { kind = ["kernel", "memcpy"], name = "gemm", stream = 7, steps = [2, 4] }
ratio = "${1 / speed}"
add_ns = 100
)";

} // namespace

TEST(ScenarioFile, ParsesNameParametersAndTransforms) {
  const Scenario s = Scenario::parse(kWorkers, "workers.toml");
  EXPECT_EQ(s.name(), "more-workers");
  EXPECT_EQ(s.description(), "prep on a pool");
  ASSERT_EQ(s.parameters().size(), 3u);
  EXPECT_EQ(s.parameters()[0].name, "workers");
  EXPECT_EQ(s.parameters()[0].help, "pool size");
  EXPECT_EQ(s.parameters()[0].default_value, ParameterValue(std::int64_t{2}));

  const auto transforms = s.instantiate();
  ASSERT_EQ(transforms.size(), 2u);
  EXPECT_EQ(transforms[0].op, "move");
  EXPECT_EQ(transforms[0].where.line, 10); // the [[transform]] header
  const auto& move = std::get<MoveSpec>(transforms[0].spec);
  EXPECT_EQ(move.pool, 2);
  EXPECT_EQ(move.cores, 0);
  EXPECT_EQ(move.select.category, "prep");

  const auto& scale = std::get<ScaleSpec>(transforms[1].spec);
  EXPECT_DOUBLE_EQ(scale.ratio, 1 / 1.5);
  EXPECT_EQ(scale.add, 100);
  EXPECT_EQ(scale.select.kinds, (std::vector<TaskClass>{TaskClass::Kernel, TaskClass::Memcpy}));
  EXPECT_EQ(scale.select.name, "gemm");
  EXPECT_EQ(scale.select.stream, 7);
  EXPECT_EQ(scale.select.steps, (std::pair<std::int64_t, std::int64_t>{2, 4}));
}

TEST(ScenarioFile, OverridesReplaceDefaultsWithTheDeclaredType) {
  const Scenario s = Scenario::parse(kWorkers, "workers.toml");
  auto t = s.instantiate({{"workers", "8"}, {"cores", "4"}, {"speed", "2"}});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(std::get<MoveSpec>(t[0].spec).pool, 8);
  EXPECT_EQ(std::get<MoveSpec>(t[0].spec).cores, 4);
  EXPECT_DOUBLE_EQ(std::get<ScaleSpec>(t[1].spec).ratio, 0.5);

  // `when` switches a transform off.
  t = s.instantiate({{"workers", "0"}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].op, "scale");
}

TEST(ScenarioFile, BadOverridesAreErrors) {
  const Scenario s = Scenario::parse(kWorkers, "workers.toml");
  try {
    s.instantiate({{"worker", "8"}});
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "workers.toml: scenario 'more-workers' has no parameter 'worker' (it has: workers, cores, "
                           "speed)");
  }
  try {
    s.instantiate({{"workers", "eight"}});
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "workers.toml: parameter 'workers' of scenario 'more-workers' must be an integer, got 'eight'");
  }
  // A value that makes a transform invalid is reported at that transform's line.
  try {
    s.instantiate({{"cores", "-2"}});
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_EQ(e.where().line, 15) << e.what();
    EXPECT_NE(std::string(e.what()).find("'cores' must be a number of cores, 0 (a core per thread) or -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.instantiate({{"speed", "0"}}), ScenarioError); // division by zero in ratio
}

TEST(ScenarioFile, TomlSyntaxErrorsNameFileAndLine) {
  const std::string e = parse_error("name = \"x\"\n\n[[transform]\nop = \"scale\"\n");
  EXPECT_EQ(e.rfind("bad.toml:3:", 0), 0u) << e;
}

TEST(ScenarioFile, SemanticErrorsNameFileLineAndProblem) {
  struct Case {
    std::string text;
    std::string expected; // the full message
  };
  const std::vector<Case> cases = {
      {"description = \"no name\"\n", "bad.toml:1:1: 'name' is required and must be a string"},
      {"name = \"x\"\nsteps = 3\n", "bad.toml:2:9: unknown key 'steps' (a scenario has name, description, "
                                    "[parameters] and [[transform]])"},
      {"name = \"x\"\n[[transform]]\nop = \"stretch\"\n",
       "bad.toml:3:6: unknown op 'stretch' (scale, set_duration, remove, insert, fuse, move, add_edge, remove_edge, "
       "set_policy, match_ranks)"},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { rank = -3 }\n",
       "bad.toml:4:19: 'rank' must be a rank from 0 to 16777215, got -3"},
      {"name = \"x\"\n[[transform]]\nop = \"match_ranks\"\nselect = { kind = \"cpu\" }\nrank = -2\n",
       "bad.toml:5:8: 'rank' must be a rank, or -1 for the straggler the trace shows; got -2"},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernal\" }\n",
       "bad.toml:4:19: unknown task kind 'kernal' (kernel, compute, comm, memcpy, memset, sync, gpu, api, launch, cpu, "
       "annotation, gap)"},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernel\" }\nratoi = 0.5\n",
       "bad.toml:5:9: unknown key 'ratoi' in a 'scale' transform"},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { name = \"gemm(\" }\n",
       "bad.toml:4:19: 'gemm(' is not a valid name pattern (RE2 syntax, docs/whatif.md): missing ): gemm("},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { kind = \"kernel\" }\nratio = \"${factor}\"\n",
       "bad.toml:5:9: 'ratio': in expression 'factor': unknown name 'factor' (known: none)"},
      {"name = \"x\"\n[[transform]]\nop = \"scale\"\n", "bad.toml:2:1: 'select' is required"},
      {"name = \"x\"\n[[transform]]\nop = \"set_duration\"\nselect = { kind = \"kernel\" }\n"
       "cost = { model = \"wave_scaling\", to = \"B200\" }\n",
       "bad.toml:5:39: unknown GPU 'B200' (known: "},
      {"name = \"x\"\n[[transform]]\nop = \"move\"\nselect = { category = \"prep\" }\n",
       "bad.toml:2:1: 'move' needs either 'resource' or 'pool' (a number of workers)"},
      {"name = \"x\"\n[parameters]\nworkers = [1, 2]\n", "bad.toml:3:11: parameter 'workers' must default to a value, "
                                                        "not an array"},
  };
  for (const auto& c : cases) {
    const std::string e = parse_error(c.text);
    EXPECT_EQ(e.substr(0, c.expected.size()), c.expected) << "for:\n" << c.text;
  }
}

TEST(ScenarioFile, LoadReadsAFileAndNamesIt) {
  const auto path = std::filesystem::temp_directory_path() / "dreamscope-scenario-test.toml";
  {
    std::ofstream out(path);
    out << "name = \"from-file\"\n[[transform]]\nop = \"remove\"\nselect = { kind = \"launch\" }\nwith_launches = 1\n";
  }
  try {
    Scenario::load(path.string());
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ":5:17: 'with_launches' must be true or false, got '1'");
  }
  std::filesystem::remove(path);
  EXPECT_THROW(Scenario::load(path.string()), ScenarioError);
}

TEST(BuiltinScenarios, AllShipAndParseWithTheirDefaults) {
  std::vector<std::string> names;
  for (const auto& b : builtin_scenarios()) names.emplace_back(b.name);
  for (const char* expected : {"amp", "fused-optimizer", "cuda-graphs", "gpu", "data", "data-parallel", "straggler",
                           "interconnect"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
    const Scenario s = find_scenario(expected);
    EXPECT_EQ(s.name(), expected);
    EXPECT_FALSE(s.description().empty());
    for (const auto& p : s.parameters()) EXPECT_FALSE(p.help.empty()) << expected << " " << p.name;
  }
}

TEST(BuiltinScenarios, DataScenarioAnswersDsAnalyzersQuestions) {
  const Scenario data = find_scenario("data");
  EXPECT_TRUE(data.instantiate().empty()); // the defaults change nothing

  auto t = data.instantiate({{"workers", "2"}, {"cores", "2"}});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(std::get<MoveSpec>(t[0].spec).pool, 2);
  EXPECT_EQ(std::get<MoveSpec>(t[0].spec).select.category, "fetch|prep");

  t = data.instantiate({{"cache", "0.5"}, {"storage", "2"}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_DOUBLE_EQ(std::get<ScaleSpec>(t[0].spec).ratio, 0.25); // (1 − 0.5) / 2

  t = data.instantiate({{"synthetic", "true"}, {"workers", "4"}});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].op, "remove");
  EXPECT_EQ(std::get<RemoveSpec>(t[0].spec).select.category, "fetch|prep|wait");
  EXPECT_EQ(std::get<RemoveSpec>(t[2].spec).select.resource_with, "fetch|prep");
  EXPECT_EQ(std::get<RemoveSpec>(t[2].spec).select.resource_without, "step");
}

TEST(BuiltinScenarios, DataParallelSplitsGradientsIntoBuckets) {
  auto t = find_scenario("data-parallel").instantiate({{"workers", "4"}, {"buckets", "2"}});
  ASSERT_EQ(t.size(), 1u);
  const auto& insert = std::get<InsertSpec>(t[0].spec);
  EXPECT_EQ(insert.groups, 2);
  EXPECT_EQ(insert.bytes, 100'000'000);
  const auto& ring = std::get<RingAllReduceCost>(insert.duration.fixed);
  EXPECT_EQ(ring.workers, 4);
  EXPECT_DOUBLE_EQ(ring.link_bandwidth_bytes_per_s, 100e9);
  EXPECT_TRUE(find_scenario("data-parallel").instantiate({{"workers", "1"}}).empty());
}

TEST(BuiltinScenarios, GpuScenarioChecksTheDeviceName) {
  auto t = find_scenario("gpu").instantiate({{"device", "H100"}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(std::get<SetDurationSpec>(t[0].spec).model.wave_scaling_to, "H100");
  EXPECT_FALSE(std::get<SetDurationSpec>(t[0].spec).model.wave_scaling_from);
  EXPECT_THROW(find_scenario("gpu").instantiate({{"device", "TPU"}}), ScenarioError);
}

TEST(BuiltinScenarios, StragglerMatchesTheRankTheTraceShowsUnlessNamed) {
  auto t = find_scenario("straggler").instantiate();
  ASSERT_EQ(t.size(), 1u);
  const auto& spec = std::get<MatchRanksSpec>(t[0].spec);
  EXPECT_EQ(spec.rank, kStragglerRank);
  EXPECT_EQ(spec.select.not_category, "collective|wait");
  EXPECT_EQ(std::get<MatchRanksSpec>(find_scenario("straggler").instantiate({{"rank", "5"}})[0].spec).rank, 5);
}

// not_name and not_annotation take a list: none of its patterns may be found. An empty one (a
// parameter switched off) is left out, and a bad one is refused where it stands.
TEST(ScenarioFile, ExcludingKeysTakeAListOfPatterns) {
  const auto t = Scenario::parse(R"(
name = "x"
[parameters]
skip = { default = "" }
[[transform]]
op = "scale"
select = { kind = "kernel", not_name = ["gemm", "${skip}", "conv"], not_annotation = ["optim"] }
ratio = 0.5
)",
                                 "x.toml")
                     .instantiate();
  const auto& select = std::get<ScaleSpec>(t.at(0).spec).select;
  EXPECT_EQ(select.not_name, "(?:gemm)|(?:conv)");
  EXPECT_EQ(select.not_annotation, "(?:optim)");
  try {
    (void)Scenario::parse("name = \"x\"\n[[transform]]\nop = \"scale\"\nselect = { not_name = [\"a\", \"(b\"] }\n"
                          "ratio = 0.5\n",
                          "bad.toml")
        .instantiate();
    FAIL() << "a bad pattern in a list was accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.toml:4:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(b"), std::string::npos) << e.what();
  }
}

TEST(ScenarioFile, RestrictingToARankLimitsEverySelectorThatNamesNone) {
  auto t = Scenario::parse(R"(
name = "x"
[[transform]]
op = "scale"
select = { kind = "kernel" }
ratio = 0.5
[[transform]]
op = "add_edge"
from = { name = "a", rank = 1 }
to = { name = "b" }
[[transform]]
op = "match_ranks"
select = { kind = "cpu" }
)",
                           "x.toml")
               .instantiate();
  restrict_to_rank(t, 3);
  EXPECT_EQ(std::get<ScaleSpec>(t[0].spec).select.rank, 3);
  EXPECT_EQ(std::get<AddEdgeSpec>(t[1].spec).from.rank, 1); // named its own
  EXPECT_EQ(std::get<AddEdgeSpec>(t[1].spec).to.rank, 3);
  EXPECT_EQ(std::get<MatchRanksSpec>(t[2].spec).rank, 3);
  EXPECT_FALSE(std::get<MatchRanksSpec>(t[2].spec).select.rank); // it selects over every rank
}

TEST(BuiltinScenarios, UnknownNameListsTheBuiltins) {
  try {
    find_scenario("ampp");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("built-ins: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("amp"), std::string::npos) << e.what();
  }
}

TEST(Documentation, EveryTomlExampleInDocsWhatifParses) {
  std::ifstream in(std::string(DREAMSCOPE_SOURCE_DIR) + "/docs/whatif.md");
  ASSERT_TRUE(in) << "docs/whatif.md";
  std::string line, block;
  bool inside = false;
  int examples = 0, first_line = 0, number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!inside && line == "```toml") {
      inside = true;
      block.clear();
      first_line = number + 1;
    } else if (inside && line == "```") {
      inside = false;
      ++examples;
      const std::string file = "docs/whatif.md:" + std::to_string(first_line);
      try {
        const Scenario s = Scenario::parse(block, file);
        EXPECT_FALSE(s.instantiate().empty()) << file;
      } catch (const ScenarioError& e) {
        ADD_FAILURE() << e.what();
      }
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_GE(examples, 1);
}
