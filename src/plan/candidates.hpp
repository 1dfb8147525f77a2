// Candidate configs of a kernel family for a problem on a chip profile (no Device needed): the family's declared
// space, the values the planner tries, pins, and an enumeration that keeps every rejected config with its reason.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "hw/hw_profile.hpp"

namespace tileforge::plan {

using Pins = std::vector<std::pair<std::string, int64_t>>;

// The layers' names, in order (backend.hpp's Layer).
inline constexpr const std::string_view (&kLayers)[4] = kLayerNames;

// What the planner tries for one family: either the Cartesian product of `grid` (one list of values per
// declared parameter, in declaration order) or, when `list` is non-empty, exactly those configs.
struct FamilySpace {
  ParamSpace space;                         // declarations and constraints, as the backend declares them
  std::vector<std::vector<int64_t>> grid;   // product mode
  std::vector<Config> list;                 // list mode
  // List mode: every listed config is legal as listed (the family built them from its own declarations and
  // constraints), so that without pins the planner prices them without checking each (a test holds the family to
  // it); false: each is checked.
  bool list_legal = false;
  // List mode without a map per config (in place of `list`, for a family that lists hundreds of configs for
  // dispatch, where building and freeing their maps was a fifth of a new shape's time): configs of `flat_family`
  // with the parameters `flat_names`, in a Config's own (sorted) order, flat_names.size() values per config in
  // `flat_values`. for_each_legal_listed reads them; listed_configs() builds them.
  std::string flat_family;
  std::vector<std::string> flat_names;
  std::vector<int64_t> flat_values;
  bool listed() const { return !list.empty() || !flat_values.empty(); }
  std::optional<Config> reference;          // the backend's own pick without a cost model (heuristic/analytic)
  std::string reference_name;               // the family's words for it ("the ... heuristic")
  std::vector<std::string> reference_reasons;
  std::string coverage;                     // "the full space", "a grid around the analytic choice: ..."
  // Product mode, for a family whose cost_bound() is worth asking: every declared parameter once, in the order
  // dispatch's bound search sets them (those that decide most of the price first). Empty: no bound search.
  std::vector<std::string> search_order;
  // Parameters of search_order whose value alone changes no term of cost_bound() (it reads them only once a later
  // one is set too): the search sets them without asking, each partial config keeping its parent's bound. A name
  // declared here wrongly costs pruning, never the choice.
  std::vector<std::string> bound_skips;
};

// A family space that tries every combination of the declared values ("the full space: ..."), with the family's own
// pick and the words for it.
FamilySpace full_product(ParamSpace space, std::optional<Config> reference, std::string reference_name,
                         std::string reference_reason);

// The rejected configs of one enumeration: every one counted under its reason, the first `keep` of each reason
// stored compactly (a GPU family's full space can have ~10M combinations: storing them all takes over a gigabyte).
struct RejectedSet {
  std::string family;
  std::vector<std::string> names;    // parameter names, in declaration order
  std::size_t keep = SIZE_MAX;       // configs stored per reason; the rest are only counted
  std::vector<int64_t> values;       // names.size() values per stored config
  std::vector<uint32_t> reason;      // index into `reasons`, per stored config
  std::vector<std::string> reasons;  // constraint texts (or "NAME = V is not legal ...")
  std::vector<Layer> reason_layers;  // the layer of each reason: its constraint's, or the parameter's
  std::vector<std::size_t> counts;   // per reason: the configs it rejected, stored or not

  std::size_t size() const;                            // every rejected config: the sum of `counts`
  std::size_t stored() const { return reason.size(); } // those kept, in enumeration order
  Config config(std::size_t i) const;                  // the i-th stored config
  // A config given by its values of `names`, in that order, rejected for `why`.
  void add(const int64_t* config_values, const std::string& why, Layer layer);
  // The index of a reason in `reasons` (added when new), and a config added under that index: for an enumeration
  // that rejects millions of configs under a few dozen reasons and would otherwise compare their texts each time.
  std::size_t reason_index(const std::string& why, Layer layer);
  void add(const int64_t* config_values, std::size_t reason_index);
};

struct Enumeration {
  std::vector<Config> legal;
  RejectedSet rejected;
  std::size_t combinations = 0;  // legal + rejected
};

// Applies the pins to the space (an unknown name or a value outside the declared ones is refused with the allowed
// ones), then checks every combination: legal ones are kept, every other one is kept with the first constraint it
// violates. When pins leave no legal config, the result is an error naming the constraint that rules them out.
// At most `keep_per_reason` rejected configs of each reason are stored; all are counted.
Expected<Enumeration> enumerate_candidates(const FamilySpace& family, const Pins& pins,
                                           std::string_view profile_name, std::size_t keep_per_reason = SIZE_MAX);
// The same, but the legal configs of a listed space are moved out of `family.list` rather than copied (those entries
// are left empty, the rest of `family` untouched): for a caller that does not look at the list again. With
// `record_rejected` false, the rejected configs are counted but not listed (`rejected` stays empty), and a product
// space is walked parameter by parameter, a constraint that declares what it reads (Constraint::reads) checked as
// soon as those are set: the same legal configs in the same order, far fewer checks. When nothing is legal, the
// full enumeration runs, so that the error or the plan names the constraints.
Expected<Enumeration> enumerate_candidates_moving(FamilySpace& family, const Pins& pins,
                                                  std::string_view profile_name, bool record_rejected = true,
                                                  std::size_t keep_per_reason = SIZE_MAX);

// Calls `legal` with each config of a listed space (`family.list`, the pins set in it in place) that is legal, in
// the list's order, repeats included: for a caller that keeps only the best one, which a repeat never changes, and
// needs no index of the distinct configs. The pins must name declared parameters and values. Returns the number of
// listed configs.
std::size_t for_each_legal_listed(FamilySpace& family, const Pins& pins,
                                  const std::function<void(const Config&)>& legal);
// A listed space's configs, built from its flat list where it has one.
std::vector<Config> listed_configs(const FamilySpace& family);

// What a config violates first: a constraint, or a value its parameter does not declare.
struct Violation {
  std::string text;
  Layer layer;
};
// The first constraint (or undeclared value) a config violates, or nothing when it is legal.
std::optional<Violation> first_violation(const ParamSpace& space, const Config& config);

// The layer named `name` ("data scheduling"); data scheduling when the name is not one of the four.
Layer layer_named(std::string_view name);

}  // namespace tileforge::plan
