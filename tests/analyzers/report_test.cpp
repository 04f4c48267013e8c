// The renderers say what the analyses found, in each format.
#include "analysis_traces.h"

#include <dreamscope/analyzers/report.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace dreamscope::analyzers {
namespace {

using test::TraceMaker;
using test::us;

Trace workload() {
  TraceMaker m(TraceSource::Kineto);
  test::add_hta_workload(m);
  m.annotation("ProfilerStep#1", us(80), us(160), "user_annotation");
  m.annotation("forward <fused> & more", us(85), us(130), "user_annotation");
  return std::move(m).build();
}

TEST(ReportJson, FollowsTheDocumentedSchema) {
  const Trace t = workload();
  const auto r = analyze_trace(t, "w.json");
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_EQ(j["schema"], "dreamscope-analyze/1");
  EXPECT_EQ(j["trace"]["name"], "w.json");
  EXPECT_EQ(j["trace"]["source"], "kineto");
  EXPECT_EQ(j["sections"].size(), 7u);
  EXPECT_EQ(j["hta"]["unit"], "us");
  EXPECT_EQ(j["hta"]["temporal"]["idle_us"], 65);
  EXPECT_EQ(j["hta"]["temporal"]["compute_pct"], 27.27);
  EXPECT_EQ(j["hta"]["kernel_types"][0]["kernel_type"], "COMPUTATION");
  EXPECT_EQ(j["hta"]["launches"].size(), 5u);
  EXPECT_EQ(j["hta"]["launches"][0][0], 1);
  EXPECT_EQ(j["hta"]["launch_columns"][5], "launch_delay_us");
  EXPECT_NEAR(j["hta"]["comm_comp_overlap_pct"].get<double>(), 33.333, 1e-3);
  EXPECT_EQ(j["hta"]["cpu_annotations"][0]["name"], "ProfilerStep#1");
  const auto& ops = j["cross_stack"]["operations"];
  ASSERT_FALSE(ops.empty());
  for (const auto& o : ops) {
    EXPECT_EQ(o["total_ns"].get<std::int64_t>(), o["cpu_framework_ns"].get<std::int64_t>() + o["cpu_cuda_api_ns"].get<std::int64_t>() +
                                                     o["gpu_only_ns"].get<std::int64_t>() + o["cpu_gpu_overlap_ns"].get<std::int64_t>());
  }
  EXPECT_EQ(j["steps"]["categories"].size(), 8u);
  EXPECT_EQ(j["steps"]["steps"][0]["name"], "ProfilerStep#1");
  EXPECT_TRUE(j["gpu"][0]["sm_efficiency"].is_null());
  EXPECT_EQ(j["top_kernels"][0]["name"], "gemm");
  EXPECT_EQ(j["top_kernels"][0]["total_ns"], us(30));
  EXPECT_EQ(j["data_stalls"]["source"], "none");
}

TEST(ReportJson, OnlyTheChosenSections) {
  const Trace t = workload();
  ReportOptions o;
  o.sections = {ReportSection::TopKernels};
  const auto j = nlohmann::json::parse(render_json(analyze_trace(t, "w", o)));
  EXPECT_TRUE(j.contains("top_kernels"));
  EXPECT_FALSE(j.contains("hta"));
  EXPECT_FALSE(j.contains("cross_stack"));
}

TEST(ReportText, TablesForEverySection) {
  const auto text = render_text(analyze_trace(workload(), "w.json"));
  for (const char* s : {"Cross-stack breakdown", "Temporal breakdown", "Idle time per stream", "Kernel launches",
                        "Step time breakdown", "GPU utilization", "Data stalls", "Top kernels", "59.09"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s;
  }
}

TEST(ReportMarkdown, PipeTablesWithEscapedCells) {
  TraceMaker m;
  m.annotation("a|b", 0, 10);
  const auto md = render_markdown(analyze_trace(std::move(m).build(), "pipes"));
  EXPECT_NE(md.find("## Cross-stack breakdown"), std::string::npos);
  EXPECT_NE(md.find("| a\\|b |"), std::string::npos);
  EXPECT_NE(md.find("| --- | ---: |"), std::string::npos);
}

TEST(ReportHtml, SelfContainedWithChartsAndEscapedNames) {
  const auto html = render_html(analyze_trace(workload(), "w.json"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-cross-stack\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-timeline\""), std::string::npos);
  EXPECT_NE(html.find("id=\"chart-kernels\""), std::string::npos);
  EXPECT_NE(html.find("forward &lt;fused&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(html.find("forward <fused>"), std::string::npos);
  // Nothing fetched from elsewhere: it must read the same offline.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

TEST(ReportSections, NamesRoundTrip) {
  for (ReportSection s : kAllSections) EXPECT_EQ(report_section_from_string(to_string(s)), s);
  EXPECT_FALSE(report_section_from_string("bogus").has_value());
}

} // namespace
} // namespace dreamscope::analyzers
