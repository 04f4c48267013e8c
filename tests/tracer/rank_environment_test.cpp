// A process's rank from its launcher's variables (dreamscope/tracer/rank_environment.h): which
// family wins, and what is ignored with a warning.
#include <dreamscope/tracer/rank_environment.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

namespace dreamscope {
namespace {

RankPlacement from(const std::map<std::string, std::string>& env) {
  return rank_from_environment([&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(RankEnvironment, NoLauncherIsNotARank) {
  const RankPlacement p = from({{"PATH", "/bin"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "8"}});
  EXPECT_FALSE(p.is_rank());
  EXPECT_EQ(p.rank, kNoValue);
  EXPECT_EQ(p.local_rank, kNoValue);
  EXPECT_EQ(p.world_size, kNoValue);
  EXPECT_EQ(p.rank_variable, nullptr);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RankEnvironment, Torchrun) {
  const RankPlacement p = from({{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"LOCAL_WORLD_SIZE", "4"}});
  EXPECT_TRUE(p.is_rank());
  EXPECT_EQ(p.rank, 5);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_STREQ(p.rank_variable, "RANK");
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RankEnvironment, EachLauncherFamily) {
  RankPlacement p = from({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                          {"OMPI_COMM_WORLD_SIZE", "4"}});
  EXPECT_EQ(p.rank, 3);
  EXPECT_EQ(p.local_rank, 1);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_STREQ(p.rank_variable, "OMPI_COMM_WORLD_RANK");
  p = from({{"SLURM_PROCID", "12"}, {"SLURM_LOCALID", "4"}, {"SLURM_NTASKS", "16"}});
  EXPECT_EQ(p.rank, 12);
  EXPECT_EQ(p.local_rank, 4);
  EXPECT_EQ(p.world_size, 16);
  EXPECT_STREQ(p.rank_variable, "SLURM_PROCID");
  // PMI has no local rank.
  p = from({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.local_rank, kNoValue);
  EXPECT_EQ(p.world_size, 2);
  EXPECT_STREQ(p.rank_variable, "PMI_RANK");
}

// A torchrun worker under srun has both; the torch variables say the worker's own rank.
TEST(RankEnvironment, PrecedenceTorchThenOpenMpiThenSlurmThenPmi) {
  const std::map<std::string, std::string> all{
      {"RANK", "9"},         {"LOCAL_RANK", "1"},    {"WORLD_SIZE", "16"},          {"OMPI_COMM_WORLD_RANK", "2"},
      {"OMPI_COMM_WORLD_SIZE", "4"}, {"SLURM_PROCID", "1"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "2"},
      {"PMI_RANK", "7"},     {"PMI_SIZE", "8"}};
  RankPlacement p = from(all);
  EXPECT_EQ(p.rank, 9);
  EXPECT_EQ(p.world_size, 16);
  EXPECT_EQ(p.local_rank, 1);
  auto rest = all;
  rest.erase("RANK");
  p = from(rest);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.world_size, 4);
  // The local rank comes from the same family as the rank, never from another.
  EXPECT_EQ(p.local_rank, kNoValue);
  rest.erase("OMPI_COMM_WORLD_RANK");
  p = from(rest);
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.local_rank, 0);
  EXPECT_EQ(p.world_size, 2);
  rest.erase("SLURM_PROCID");
  p = from(rest);
  EXPECT_EQ(p.rank, 7);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RankEnvironment, AnEmptyVariableIsNotSet) {
  const RankPlacement p = from({{"RANK", ""}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"}});
  EXPECT_EQ(p.rank, 3);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RankEnvironment, AnInvalidRankIsIgnoredWithAWarningAndTheNextFamilySpeaks) {
  for (const char* bad : {"abc", "-1", "3.0", " 3", "+3", "16777216", "99999999999999999999999", "1e3"}) {
    const RankPlacement p = from({{"RANK", bad}, {"WORLD_SIZE", "8"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}});
    EXPECT_EQ(p.rank, 1) << bad;
    EXPECT_EQ(p.world_size, 2) << bad;
    ASSERT_EQ(p.warnings.size(), 1u) << bad;
    EXPECT_NE(p.warnings[0].find("RANK="), std::string::npos) << p.warnings[0];
    EXPECT_NE(p.warnings[0].find("ignored"), std::string::npos) << p.warnings[0];
  }
  const RankPlacement none = from({{"RANK", "x"}});
  EXPECT_FALSE(none.is_rank());
  ASSERT_EQ(none.warnings.size(), 1u);
  EXPECT_EQ(none.warnings[0], "RANK='x' is not a rank (a whole number below 2^24): ignored");
}

TEST(RankEnvironment, LimitsOfEachValue) {
  RankPlacement p = from({{"RANK", "16777215"}, {"WORLD_SIZE", "16777216"}});
  EXPECT_EQ(p.rank, 16777215);
  EXPECT_EQ(p.world_size, kNoValue); // 2^24 is past the limit
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("WORLD_SIZE='16777216' is not a world size"), std::string::npos) << p.warnings[0];
  p = from({{"RANK", "0"}, {"WORLD_SIZE", "0"}});
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.world_size, kNoValue);
  EXPECT_EQ(p.warnings.size(), 1u);
  // Leading zeros are a number a person may write.
  p = from({{"RANK", "007"}, {"WORLD_SIZE", "008"}});
  EXPECT_EQ(p.rank, 7);
  EXPECT_EQ(p.world_size, 8);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(RankEnvironment, AWorldSizeNotAboveTheRankOrALocalRankNotBelowItIsIgnored) {
  RankPlacement p = from({{"RANK", "4"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(p.rank, 4);
  EXPECT_EQ(p.world_size, kNoValue);
  EXPECT_EQ(p.local_rank, 0);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0], "WORLD_SIZE='4' is not above RANK=4: ignored");
  p = from({{"RANK", "1"}, {"LOCAL_RANK", "4"}, {"WORLD_SIZE", "4"}});
  EXPECT_EQ(p.local_rank, kNoValue);
  EXPECT_EQ(p.world_size, 4);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0], "LOCAL_RANK='4' is not below WORLD_SIZE=4: ignored");
  p = from({{"RANK", "1"}, {"LOCAL_RANK", "one"}});
  EXPECT_EQ(p.rank, 1);
  EXPECT_EQ(p.local_rank, kNoValue);
  EXPECT_EQ(p.warnings.size(), 1u);
}

TEST(RankEnvironment, AHostileValueMakesAShortOneLineWarning) {
  const std::string hostile = "1\n" + std::string(100000, 'x');
  const RankPlacement p = from({{"RANK", hostile}});
  EXPECT_FALSE(p.is_rank());
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(p.warnings[0].find('\n'), std::string::npos);
  EXPECT_LT(p.warnings[0].size(), 200u);
}

TEST(RankEnvironment, FromTheProcessEnvironment) {
  for (const RankVariables& family : kRankVariables) {
    for (const char* name : {family.rank, family.local_rank, family.world_size}) {
      if (name) unsetenv(name);
    }
  }
  EXPECT_FALSE(rank_from_environment().is_rank());
  setenv("PMI_RANK", "2", 1);
  setenv("PMI_SIZE", "3", 1);
  const RankPlacement p = rank_from_environment();
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.world_size, 3);
  EXPECT_EQ(rank_variable_names(), "RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID or PMI_RANK");
}

} // namespace
} // namespace dreamscope
