// The decision log's storage (see decision_log.hpp).
#include "plan/decision_log.hpp"

#include <algorithm>
#include <stdexcept>

#include "plan/candidates.hpp"

namespace tileforge::plan {

void DecisionLog::add(std::string_view layer, std::string decision, std::string reason, std::string effect) {
  if (std::find(std::begin(kLayers), std::end(kLayers), layer) == std::end(kLayers)) {
    throw std::invalid_argument("decision log: '" + std::string(layer) + "' is not one of the four layers");
  }
  entries_.push_back({std::string(layer), std::move(decision), std::move(reason), std::move(effect)});
}

std::vector<const Decision*> DecisionLog::in_layer(std::string_view layer) const {
  std::vector<const Decision*> v;
  for (const Decision& d : entries_)
    if (d.layer == layer) v.push_back(&d);
  return v;
}

}  // namespace tileforge::plan
