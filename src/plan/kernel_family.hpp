// The kernel-family interface: what a family (one GPU kernel template, one CPU ISA's micro-kernels) tells the planner, the tuner and dispatch about
// itself, and the registry they iterate. Families live in their backend's folder and register themselves; nothing
// above this header names one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/backend.hpp"
#include "core/expected.hpp"
#include "hw/hw_profile.hpp"
#include "plan/candidates.hpp"
#include "plan/cost_model.hpp"
#include "tileforge/tileforge.hpp"

namespace tileforge::jit {
class KernelCache;
}

namespace tileforge::plan {

struct Plan;

// Whether a family takes the problem (its precision policy and size limits): empty when it does, else why not and
// what would.
struct SupportGap {
  std::string why;
  std::string needed;
  bool empty() const { return why.empty(); }
};

// Whether a family plans for a chip record, and the words for each outcome.
struct FamilyFit {
  bool ok = false;
  // ok: why this family serves the chip (which of its instructions the chip has).
  // not ok and `relevant`: why it does not, said to a user who asked for no family in particular.
  std::string reason;
  // not ok: the error for an explicit request of this family (`--family NAME`).
  std::string refusal;
  // not ok and `relevant`: what would serve the chip.
  std::string needed;
  // not ok: the chip is of the kind this family is for (an NVIDIA GPU for a CUDA family), so its reason is the
  // one to give when no family fits.
  bool relevant = false;

  static FamilyFit yes(std::string why) { return {true, std::move(why), {}, {}, true}; }
};

// A family's resident cost-model memo for one (problem, profile): the planner creates one per plan and passes it
// to every cost() call of that plan.
class CostScratch {
 public:
  virtual ~CostScratch() = default;
  // False when the plan reads only each candidate's price and binding limit (dispatch's plans): a family may then
  // leave out the text of its cost notes, which formatting would make most of a price's time.
  bool notes = true;
};

// What an ahead-of-time compile of one config gave (families compiled at run time only).
struct AheadCompile {
  bool cache_hit = false;
  int registers = 0;
};


// A peer made of this family's code under another tuner's choice of config (KernelFamily::config_peers).
struct ConfigPeer {
  std::string name;             // the peer's name in reports ("triton-autotune")
  std::string what;             // whose list, and how that tuner chooses from it
  std::vector<Config> configs;  // the list's configs the family runs for the problem, in the list's order
  int listed = 0;               // configs on the list, run or not
};

class KernelFamily {
 public:
  virtual ~KernelFamily() = default;

  // The name in Configs, the DB, bench JSON and --family.
  virtual std::string_view name() const = 0;
  // Tuned records of another version are never dispatched (docs/TUNING-DB.md).
  virtual int version() const = 0;
  // The backend that runs it ("cuda", "cpu").
  virtual std::string_view backend() const = 0;
  // Among the families that fit a chip, the planner takes the one of highest preference; listings go in this order.
  virtual int preference() const = 0;
  // A specialist takes a narrow class of problems (few-row GEMMs) where it beats the chip's general family: it is
  // chosen for the problems it takes and never named as the chip's family.
  virtual bool specialist() const { return false; }
  // Whether the family's plans carry a CPU thread count (the plan's `threads`).
  virtual bool plans_threads() const { return false; }
  // The word for the phases no stream overlaps, in the plan's cost line ("fill" for GPU prologues, "packing").
  virtual std::string_view fill_word() const { return "fill"; }

  virtual FamilyFit fit(const hw::HwProfile& profile) const = 0;
  // Whether its kernels run on this device as built (a CPU family's instructions on this host's CPU): the planner
  // plans for any chip record; a backend runs only what this says yes to.
  virtual Support runs_on(const Device& device) const { return Support::yes(); }
  // Whether the family takes the problem (precision policy, size limits): empty when it does.
  virtual SupportGap supports(const Problem& problem) const = 0;
  // A specialist that takes a problem ranks above the chip's general family unless this says why it yields to it
  // there (its measured lead depends on what the general family can do on the chip): empty when it leads.
  virtual std::string yields(const hw::HwProfile& profile, const Problem& problem) const { return {}; }
  // The declared space, the values the planner tries, and the family's own pick without a cost model.
  // `threads` > 0 for families that plan threads.
  virtual FamilySpace candidates(const Problem& problem, const hw::HwProfile& profile, int threads) const = 0;
  // The candidates of a plan of the choice alone (PlanOptions::best_only): candidates(), or fewer where listing
  // configs its constraints reject costs the family time: every legal config of candidates() stays, in its order.
  virtual FamilySpace choice_candidates(const Problem& problem, const hw::HwProfile& profile, int threads) const {
    return candidates(problem, profile, threads);
  }

