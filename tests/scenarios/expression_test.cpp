#include <dreamscope/whatif/scenario.h>

#include <gtest/gtest.h>

using namespace dreamscope::whatif;

namespace {

ParameterValue eval(std::string_view text, const ExpressionValues& values = {}) {
  return evaluate_expression(text, values);
}

} // namespace

TEST(Expression, ArithmeticFollowsPrecedenceAndKeepsIntegers) {
  EXPECT_EQ(eval("1 + 2 * 3"), ParameterValue(std::int64_t{7}));
  EXPECT_EQ(eval("(1 + 2) * 3"), ParameterValue(std::int64_t{9}));
  EXPECT_EQ(eval("7 / 2"), ParameterValue(3.5));
  EXPECT_EQ(eval("-3 + 1"), ParameterValue(std::int64_t{-2}));
  EXPECT_EQ(eval("1.5e2"), ParameterValue(150.0));
}

TEST(Expression, ParametersKeepTheirType) {
  ExpressionValues v{{"workers", std::int64_t{4}}, {"device", std::string("A100")}, {"synthetic", false}};
  EXPECT_EQ(eval("workers", v), ParameterValue(std::int64_t{4}));
  EXPECT_EQ(eval("device", v), ParameterValue(std::string("A100")));
  EXPECT_EQ(eval("workers * 1000000", v), ParameterValue(std::int64_t{4000000}));
  EXPECT_EQ(eval("!synthetic && workers > 0", v), ParameterValue(true));
  EXPECT_EQ(eval("device == 'A100'", v), ParameterValue(true));
  EXPECT_EQ(eval("device != ''", v), ParameterValue(true));
}

TEST(Expression, GatesCompareNumbers) {
  ExpressionValues v{{"speedup", 1.05}};
  EXPECT_EQ(eval("speedup < 1.10", v), ParameterValue(true));
  EXPECT_EQ(eval("speedup >= 1.10", v), ParameterValue(false));
  EXPECT_EQ(eval("speedup < 1.10 || speedup > 2", v), ParameterValue(true));
  EXPECT_EQ(eval("1 == 1.0"), ParameterValue(true));
}

TEST(Expression, ErrorsSayWhatIsWrong) {
  ExpressionValues v{{"workers", std::int64_t{4}}};
  try {
    eval("worker > 2", v);
    FAIL() << "an unknown name must be an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'worker' (known: workers)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(eval("1 +"), std::invalid_argument);
  EXPECT_THROW(eval("(1 + 2"), std::invalid_argument);
  EXPECT_THROW(eval("1 / 0"), std::invalid_argument);
  EXPECT_THROW(eval("'a' < 2"), std::invalid_argument);
  EXPECT_THROW(eval("2 3"), std::invalid_argument);
}
