// The tables' definitions (tables.h) as values that code iterates. For a record type R (one row
// of a table: CudaApiRecord, ProcessInfo, ...), `Definition<R>::columns` is a tuple holding one
// `Column` per column, in the definition's order, and `for_each<R>(f)` calls f with each; a
// column carries its member (and, for the event tables, its vector in the columnar table), its
// encoding, its name and its SQLite definition. Code that handles "every column" iterates these,
// so that a column added to tables.h reaches it with no edit there; where a column is handled
// apart from the others, the code says so and why.
#pragma once

#include "dreamscope/storage/trace.h"

#include <cstddef>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

namespace dreamscope::columns {

template <class M>
struct MemberOf;
template <class C, class T>
struct MemberOf<T C::*> {
  using record = C;
  using value = T;
};

template <auto RecordMember, class Encoding, auto TableMember = nullptr>
struct Column {
  using encoding = Encoding;
  using record = typename MemberOf<decltype(RecordMember)>::record;
  using value_type = typename MemberOf<decltype(RecordMember)>::value;
  static constexpr auto member = RecordMember;
  // Event tables: the column's vector in the columnar table (CudaApiTable, ...).
  static constexpr auto rows = TableMember;

  std::string_view name; // the member's
  std::string_view sql;  // its SQLite column definition: name, type, constraints

  // The column's name in trace.db.
  constexpr std::string_view sql_name() const { return sql.substr(0, sql.find(' ')); }
};

// Whether column type C has encoding E: `if constexpr (is<decltype(c), Launch>)`.
template <class C, class E>
inline constexpr bool is = std::is_same_v<typename std::remove_cvref_t<C>::encoding, E>;

// The start of row `r`, which an End column (its duration) is measured from: every table with one
// has a `start`. Named through the column, so that code for every column names it only where it
// handles an End column.
template <class Column, class Record>
constexpr TimeNs start_of(const Record& r) {
  static_assert(is<Column, End>);
  return r.start;
}

template <class Record>
struct Definition;

#define DREAMSCOPE_COLUMN(type, member, value, encoding, sql) Column<&Record::member, encoding>{#member, sql},
#define DREAMSCOPE_EVENT_COLUMN(type, member, value, encoding, sql) \
  Column<&Record::member, encoding, &Rows::member>{#member, sql},

// Each table's: `name`, the table's in trace.db and in messages about its rows; `in`, its rows in
// a Trace; `columns`; `log_columns`, how many of them the part log's record was introduced with
// (trace_log_format.h: the columns appended since follow them), a number that never changes. An
// event table's also: `Rows`, its columnar table; `Index`, its rows' type; `table`, its EventTable.
#define DREAMSCOPE_DEFINITION(R, table_name, rows_in, log_columns_, COLUMNS) \
  template <>                                                                \
  struct Definition<R> {                                                     \
    using Record = R;                                                        \
    static constexpr std::string_view name = table_name;                     \
    static constexpr auto in = &Trace::rows_in;                              \
    static constexpr std::size_t log_columns = log_columns_;                 \
    static constexpr auto columns = std::tuple{COLUMNS(DREAMSCOPE_COLUMN)};  \
  };
#define DREAMSCOPE_EVENT_DEFINITION(R, R_ROWS, R_INDEX, event_table, table_name, rows_in, log_columns_, COLUMNS) \
  template <>                                                                                                    \
  struct Definition<R> {                                                                                         \
    using Record = R;                                                                                            \
    using Rows = R_ROWS;                                                                                         \
    using Index = R_INDEX;                                                                                       \
    static constexpr EventTable table = event_table;                                                             \
    static constexpr std::string_view name = table_name;                                                         \
    static constexpr auto in = &Trace::rows_in;                                                                  \
    static constexpr std::size_t log_columns = log_columns_;                                                     \
    static constexpr auto columns = std::tuple{COLUMNS(DREAMSCOPE_EVENT_COLUMN)};                                \
  };

template <>
struct Definition<ProcessInfo> {
  using Record = ProcessInfo;
  static constexpr std::string_view name = "process";
  static constexpr auto in = &Trace::processes;
  static constexpr std::size_t log_columns = 7; // version 4 appended the second list
  // In trace.db, the `process` table holds the first list, `process_rank` the second.
  static constexpr auto process_columns = std::tuple{DREAMSCOPE_PROCESS_COLUMNS(DREAMSCOPE_COLUMN)};
  static constexpr auto rank_columns = std::tuple{DREAMSCOPE_PROCESS_RANK_COLUMNS(DREAMSCOPE_COLUMN)};
  static constexpr auto columns = std::tuple_cat(process_columns, rank_columns);
};
DREAMSCOPE_DEFINITION(DeviceInfo, "device", devices, 11, DREAMSCOPE_DEVICE_COLUMNS)
DREAMSCOPE_DEFINITION(TrackInfo, "track", tracks, 6, DREAMSCOPE_TRACK_COLUMNS)
DREAMSCOPE_EVENT_DEFINITION(CudaApiRecord, CudaApiTable, CudaApiIndex, EventTable::CudaApi, "cuda_api", cuda_api, 11,
                            DREAMSCOPE_CUDA_API_COLUMNS)
DREAMSCOPE_EVENT_DEFINITION(GpuOpRecord, GpuOpTable, GpuOpIndex, EventTable::GpuOp, "gpu_op", gpu_ops, 10,
                            DREAMSCOPE_GPU_OP_COLUMNS)
DREAMSCOPE_EVENT_DEFINITION(AnnotationRecord, AnnotationTable, AnnotationIndex, EventTable::Annotation, "annotation",
                            annotations, 8, DREAMSCOPE_ANNOTATION_COLUMNS)
DREAMSCOPE_DEFINITION(FlowRecord, "flow", flows, 6, DREAMSCOPE_FLOW_COLUMNS)
DREAMSCOPE_DEFINITION(CalibrationRecord, "calibration", calibration, 4, DREAMSCOPE_CALIBRATION_COLUMNS)
DREAMSCOPE_DEFINITION(OverheadRecord, "overhead", overheads, 4, DREAMSCOPE_OVERHEAD_COLUMNS)
DREAMSCOPE_DEFINITION(ThreadLoadRecord, "thread_load", thread_loads, 9, DREAMSCOPE_THREAD_LOAD_COLUMNS)
DREAMSCOPE_DEFINITION(MemoryEventRecord, "memory_event", memory_events, 8, DREAMSCOPE_MEMORY_EVENT_COLUMNS)

#undef DREAMSCOPE_DEFINITION
#undef DREAMSCOPE_EVENT_DEFINITION
#undef DREAMSCOPE_COLUMN
#undef DREAMSCOPE_EVENT_COLUMN

// The three event tables' records, in EventTable's order; and the tables a Trace holds as a vector
// of records (Trace::flows(), ...), in the order trace_copy.h copies them.
using EventRecords = std::tuple<CudaApiRecord, GpuOpRecord, AnnotationRecord>;
using RowRecords = std::tuple<FlowRecord, OverheadRecord, ThreadLoadRecord, MemoryEventRecord>;

// Calls f(column) for each column of a tuple of them, in order.
template <class Columns, class F>
constexpr void each(const Columns& columns, F&& f) {
  std::apply([&](const auto&... c) { (f(c), ...); }, columns);
}

// Calls f(column, std::integral_constant<std::size_t, I>{}) for each column, I its position.
template <class Columns, class F>
constexpr void each_indexed(const Columns& columns, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::get<I>(columns), std::integral_constant<std::size_t, I>{}), ...);
  }
  (std::make_index_sequence<std::tuple_size_v<std::remove_cvref_t<Columns>>>{});
}