  // Predicted time of any config, legal or not (the log says what a rejected neighbour would have gained).
  virtual std::unique_ptr<CostScratch> make_scratch() const { return nullptr; }
  virtual Cost cost(const Problem& problem, const hw::HwProfile& profile, const Config& config, int threads,
                    CostScratch* scratch) const = 0;
  // A lower bound on cost().seconds of every config that holds the values of `partial` (the parameters it lacks
  // take any value): dispatch's bound search (FamilySpace::search_order) skips every completion of a partial config
  // whose bound exceeds the best price found so far, so it must never exceed a completion's price. Once the bound
  // is above `enough` it may stop refining (a costly term left out still leaves a lower bound). 0: no bound.
  virtual double cost_bound(const Problem& problem, const hw::HwProfile& profile, const Config& partial, int threads,
                            CostScratch* scratch, double enough) const {
    return 0;
  }
  // Memory a kernel of `config` takes beside A, B and C when it runs `problem` (host memory for a CPU family, device
  // memory for a GPU one: split-K and stream-K workspaces, packed or padded operand copies, an f32 accumulator of a
  // 16-bit C), at most: the memory budget (measure/memory_budget.hpp) counts it before a case allocates anything.
  virtual uint64_t workspace_bytes(const Problem& problem, const hw::HwProfile& profile, const Config& config,
                                   int threads) const {
    return 0;
  }
  // The constraint that keeps a config of `space` bit-identical from run to run, where the space declares configs
  // whose results are not (float atomics summing in arrival order): Options::deterministic, the default, adds it to
  // the space that the planner, dispatch and tune walk (with_determinism), so that no plan, DB record or pin gives
  // such a config. Nothing where every config is deterministic.
  virtual std::optional<Constraint> determinism(const ParamSpace& space) const { return std::nullopt; }
  // A violated constraint with the config's own numbers ("needs 196608 B > 166912 B of shared memory ...").
  virtual std::string violation_detail(std::string_view constraint, const Config& config,
                                       const hw::HwProfile& profile) const;
  // The decision log of a served plan (plan.ranked, neighbours, binding are filled in).
  virtual void explain(Plan& plan) const = 0;

  // Other tuners' fixed config lists for this family's kernel (Triton's autotune over its tutorial's list), which
  // the bench times beside ours as peers (`bench --config-peers`): the best of a list stands for that tuner's pick
  // under tileforge's harness. Each list keeps the configs the family can run for the problem on the chip.
  virtual std::vector<ConfigPeer> config_peers(const Problem& problem, const hw::HwProfile& profile) const {
    return {};
  }

  // Code: one config made runnable for a problem on a device, and run on the caller's buffers. Backends hand a
  // config of a family they do not build in to the family itself.
  virtual Expected<std::unique_ptr<Kernel>> prepare(const Problem& problem, const Config& config,
                                                    const Device& device) const;
  virtual Status run(const Kernel& kernel, const Problem& problem, const GemmArgs& args) const;

  // Whether configs are generated and compiled at run time (then tune compiles its candidates ahead).
  virtual bool compiled_at_run_time() const { return false; }
  // The compiler target for a device (the present GPU's own, or its profile's arch when planning without one).
  virtual Expected<std::string> compile_target(const Device& device) const;
  // Compiles one config into `cache` (nullptr: the shared kernel cache prepare() reads) for the target `arch`.
  virtual Expected<AheadCompile> compile_ahead(const Problem& problem, const Config& config, std::string_view arch,
                                               jit::KernelCache* cache) const;
};

// Options::deterministic on a space: the family's determinism() constraint added to `space` when `deterministic`
// and the family has one (nothing for another family's space or none).
void with_determinism(ParamSpace& space, bool deterministic);
void with_determinism(FamilySpace& space, bool deterministic);
// Whether a config gives the same bits from run to run: its family's determinism() constraint, on a space that
// declares the config's own parameters, holds (true for a family without one, or one not registered).
bool deterministic_config(const Config& config);

// The family a backend runs a problem with on a device: of those registered for `backend` that fit the device's
// profile, run on the device and take the problem, the one of highest preference, passing over a specialist that
// yields the problem on the chip (KernelFamily::yields) where another one takes it; nullptr when none does.
const KernelFamily* family_for(std::string_view backend, const Problem& problem, const Device& device);

// Every registered family, by preference (highest first), then name.
std::vector<const KernelFamily*> families();
// nullptr when no family of that name is registered.
const KernelFamily* find_family(std::string_view name);
// The names of families(), in order.
std::vector<std::string> family_names();
// Adds a family; a second family of the same name is refused (std::logic_error names it).
void register_family(std::unique_ptr<KernelFamily> family);

// Registers a family at load time: `static const FamilyRegistration reg{std::make_unique<MyFamily>()};`.
struct FamilyRegistration {
  explicit FamilyRegistration(std::unique_ptr<KernelFamily> family) { register_family(std::move(family)); }
};

}  // namespace tileforge::plan
