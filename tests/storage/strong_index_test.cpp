// The typed indices (strong_index.h) keep one kind of row from meeting another: most of what this
// checks holds at compile time, so a change that let a GpuOpIndex pass for an AnnotationIndex
// again would fail to build this file.
#include <dreamscope/storage/strong_index.h>
#include <dreamscope/storage/trace.h>

#include <gtest/gtest.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace dreamscope {
namespace {

// What a call or an expression accepts, asked in a template so that "no" is an answer, not an
// error.
template <class T>
concept passes_as_annotation = requires(void (*takes_annotation)(AnnotationIndex), T i) { takes_annotation(i); };
template <class A, class B>
concept equality_comparable = requires(A a, B b) {
  a == b;
  a != b;
};
template <class A, class B>
concept ordered = requires(A a, B b) { a < b; };

// Each kind is its own type, none made from another, implicitly or explicitly.
static_assert(!std::is_convertible_v<GpuOpIndex, AnnotationIndex>);
static_assert(!std::is_convertible_v<AnnotationIndex, GpuOpIndex>);
static_assert(!std::is_convertible_v<CudaApiIndex, GpuOpIndex>);
static_assert(!std::is_constructible_v<AnnotationIndex, GpuOpIndex>);
static_assert(!std::is_constructible_v<GpuOpIndex, CudaApiIndex>);
static_assert(!std::is_constructible_v<CudaApiIndex, AnnotationIndex>);
static_assert(!std::is_assignable_v<AnnotationIndex&, GpuOpIndex>);
static_assert(!passes_as_annotation<GpuOpIndex>);
static_assert(!passes_as_annotation<CudaApiIndex>);
static_assert(passes_as_annotation<AnnotationIndex>);

// Made from an integer only explicitly; read as one implicitly (indexing a column).
static_assert(!std::is_convertible_v<std::uint32_t, GpuOpIndex>);
static_assert(!std::is_convertible_v<int, GpuOpIndex>);
static_assert(!passes_as_annotation<std::uint32_t>);
static_assert(std::is_constructible_v<GpuOpIndex, std::uint32_t>);
static_assert(std::is_constructible_v<GpuOpIndex, std::size_t>);
static_assert(std::is_convertible_v<GpuOpIndex, std::uint32_t>);
static_assert(GpuOpIndex{7}.value() == 7 && GpuOpIndex{7} == GpuOpIndex{7});

// Two kinds never compare; one kind compares with itself, with integers and with kNoIndex.
static_assert(!equality_comparable<GpuOpIndex, AnnotationIndex>);
static_assert(!equality_comparable<CudaApiIndex, GpuOpIndex>);
static_assert(!ordered<GpuOpIndex, AnnotationIndex>);
static_assert(equality_comparable<GpuOpIndex, GpuOpIndex> && ordered<GpuOpIndex, GpuOpIndex>);
static_assert(equality_comparable<GpuOpIndex, std::uint32_t> && ordered<GpuOpIndex, std::size_t>);
static_assert(equality_comparable<GpuOpIndex, NoIndex> && equality_comparable<NoIndex, AnnotationIndex>);

// kNoIndex is none of every kind, and the largest uint32_t.
static_assert(std::is_convertible_v<NoIndex, GpuOpIndex> && std::is_convertible_v<NoIndex, AnnotationIndex>);
static_assert(AnnotationIndex{kNoIndex} == kNoIndex && AnnotationIndex{0} != kNoIndex);
static_assert(std::uint32_t{kNoIndex} == 0xffffffffu);
static_assert(std::numeric_limits<GpuOpIndex>::max() == kNoIndex && std::numeric_limits<GpuOpIndex>::min() == 0u);

// As small and as cheap to copy as the integer it wraps: the tables hold columns of them.
static_assert(sizeof(GpuOpIndex) == sizeof(std::uint32_t));
static_assert(std::is_trivially_copyable_v<GpuOpIndex>);

// The Trace's rows are typed by their table: what takes or returns a row of one table takes or
// returns no other, and an event's args are reached through a row that says its own table.
template <class Row>
concept child_query = requires(const Trace& t, Row r) {
  t.annotation_children(r);
};
static_assert(child_query<AnnotationIndex> && !child_query<GpuOpIndex> && !child_query<std::uint32_t>);
template <class Row>
concept gpu_row_query = requires(const Trace& t, Row r) {
  t.gpu_ops().row(r, t.launch_configs());
};
static_assert(gpu_row_query<GpuOpIndex> && !gpu_row_query<CudaApiIndex> && !gpu_row_query<std::size_t>);
template <class Row>
concept annotation_row_query = requires(const Trace& t, Row r) {
  t.annotations().row(r);
};
static_assert(annotation_row_query<AnnotationIndex> && !annotation_row_query<GpuOpIndex>);
template <class Row>
concept args_query = requires(const Trace& t, Row r) {
  t.args_of(r);
};
static_assert(args_query<CudaApiIndex> && args_query<GpuOpIndex> && args_query<AnnotationIndex>);
static_assert(!args_query<std::uint32_t>); // a plain number says no table
template <class Row>
concept args_of_table = requires(const Trace& t, Row r) {
  t.args_of(EventRow{EventTable::Annotation, r});
};
static_assert(args_of_table<std::uint32_t> && !args_of_table<GpuOpIndex>); // a typed row names its own
static_assert(EventRow(GpuOpIndex{3}) == EventRow{EventTable::GpuOp, 3});
static_assert(std::is_same_v<decltype(std::declval<TraceBuilder&>().add(GpuOpRecord{})), GpuOpIndex>);
static_assert(std::is_same_v<decltype(std::declval<TraceBuilder&>().add(AnnotationRecord{})), AnnotationIndex>);
static_assert(std::is_same_v<decltype(std::declval<const Trace&>().gpu_ops_on(TrackId{0})), GpuOpRange>);
static_assert(
    std::is_same_v<decltype(std::declval<const Trace&>().cuda_api_with_correlation(0)), std::optional<CudaApiIndex>>);
static_assert(std::is_same_v<decltype(AnnotationTable::parent), IndexedVector<AnnotationIndex, AnnotationIndex>>);

// The tables' columns are indexed by their own table's rows, or by a plain number (a scan over
// the whole column), never by another table's.
template <class Column, class Row>
concept indexes = requires(const Column& c, Row r) { c[r]; };
static_assert(indexes<decltype(AnnotationTable::start), AnnotationIndex>);
static_assert(indexes<decltype(AnnotationTable::start), std::size_t>);
static_assert(!indexes<decltype(AnnotationTable::start), GpuOpIndex>);
static_assert(!indexes<decltype(GpuOpTable::name), CudaApiIndex> && !indexes<decltype(CudaApiTable::end), TrackId>);
static_assert(!indexes<decltype(AnnotationTable::parent), GpuOpIndex>);
static_assert(std::is_convertible_v<const decltype(GpuOpTable::start)&, const std::vector<TimeNs>&>);

// Tracks, processes and devices likewise: a thread's process is no device, and no row is a track.
static_assert(!std::is_convertible_v<ProcessId, DeviceId> && !std::is_constructible_v<TrackId, ProcessId>);
static_assert(!std::is_constructible_v<TrackId, GpuOpIndex>);
template <class Owner>
concept thread_owner = requires(TraceBuilder& b, Owner o) {
  b.thread_track(o, 1);
};
static_assert(thread_owner<ProcessId> && !thread_owner<DeviceId> && !thread_owner<std::uint32_t>);
template <class Owner>
concept stream_owner = requires(TraceBuilder& b, Owner o) {
  b.stream_track(o, 7);
};
static_assert(stream_owner<DeviceId> && !stream_owner<ProcessId>);
template <class Track>
concept track_query = requires(const Trace& t, Track k) {
  t.annotations_on(k);
};
static_assert(track_query<TrackId> && !track_query<ProcessId> && !track_query<AnnotationIndex>);
static_assert(std::is_same_v<decltype(TrackInfo::process), ProcessId> &&
              std::is_same_v<decltype(TrackInfo::device), DeviceId>);
static_assert(std::is_same_v<decltype(GpuOpRecord::track), TrackId>);
static_assert(!std::is_assignable_v<GpuOpRange&, AnnotationRange>);

TEST(StrongIndex, CountsComparesHashesAndPrintsAsItsInteger) {
  const std::vector<int> column{10, 20, 30};
  int sum = 0;
  for (GpuOpIndex i{0}; i < column.size(); ++i) sum += column[i];
  EXPECT_EQ(sum, 60);

  AnnotationIndex a{4};
  EXPECT_EQ(a++, AnnotationIndex{4});
  EXPECT_EQ(a, AnnotationIndex{5});
  EXPECT_EQ(--a, AnnotationIndex{4});
  EXPECT_LT(AnnotationIndex{3}, a);
  EXPECT_EQ(a + 1, 5u); // arithmetic is on the integer

  AnnotationIndex none = kNoIndex;
  EXPECT_EQ(none, kNoIndex);
  EXPECT_EQ(none.value(), 0xffffffffu);

  std::map<GpuOpIndex, int> ordered_map{{GpuOpIndex{2}, 1}, {GpuOpIndex{1}, 2}};
  EXPECT_EQ(ordered_map.begin()->first, GpuOpIndex{1});
  std::unordered_set<GpuOpIndex> set{GpuOpIndex{1}, GpuOpIndex{1}, GpuOpIndex{9}};
  EXPECT_EQ(set.size(), 2u);

  std::ostringstream out;
  out << GpuOpIndex{42};
  EXPECT_EQ(out.str(), "42");
}

} // namespace
} // namespace dreamscope
