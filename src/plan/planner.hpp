// The planner: for a Problem on a chip profile (present or not), the analysis, every legal config of the family
// that serves the chip ranked by the cost model, every rejected one with its reason, and the decision log.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/expected.hpp"
#include "hw/hw_profile.hpp"
#include "plan/analysis.hpp"
#include "plan/candidates.hpp"
#include "plan/cost_model.hpp"
#include "plan/decision_log.hpp"
#include "plan/kernel_family.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::plan {

struct PlanOptions {
  Pins pins;                    // --set NAME=VALUE: only candidates with these values
  // Options::deterministic: only configs whose results are bit-identical from run to run (the family's determinism()
  // constraint); false (--nondeterministic) lets float-atomic sums compete.
  bool deterministic = true;
  int top_n = 5;                // alternatives to show after the choice
  std::string family;           // empty or "auto": the registered family of highest preference that fits the profile
  int threads = 0;              // CPU threads the plan is for; 0 = all cores of the profile
  // Names of the profiles of the devices that are present (the host CPU's, a detected GPU's). A plan for any
  // other profile is a prediction and is labelled so.
  std::vector<std::string> running_profiles;
  // Dispatch wants only the ranked list's head and the reference rank: skip the sort, the explanation's neighbour
  // search and everything else only the explanation or printing uses (the roofline, path and wave analyses, the
  // binding limit, the decision log). `rejected`, `reference` and `reference_rank` are those of a full plan;
  // `ranked` holds the same candidates with the choice first and the reference at its rank, the rest unordered.
  bool pick_only = false;
  // With pick_only, dispatch's own case: the rejected configs are counted, not listed (`rejected` empty), so that the
  // product of a large GPU space is walked with its constraints checked as early as they can be (candidates.hpp).
  // The choice, the candidates, their prices, the reference and its rank are those of a full plan; the candidates'
  // cost notes may be left out (CostScratch::notes).
  bool legal_only = false;
  // With pick_only and legal_only: only the choice, a full plan's. A listed space's legal configs are priced as they
  // come (no index of the distinct ones, no list of candidates); a product space whose family bounds its cost
  // (FamilySpace::search_order) is searched by that bound, which prices few of its legal configs. Then `ranked`
  // holds the choice alone (`choice_only`), `reference_rank` is 1 when the choice is the backend's own pick and 0
  // otherwise (its rank is not known), `combinations` counts the list or the product, and `priced` says how many
  // configs were priced.
  bool best_only = false;
  // Rejected configs stored per reason (`Plan::rejected`); every one is counted. The explanation shows a few
  // examples of each reason, --all-rejected lists them all (SIZE_MAX): a GPU family's full space can reject ~10M.
  std::size_t rejected_examples = 3;
};

struct Candidate {
  Config config;
  Cost cost;
  int rank = 0;  // 1 = the choice
};

// A config one step away from the choice in one parameter: why it was not chosen.
struct Neighbour {
  std::string param;
  int64_t value = 0;
  bool legal = false;
  std::string constraint;  // the constraint it violates, when rejected
  std::string detail;      // the constraint with its numbers ("needs 196608 B > 166912 B of shared memory ...")
  double seconds = 0;      // predicted; for a rejected one, what it would take were it allowed
  double delta = 0;        // seconds / chosen - 1
};

// Which family serves a profile, or why none does and what would.
struct FamilyChoice {
  std::string family;  // empty when none
  std::string reason;
  std::string needed;  // when none
};
FamilyChoice choose_family(const hw::HwProfile& profile);
// The same for one problem: when the family of highest preference that fits refuses the problem (supports()), the
// next one that fits and takes it; when none does, the first one (and the plan states its refusal).
FamilyChoice choose_family(const hw::HwProfile& profile, const Problem& problem);

struct Plan {
  Problem problem;  // normalized
  hw::HwProfile profile;
  bool prediction = true;  // the profile is not one of the running devices
  std::string label;       // "prediction (profile a100-sxm is not the running device)" or "running device (...)"
  Roofline roofline;
  PathAnalysis paths;
  WaveAnalysis nominal_waves;  // 128x128 tiles over the cores: the shape of the work before any family is chosen

  bool served = false;
  std::string unserved;  // why no config was chosen
  std::string needed;    // what would serve it
  std::string backend;   // "cuda", "cpu"
  std::string family;
  std::string family_reason;
  Pins pins;
  int threads = 0;
  int top_n = 5;

  std::string coverage;            // what was enumerated
  std::size_t combinations = 0;    // legal + rejected
  std::size_t priced = 0;          // configs the cost model priced: every legal one (a bound search prices fewer)
  bool choice_only = false;        // PlanOptions::best_only: `ranked` holds the choice alone
  std::vector<Candidate> ranked;   // every legal config, best first
  RejectedSet rejected;
  std::optional<Config> reference;  // the backend's own pick without the cost model
  std::string reference_name;
  std::vector<std::string> reference_reasons;
  int reference_rank = 0;           // its rank among `ranked` (0: absent or not legal)
  std::vector<Neighbour> neighbours;
  std::string binding;              // the limit that bound the choice, one line
  std::vector<std::string> limits;  // each resource limit the choice sits against, one line each
  DecisionLog log;

  const Candidate* choice() const { return ranked.empty() ? nullptr : &ranked.front(); }
};

// Plans `problem` for `profile`. Refused (invalid_argument) for an invalid problem, an unknown family, a family
// that cannot plan for this profile, or pins that are unknown, illegal, or leave no legal config (the message
// names the constraint). A chip that no backend serves, or a precision the family does not take, is not an error:
// the plan has served = false, says why and what would be needed, and still carries the analysis.
Expected<Plan> make_plan(const Problem& problem, const hw::HwProfile& profile, const PlanOptions& options = {});

}  // namespace tileforge::plan
