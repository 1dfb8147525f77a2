// The family registry and the interface's defaults.
#include "plan/kernel_family.hpp"

#include <algorithm>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

namespace tileforge::plan {
namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::unique_ptr<KernelFamily>> owned;
};

// Function-local: families register from static initializers of other files, in any order.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

std::string KernelFamily::violation_detail(std::string_view constraint, const Config&, const hw::HwProfile&) const {
  return fmt::format("violates {}", constraint);
}

void with_determinism(ParamSpace& space, bool deterministic) {
  if (!deterministic) return;
  const KernelFamily* family = find_family(space.family);
  if (!family) return;
  if (std::optional<Constraint> c = family->determinism(space)) space.constraints.push_back(std::move(*c));
}

void with_determinism(FamilySpace& space, bool deterministic) {
  const std::size_t before = space.space.constraints.size();
  with_determinism(space.space, deterministic);
  // A listed space's configs were built legal under the family's own constraints: the new one must be checked.
  if (space.space.constraints.size() != before) space.list_legal = false;
}

bool deterministic_config(const Config& config) {
  const KernelFamily* family = find_family(config.family);
  if (!family) return true;
  ParamSpace space;
  space.family = config.family;
  for (const auto& [name, value] : config.params) space.params.push_back({name, {value}, "", ""});
  const std::optional<Constraint> c = family->determinism(space);
  return !c || c->holds(config);
}

Expected<std::unique_ptr<Kernel>> KernelFamily::prepare(const Problem&, const Config&, const Device&) const {
  return unsupported(fmt::format("family {} has no code of its own: its backend ({}) runs it", name(), backend()));
}

Status KernelFamily::run(const Kernel&, const Problem&, const GemmArgs&) const {
  return unsupported(fmt::format("family {} has no code of its own: its backend ({}) runs it", name(), backend()));
}

Expected<std::string> KernelFamily::compile_target(const Device&) const {
  return unsupported(fmt::format("family {} is not compiled at run time", name()));
}

Expected<AheadCompile> KernelFamily::compile_ahead(const Problem&, const Config&, std::string_view,
                                                   jit::KernelCache*) const {
  return unsupported(fmt::format("family {} is not compiled at run time", name()));
}

const KernelFamily* family_for(std::string_view backend, const Problem& problem, const Device& device) {
  // As the planner's choose_family: a specialist that yields the problem to another family on this chip is passed
  // over, unless no other family of the backend takes it.
  const KernelFamily* yielded = nullptr;
  for (const KernelFamily* f : families()) {
    if (f->backend() != backend) continue;
    if (!f->fit(device.profile).ok || !f->runs_on(device) || !f->supports(problem).empty()) continue;
    if (f->specialist() && !f->yields(device.profile, problem).empty()) {
      if (!yielded) yielded = f;
      continue;
    }
    return f;
  }
  return yielded;
}

std::vector<const KernelFamily*> families() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<const KernelFamily*> out;
  for (const auto& f : r.owned) out.push_back(f.get());
  std::stable_sort(out.begin(), out.end(), [](const KernelFamily* a, const KernelFamily* b) {
    if (a->preference() != b->preference()) return a->preference() > b->preference();
    return a->name() < b->name();
  });
  return out;
}

const KernelFamily* find_family(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& f : r.owned)
    if (f->name() == name) return f.get();
  return nullptr;
}

std::vector<std::string> family_names() {
  std::vector<std::string> out;
  for (const KernelFamily* f : families()) out.emplace_back(f->name());
  return out;
}

void register_family(std::unique_ptr<KernelFamily> family) {
  if (!family) throw std::logic_error("register_family: null family");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const auto& f : r.owned) {
    if (f->name() == family->name()) {
      throw std::logic_error(fmt::format("kernel family '{}' is registered twice", family->name()));
    }
  }
  r.owned.push_back(std::move(family));
}

}  // namespace tileforge::plan
