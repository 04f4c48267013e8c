// Shared by the importer tests: where the real traces are, scratch files, and a trace's
// rows rendered as text so that a test reads "trace in, query, expected rows out".
#pragma once

#include "../common/scratch_dir.h"

#include <dreamscope/storage/importers.h>
#include <dreamscope/storage/trace.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>
#include <zlib.h>

namespace dreamscope::test {

inline std::filesystem::path kineto(const std::string& relative) {
  return std::filesystem::path(DREAMSCOPE_SHARED_DATA_DIR) / "kineto-hta" / relative;
}

// A scratch folder that can also hold gzip files (the importers read .json.gz).
class TempDir : public ScratchDir {
 public:
  TempDir() : ScratchDir("dreamscope-import") {}
  std::filesystem::path write_gzip(const std::string& name, const std::string& content) const {
    auto p = *this / name;
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, content.data(), static_cast<unsigned>(content.size()));
    gzclose(f);
    return p;
  }
};

struct KindCounts {
  std::size_t runtime = 0, driver = 0, kernel = 0, memcpy = 0, memset = 0, sync = 0, annotation = 0;
  bool operator==(const KindCounts&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const KindCounts& c) {
  return os << "{runtime " << c.runtime << ", driver " << c.driver << ", kernel " << c.kernel << ", memcpy "
            << c.memcpy << ", memset " << c.memset << ", sync " << c.sync << ", annotation " << c.annotation << "}";
}

inline KindCounts count_kinds(const Trace& t) {
  KindCounts c;
  for (ApiKind k : t.cuda_api().kind) (k == ApiKind::Driver ? c.driver : c.runtime)++;
  for (GpuOpKind k : t.gpu_ops().kind) {
    switch (k) {
      case GpuOpKind::Kernel: ++c.kernel; break;
      case GpuOpKind::Memcpy: ++c.memcpy; break;
      case GpuOpKind::Memset: ++c.memset; break;
      case GpuOpKind::Sync: ++c.sync; break;
    }
  }
  c.annotation = t.annotations().size();
  return c;
}

// "kernel 'name' stream 7 [start, end) corr 12": one GPU op as a row of text.
inline std::string gpu_op_row(const Trace& t, GpuOpIndex i) {
  const auto& g = t.gpu_ops();
  const TrackInfo& track = t.tracks()[g.track[i]];
  return std::string(to_string(g.kind[i])) + " '" + std::string(t.str(g.name[i])) + "' device " +
         std::to_string(t.devices()[track.device].ordinal) + " stream " + std::to_string(track.stream) + " [" +
         std::to_string(g.start[i]) + ", " + std::to_string(g.end[i]) + ") corr " + std::to_string(g.correlation[i]);
}

inline std::string api_row(const Trace& t, CudaApiIndex i) {
  const auto& a = t.cuda_api();
  const TrackInfo& track = t.tracks()[a.track[i]];
  return std::string(a.kind[i] == ApiKind::Driver ? "driver" : "runtime") + " '" + std::string(t.str(a.name[i])) +
         "' tid " + std::to_string(track.tid) + " [" + std::to_string(a.start[i]) + ", " + std::to_string(a.end[i]) +
         ") corr " + std::to_string(a.correlation[i]) + " ext " + std::to_string(a.external_id[i]);
}

inline std::vector<GpuOpIndex> gpu_ops_named(const Trace& t, std::string_view needle) {
  std::vector<GpuOpIndex> out;
  for (GpuOpIndex i{0}; i < t.gpu_ops().size(); ++i) {
    if (t.str(t.gpu_ops().name[i]).find(needle) != std::string_view::npos) out.push_back(i);
  }
  return out;
}

inline std::vector<AnnotationIndex> annotations_in_category(const Trace& t, std::string_view category) {
  std::vector<AnnotationIndex> out;
  for (AnnotationIndex i{0}; i < t.annotations().size(); ++i) {
    if (t.str(t.annotations().category[i]) == category) out.push_back(i);
  }
  return out;
}

} // namespace dreamscope::test