template <class Record, class F>
constexpr void for_each(F&& f) {
  each(Definition<Record>::columns, f);
}

// Calls f(type_identity<R>{}) for each record type R of a tuple of them (EventRecords, ...).
template <class Records, class F>
constexpr void each_record(F&& f) {
  [&]<class... R>(std::type_identity<std::tuple<R...>>) {
    (f(std::type_identity<R>{}), ...);
  }(std::type_identity<Records>{});
}

// A launch configuration's fields, in the order the `launch` table and the part log hold them:
// f(field, "SQLite column definition") for each. LaunchConfig keeps its grid and block as arrays,
// which a column list of members cannot name, so they are listed here rather than in tables.h.
template <class Config, class F> // LaunchConfig, const or not
constexpr void for_each_field(Config& l, F&& f) {
  f(l.grid[0], "grid_x INTEGER");
  f(l.grid[1], "grid_y INTEGER");
  f(l.grid[2], "grid_z INTEGER");
  f(l.block[0], "block_x INTEGER");
  f(l.block[1], "block_y INTEGER");
  f(l.block[2], "block_z INTEGER");
  f(l.registers_per_thread, "registers_per_thread INTEGER");
  f(l.shared_memory_static, "shared_memory_static INTEGER");
  f(l.shared_memory_dynamic, "shared_memory_dynamic INTEGER");
}
static_assert(sizeof(LaunchConfig) == 9 * sizeof(std::int32_t), "a field added to LaunchConfig is listed above too");

template <class Record>
inline constexpr std::size_t count = std::tuple_size_v<std::remove_cvref_t<decltype(Definition<Record>::columns)>>;

} // namespace dreamscope::columns
