// The names the traced threads record, as small ids: interned strings, and NVTX domains
// with their named categories. Shared by every thread of the process; the hot path enters
// only on a miss of its per-thread name cache (thread_state.cpp), the writer thread turns
// the ids back into text.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dreamscope::tracer {

// Interned strings; ids start at 1 (0 is "").
class StringTable {
 public:
  std::uint32_t intern(std::string_view s);
  std::string get(std::uint32_t id);
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::deque<std::string> strings_{""}; // a deque: ids_ views the strings, which never move
  std::unordered_map<std::string_view, std::uint32_t> ids_;
};

// NVTX domains (index 0 is the default domain, "nvtx") and their named categories.
class DomainTable {
 public:
  DomainTable();
  std::uint16_t create(std::string_view name);
  void name_category(std::uint16_t domain, std::uint32_t category, std::string_view name);
  std::string domain_name(std::uint16_t domain);
  // "" for category 0, the registered name, else the number.
  std::string category_name(std::uint16_t domain, std::uint32_t category);
  std::mutex& mutex() { return mu_; }

 private:
  std::mutex mu_;
  std::vector<std::string> domains_;
  std::map<std::pair<std::uint16_t, std::uint32_t>, std::string> categories_;
};

} // namespace dreamscope::tracer
