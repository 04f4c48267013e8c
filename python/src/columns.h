// The Trace's tables as columns for pandas: one function per table, each returning a dict of
// column name -> a column (see Column). The Python side (dreamscope/traces.py) turns each
// column into a pandas one without touching rows. When storage describes its tables in one
// list of columns, each function here can be generated from it.
#pragma once

#include <dreamscope/storage/trace.h>

#include <pybind11/pybind11.h>

#include <string>

namespace dreamscope::python {

// How a column crosses to Python: a tuple (kind, data[, categories]).
//   ("int", ndarray)              numbers, a numpy array (copied once out of the trace)
//   ("nullable", ndarray int64)   numbers where kNoValue means missing (pandas' Int64)
//   ("category", codes, list)     strings or enums: int32 codes into the categories (-1: none)
// Each table function returns a dict of name -> such a tuple, in column order.
pybind11::dict table_columns(const Trace& trace, const std::string& table);

// The tables table_columns knows, in the order the docs list them.
const char* const* table_names();

} // namespace dreamscope::python
