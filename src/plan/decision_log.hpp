// The decision log: every choice the planner made, under the layer of DESIGN.md it belongs to (hardware mapping,
// data scheduling, compute pipeline, parameter adaptation), with its reason and its predicted effect.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tileforge::plan {

struct Decision {
  std::string layer;     // one of kLayers (candidates.hpp)
  std::string decision;  // "STAGES=3"
  std::string reason;    // why, with the numbers
  std::string effect;    // what it does to the prediction, or what the alternatives would do
};

class DecisionLog {
 public:
  // Refuses (throws std::invalid_argument) a layer that is not one of the four: the log's groups are fixed.
  void add(std::string_view layer, std::string decision, std::string reason, std::string effect = {});
  const std::vector<Decision>& entries() const { return entries_; }
  // The entries of one layer, in the order they were added.
  std::vector<const Decision*> in_layer(std::string_view layer) const;
  bool empty() const { return entries_.empty(); }

 private:
  std::vector<Decision> entries_;
};

}  // namespace tileforge::plan
