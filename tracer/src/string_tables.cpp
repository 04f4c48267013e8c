#include "string_tables.h"

namespace dreamscope::tracer {

std::uint32_t StringTable::intern(std::string_view s) {
  std::lock_guard lock(mu_);
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  strings_.emplace_back(s);
  const auto id = static_cast<std::uint32_t>(strings_.size() - 1);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::string StringTable::get(std::uint32_t id) {
  std::lock_guard lock(mu_);
  return id < strings_.size() ? strings_[id] : std::string();
}

DomainTable::DomainTable() : domains_{"nvtx"} {}

std::uint16_t DomainTable::create(std::string_view name) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < domains_.size(); ++i) {
    if (domains_[i] == name) return static_cast<std::uint16_t>(i);
  }
  if (domains_.size() >= 0xffff) return 0;
  domains_.emplace_back(name);
  return static_cast<std::uint16_t>(domains_.size() - 1);
}

void DomainTable::name_category(std::uint16_t domain, std::uint32_t category, std::string_view name) {
  std::lock_guard lock(mu_);
  categories_[{domain, category}] = std::string(name);
}

std::string DomainTable::domain_name(std::uint16_t domain) {
  std::lock_guard lock(mu_);
  return domain < domains_.size() ? domains_[domain] : std::string("nvtx");
}

std::string DomainTable::category_name(std::uint16_t domain, std::uint32_t category) {
  if (category == 0) return {};
  std::lock_guard lock(mu_);
  auto it = categories_.find({domain, category});
  return it != categories_.end() ? it->second : std::to_string(category);
}

} // namespace dreamscope::tracer
