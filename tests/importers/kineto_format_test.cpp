// The number formats of Kineto traces (storage/src/importers/kineto/kineto_format.h): microsecond times as
// exact nanoseconds, whichever way a profiler version wrote them, and the JSON validity of
// compound args.
#include "importers/kineto/kineto_format.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>

namespace dreamscope::kineto {
namespace {

TEST(KinetoTimeFormat, MicrosecondsBecomeExactNanoseconds) {
  EXPECT_EQ(parse_us_as_ns("0"), 0);
  EXPECT_EQ(parse_us_as_ns("1234"), 1'234'000);
  EXPECT_EQ(parse_us_as_ns("1234.5"), 1'234'500);
  EXPECT_EQ(parse_us_as_ns("1234.567"), 1'234'567);
  EXPECT_EQ(parse_us_as_ns("-1234.567"), -1'234'567);
  EXPECT_EQ(parse_us_as_ns(".5"), 500);
  EXPECT_EQ(parse_us_as_ns("5."), 5'000);
  EXPECT_EQ(parse_us_as_ns("1700000000123456.789"), 1'700'000'000'123'456'789); // a Unix-epoch time
  EXPECT_EQ(parse_us_as_ns("9223372036854775.807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_us_as_ns("9999999999999999"), std::nullopt); // 16 digits, past 64 bits in ns
  EXPECT_EQ(parse_us_as_ns("12345678901234567"), std::nullopt);                  // 17 digits
  EXPECT_EQ(parse_us_as_ns("0001234.5"), 1'234'500);                              // leading zeros
  // Past the nanosecond: rounded half away from zero.
  EXPECT_EQ(parse_us_as_ns("1234.5674"), 1'234'567);
  EXPECT_EQ(parse_us_as_ns("1234.5675"), 1'234'568);
  EXPECT_EQ(parse_us_as_ns("-0.0005"), -1);
  EXPECT_EQ(parse_us_as_ns("1.5e3"), 1'500'000);
  EXPECT_EQ(parse_us_as_ns("15E-1"), 1'500);
  EXPECT_EQ(parse_us_as_ns("1e+2"), 100'000);
  for (const char* bad : {"", "-", ".", "12a", "1.2.3", "--1", "1e", "0x10", "9999999999999999999"}) {
    EXPECT_FALSE(parse_us_as_ns(bad).has_value()) << bad;
  }
}

// Random times as Kineto writes them (whole µs with 0 to 3 decimals, of every magnitude up to
// a Unix-epoch timestamp) against the arithmetic they stand for.
TEST(KinetoTimeFormat, EveryKinetoTimeOfEveryMagnitude) {
  std::mt19937_64 rng(7);
  for (int n = 0; n < 100'000; ++n) {
    const std::int64_t whole = static_cast<std::int64_t>(rng() % 2'000'000'000'000'000) >> (rng() % 50);
    const int decimals = static_cast<int>(rng() % 4);
    const std::int64_t fraction = decimals == 0 ? 0 : static_cast<std::int64_t>(rng() % (decimals == 1 ? 10 : decimals == 2 ? 100 : 1000));
    std::string text = std::to_string(whole);
    if (decimals > 0) {
      std::string f = std::to_string(fraction);
      text += "." + std::string(static_cast<std::size_t>(decimals) - f.size(), '0') + f;
    }
    const std::int64_t scale = decimals == 0 ? 0 : decimals == 1 ? 100 : decimals == 2 ? 10 : 1;
    const bool negative = rng() % 5 == 0;
    const std::int64_t ns = whole * 1000 + fraction * scale;
    ASSERT_EQ(parse_us_as_ns((negative ? "-" : "") + text), negative ? -ns : ns) << text;
  }
}

TEST(KinetoArgFormat, CompoundArgsAreCheckedAsJson) {
  for (const char* good : {"[]", "{}", "[[1, 2], [3]]", R"({"a": [1.5e3, -2, true, null], "b": "x]"})", "[\"\\\"]\"]", "true"}) {
    EXPECT_TRUE(is_valid_json_text(good)) << good;
  }
  for (const char* bad : {"[", "]", "[}", "{]", "[512c]", "[1[2]]", "[\"open]", "[tru]", "[1}", "[1 \"a\"x]"}) {
    EXPECT_FALSE(is_valid_json_text(bad)) << bad;
  }
  // What an exporter would have copied into a file that then does not parse (round2's
  // export_invalid_escape_args.json and export_bad_u_escape_args.json, and the grammar's rest).
  for (const char* bad : {R"(["Sc\alar"])", R"(["\u12"])", R"(["\u12G4"])", "[1 2]", R"({"a" 1})", "[1,]", R"({"a":1,})",
                          "[,1]", R"({1:2})", "1 2", "[\"a\x01\"]", R"({"a"})", "[]]", "{}{}"}) {
    EXPECT_FALSE(is_valid_json_text(bad)) << bad;
  }
  for (const char* good : {R"(["\u00e9\n\t\/\\"])", R"({"a":{"b":[{}]}})", " [ 1 , 2 ] ", "-0.5e-3", R"("x")"}) {
    EXPECT_TRUE(is_valid_json_text(good)) << good;
  }
}

// Ids and sizes written as floating point (totalGlobalMem, External id) are whole numbers
// where they fit an int64, and no number where they do not: a cast of 4.2e64 is undefined
// (found by fuzz_kineto_import).
TEST(KinetoArgFormat, WholeFloatsAreIntsOnlyWhereTheyFit) {
  const auto as_int_of = [](const char* text) {
    return as_int(JsonValue{.type = od::json_type::number, .text = text, .present = true});
  };
  EXPECT_EQ(as_int_of("1e3"), 1000);
  EXPECT_EQ(as_int_of("-2.5e2"), -250);
  EXPECT_EQ(as_int_of("-9.2e18"), std::int64_t{-9'200'000'000'000'000'000});
  EXPECT_EQ(as_int_of("-9223372036854775808.0"), std::numeric_limits<std::int64_t>::min());
  for (const char* too_large : {"423146946E56", "9223372036854775808.0", "1e19", "-1e19", "-9.3e18"}) {
    EXPECT_EQ(as_int_of(too_large), std::nullopt) << too_large;
  }
  EXPECT_EQ(as_int_of("1.5"), std::nullopt);
}

// The exporter of PyTorch builds without Kineto (torch/autograd/profiler_util.py): its
// pseudo-processes, its remote tids, and the category it does not write.
TEST(KinetoLegacyFormat, PseudoProcessesRemoteTidsAndCategories) {
  const auto string = [](std::string_view text) {
    return JsonValue{.type = od::json_type::string, .text = text, .present = true};
  };
  EXPECT_EQ(legacy_row(string("CPU functions")), LegacyRow::Cpu);
  EXPECT_EQ(legacy_row(string("CUDA functions")), LegacyRow::Device);
  EXPECT_EQ(legacy_row(string("NPU functions")), LegacyRow::Device);
  for (const char* not_one : {"functions", " functions", "CPU 2 functions", "CPU functions ", "main", "24572"}) {
    EXPECT_EQ(legacy_row(string(not_one)), LegacyRow::None) << not_one;
  }
  EXPECT_EQ(legacy_row(JsonValue{.type = od::json_type::number, .text = "1", .present = true}), LegacyRow::None);

  const auto remote = legacy_remote_tid(string(" node_id:1, thread_id:4 "));
  ASSERT_TRUE(remote.has_value());
  EXPECT_EQ(remote->node, 1);
  EXPECT_EQ(remote->thread, 4);
  for (const char* not_one : {"node_id:1", "node_id:x, thread_id:4", "node_id:1, thread_id:", "thread_id:4", "7"}) {
    EXPECT_FALSE(legacy_remote_tid(string(not_one)).has_value()) << not_one;
  }

  for (const char* op : {"aten::mm", "autograd::engine::evaluate_function: AddmmBackward0",
                         "torch::autograd::AccumulateGrad", "AddmmBackward0", "AddmmBackward", "ReluBackward1",
                         "rpc_sync#f(w0 -> w1)#remote_op: aten::add"}) {
    EXPECT_EQ(legacy_category(op), "cpu_op") << op;
  }
  for (const char* range : {"forward", "ProfilerStep#3", "Optimizer.step#SGD.step", "Backward", "my Backward0",
                            "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", ""}) {
    EXPECT_EQ(legacy_category(range), "user_annotation") << range;
  }
}

} // namespace
} // namespace dreamscope::kineto
