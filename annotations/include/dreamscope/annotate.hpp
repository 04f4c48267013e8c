// dreamscope annotations for C++: RAII scopes over the C API in annotate.h.
//
//   DREAMSCOPE_SCOPE(DS_CATEGORY_OPERATION, "forward");       // name registered once
//   dreamscope::Scope prep(DS_CATEGORY_PREP, "prep", batch);   // any name, any payload
//   dreamscope::Scope step = dreamscope::Scope::step(i);
//   dreamscope::Scope ar = dreamscope::Scope::collective("all_reduce", bytes);
#pragma once

#include "dreamscope/annotate.h"

#include <cstdint>

namespace dreamscope {

class Scope {
 public:
  Scope(int category, const char* name, std::int64_t payload = DS_NO_PAYLOAD) {
    ds_range_push(category, name, payload);
  }
  Scope(int category, ds_string_t name, std::int64_t payload = DS_NO_PAYLOAD) {
    ds_range_push_registered(category, name, payload);
  }
  ~Scope() { ds_range_pop(); }
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  static Scope operation(const char* name) { return Scope(DS_CATEGORY_OPERATION, name); }
  static Scope step(std::int64_t i) { return Scope(DS_CATEGORY_STEP, "step", i); }
  static Scope fetch(std::int64_t batch) { return Scope(DS_CATEGORY_FETCH, "fetch", batch); }
  static Scope prep(std::int64_t batch) { return Scope(DS_CATEGORY_PREP, "prep", batch); }
  static Scope wait(std::int64_t batch) { return Scope(DS_CATEGORY_WAIT, "wait", batch); }
  // A collective across ranks (`name`: "all_reduce", "broadcast", ...), `bytes` this rank contributes.
  static Scope collective(const char* name, std::int64_t bytes) { return Scope(DS_CATEGORY_COLLECTIVE, name, bytes); }
};

} // namespace dreamscope

#define DREAMSCOPE_CONCAT_INNER(a, b) a##b
#define DREAMSCOPE_CONCAT(a, b) DREAMSCOPE_CONCAT_INNER(a, b)
// A scope named by a string literal: the name is registered once per call site, so the
// tracer sees a handle rather than a string to copy.
#define DREAMSCOPE_SCOPE(category, literal, ...)                                              \
  static const ds_string_t DREAMSCOPE_CONCAT(dreamscope_name_, __LINE__) =                  \
      ds_register_string(literal);                                                          \
  ::dreamscope::Scope DREAMSCOPE_CONCAT(dreamscope_scope_, __LINE__)(                       \
      category, DREAMSCOPE_CONCAT(dreamscope_name_, __LINE__) __VA_OPT__(, ) __VA_ARGS__)
