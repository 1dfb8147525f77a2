// What every family's cost model shares: how its terms combine into one prediction (see cost_model.hpp).
#include "plan/cost_model.hpp"

#include <algorithm>
#include <limits>

#include "plan/cost_constants.hpp"

namespace tileforge::plan {
using namespace constants;

// body = the largest term + kOverlapLeak x the streams other than the largest stream.
double combine_terms(Cost& cost, const std::vector<CostTerm>& terms) {
  double top = -1, top_stream = 0, streams = 0;
  for (const CostTerm& t : terms) {
    if (t.seconds > top) {
      top = t.seconds;
      cost.bound = t.name;
    }
    if (t.stream) {
      streams += t.seconds;
      top_stream = std::max(top_stream, t.seconds);
    }
  }
  const double binding = std::max(0.0, top);
  cost.body_s = binding + kOverlapLeak * (streams - top_stream);
  return binding;
}

std::optional<std::string> first_missing(std::initializer_list<RequiredField> needed) {
  for (const RequiredField& r : needed) {
    if (!r.present) return "the profile records no " + std::string(r.field);
  }
  return std::nullopt;
}

Cost invalid_cost(std::string why) {
  Cost c;
  c.valid = false;
  c.seconds = std::numeric_limits<double>::infinity();
  c.notes.push_back(std::move(why));
  return c;
}

}  // namespace tileforge::plan
