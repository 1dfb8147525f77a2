// Dispatch: pins on top of the tuning DB's record, the planner's pick or the heuristic; DB and plans cached per process.
#include "dispatch/dispatch.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/planner.hpp"
#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
#include "hw/cuda_device.hpp"
#include "jit/nvrtc.hpp"
#endif

namespace tileforge::dispatch {
namespace {

// ---- the DB, once per process and path ------------------------------------------------------------------------

struct DbEntry {
  std::shared_ptr<const db::DispatchDb> db;
  bool missing = false;  // no file (or an empty one) yet: looked for again on the next call
};

std::mutex& db_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, DbEntry>& db_cache() {
  static std::map<std::string, DbEntry> c;
  return c;
}

// The store's refusal without the "tuning DB PATH" it starts with and the advice it ends with, which the warning
// says in its own words.
std::string refusal_reason(std::string note, const std::string& path) {
  const std::string prefix = "tuning DB " + path;
  if (note.starts_with(prefix)) {
    note.erase(0, prefix.size());
    while (!note.empty() && (note.front() == ' ' || note.front() == ':')) note.erase(0, 1);
  }
  if (auto advice = note.find("; move it away"); advice != std::string::npos) note.erase(advice);
  return note;
}

// ---- plans, once per process and problem ---------------------------------------------------------------------

// What dispatch keeps of a plan: the pick, or why there is none.
struct PlanPick {
  std::optional<Config> config;
  // "FAMILY pick (priced 58 of 2064384 combinations) on h200, predicted 0.0123 ms (compute-bound)"
  std::string summary;
  std::string why_not;  // when there is no pick
};

std::atomic<uint64_t> g_plans_made{0};

// The problem's part of a plan's key, with the profile, family, threads and pins the plan is for.
std::string plan_key(const Problem& p, const hw::HwProfile& profile, const std::string& family, int threads,
                     bool deterministic, const std::vector<std::pair<std::string, int64_t>>& pins) {
  std::string key = fmt::format("{} | {} {} {} {} t{}{}", problem_key(p), profile.name, profile.display_name,
                                profile.arch, family, threads, deterministic ? "" : " nondeterministic");
  for (const auto& [name, value] : pins) key += fmt::format(" {}={}", name, value);
  return key;
}

PlanPick plan_pick(const Problem& p, const Device& device, const std::string& family, bool deterministic,
                   const std::vector<std::pair<std::string, int64_t>>& pins) {
  static std::mutex mutex;
  static std::map<std::string, PlanPick> cache;
  const int threads = device.kind == "cpu" ? effective_threads(device) : 0;
  const std::string key = plan_key(p, device.profile, family, threads, deterministic, pins);
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // Planned outside the lock: planning a large GPU family space takes a second, and other shapes need not wait. Two
  // threads planning one shape at once both get the same (deterministic) answer.
  PlanPick pick;
  plan::PlanOptions o;
  o.family = family;
  o.pins = pins;
  o.deterministic = deterministic;
  o.threads = threads;
  o.top_n = 0;
  // Only the choice, the ranked list's size and the backend's own pick's rank are read below: no rejection list, and
  // for a family that bounds its cost, a bound search for the choice alone (PlanOptions::best_only).
  o.pick_only = true;
  o.legal_only = true;
  o.best_only = true;
  o.running_profiles = {device.profile.name};
  ++g_plans_made;
  auto made = plan::make_plan(p, device.profile, o);
  if (!made) {
    pick.why_not = fmt::format("the planner refused: {}", made.status().message());
  } else if (!made->served || !made->choice()) {
    pick.why_not = fmt::format("the planner has no {} config: {}", family, made->unserved);
  } else {
    const plan::Candidate& c = *made->choice();
    pick.config = c.config;
    // A plan of the choice alone knows how many configs it priced, not how many are legal.
    const std::string among = made->choice_only
                                  ? fmt::format("(priced {} of {} combinations)", made->priced, made->combinations)
                                  : fmt::format("of {} legal configs", made->ranked.size());
    pick.summary = fmt::format("{} pick {} on {}, predicted {:.4g} ms ({}-bound)", family, among,
                               device.profile.name, c.cost.seconds * 1e3, c.cost.bound.empty() ? "?" : c.cost.bound);
    // The backend's own pick (the analytic model on CPUs, measured tile efficiencies on GPUs) stays unless the
    // planner predicts its first choice faster. Any predicted gain counts: the rule asked for 10% while the cost
    // model was being calibrated; since then the planner's pick has measured as fast as the tuned best (median
    // 1.000 over the H200's public suite and the CPU suite) and never slower than the backend's own pick in the
    // same process (docs/PERF-LOG.md). Equal predictions keep the backend's own pick.
    if (made->reference_rank > 0 && std::size_t(made->reference_rank) <= made->ranked.size()) {
      const plan::Candidate& ref = made->ranked[std::size_t(made->reference_rank) - 1];
      if (ref.cost.seconds <= c.cost.seconds) {
        pick.config = ref.config;
        const std::string rank = made->choice_only ? "the model's first choice too"
                                                    : fmt::format("rank {} of {}", made->reference_rank,
                                                                  made->ranked.size());
        pick.summary = fmt::format("{} keeps the backend's own pick ({}, predicted {:.4g} ms): the model "
                                   "predicts its first choice no faster",
                                   family, rank, ref.cost.seconds * 1e3);
      }
    }
  }
  std::lock_guard lock(mutex);
  return cache.emplace(key, pick).first->second;
}

bool planner_serves(const std::string& family) { return plan::find_family(family) != nullptr; }

std::string pins_text(const std::vector<std::pair<std::string, int64_t>>& pins) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : pins) parts.push_back(fmt::format("{}={}", name, value));
  return fmt::format("{}", fmt::join(parts, " "));
}

// Whether every pin names a declared parameter with a legal value (then only a constraint can refuse them).
bool pins_declared(const ParamSpace& space, const std::vector<std::pair<std::string, int64_t>>& pins) {
  for (const auto& [name, value] : pins) {
    const ParamDecl* decl = space.find(name);
    if (!decl || std::find(decl->values.begin(), decl->values.end(), value) == decl->values.end()) return false;
  }
  return true;
}

std::string strip_planner_prefix(const std::string& reason) {
  constexpr std::string_view prefix = "planner: ";
  return reason.starts_with(prefix) ? reason.substr(prefix.size()) : reason;
}

}  // namespace

std::string problem_key(const Problem& p) {
  return fmt::format("{}x{}x{}*{} {}/{}/{} {} ld {}/{}/{} st {}/{}/{} beta{}", p.m, p.n, p.k, p.batch,
                     to_string(p.precision.input), to_string(p.precision.output), to_string(p.precision.accum),
                     to_string(p.layout), p.lda, p.ldb, p.ldc, p.stride_a, p.stride_b, p.stride_c,
                     p.beta != 0.0 ? 1 : 0);
}

// ---- fingerprint and versions ---------------------------------------------------------------------------------

db::Fingerprint running_fingerprint(const Device& device) {
  std::string driver, toolkit;
  if (device.kind == "cuda") {
#ifdef TILEFORGE_HAVE_CUDA_TOOLKIT
    // Queried once per ordinal: the driver does not change under a running process.
    static std::mutex mutex;
    static std::map<int, std::pair<std::string, std::string>> versions;
    std::lock_guard lock(mutex);
    auto it = versions.find(device.ordinal);
    if (it == versions.end()) {
      std::string d, t;
      if (auto props = cuda::query_device(device.ordinal); props && props->driver_version > 0) {
        d = fmt::format("{}.{}", props->driver_version / 1000, (props->driver_version % 1000) / 10);
      }
      if (auto nvrtc = jit::Nvrtc::get(); nvrtc) t = fmt::format("{}.{}", (*nvrtc)->major(), (*nvrtc)->minor());
      it = versions.emplace(device.ordinal, std::make_pair(d, t)).first;
    }
    driver = it->second.first;
    toolkit = it->second.second;
#endif
  } else {
    toolkit = compiler_id();  // the CPU kernels are compiled into this library
  }
  return db::fingerprint_of(device, std::move(driver), std::move(toolkit));
}

std::string compiler_id() {
#if defined(__clang__)
  return fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("GNU {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::map<std::string, int64_t> current_family_versions() {
  std::map<std::string, int64_t> out;
  for (const plan::KernelFamily* f : plan::families()) out[std::string(f->name())] = f->version();
  return out;
}

// ---- the DB ----------------------------------------------------------------------------------------------------

std::shared_ptr<const db::DispatchDb> dispatch_db(const db::Location& location) {
  if (!location.enabled) {
    auto off = std::make_shared<db::DispatchDb>();
    off->note = fmt::format("tuning DB disabled ({})", location.origin);
    return off;
  }
  const std::string& path = location.path;
  std::lock_guard lock(db_mutex());
  auto& cache = db_cache();
  if (auto it = cache.find(path); it != cache.end()) {
    std::error_code ec;
    if (!it->second.missing || !std::filesystem::exists(path, ec)) return it->second.db;
  }
  auto entry = std::make_shared<db::DispatchDb>();
  db::OpenOptions o;
  o.access = db::Access::read_only;  // dispatch never creates, migrates or writes the file
  auto store = db::Store::open(path, o);
  bool missing = false;
  if (store) {
    entry->store = std::move(store).value();
  } else {
    entry->note = store.status().message();
    // Not there yet, or empty: tune writes one; nothing to warn about.
    missing = store.status().code() == Code::not_available;
    if (!missing) {
      std::fprintf(stderr,
                   "tileforge: warning: tuning DB %s is unreadable (%s); planning instead; pass --no-db or move the "
                   "file\n",
                   path.c_str(), refusal_reason(entry->note, path).c_str());
    }
  }
  // A refused file is cached too: the warning is said once, and the file is not re-checked on every GEMM.
  cache[path] = DbEntry{entry, missing};
  return entry;
}

uint64_t dispatch_plans_made() { return g_plans_made.load(); }

// ---- the choice ------------------------------------------------------------------------------------------------

Expected<Choice> choose_config(const Problem& problem, const Device& device, Backend& ours,
                               const DispatchOptions& options) {
  if (Status s = problem.validate(); !s) return s;
  const Problem p = problem.normalized();
  ParamSpace space = ours.space(p, device);
  // Under the deterministic policy the space refuses what would vary from run to run: DB records, the planner's
  // candidates and pins alike.
  plan::with_determinism(space, options.deterministic);

  // 1. The tuning DB on this device's fingerprint; the backend's space vetoes records illegal here.
  Choice choice;
  std::string db_reason;
  {
    std::shared_ptr<const db::DispatchDb> db;
    if (auto location = db::resolve_location(options.db); location) {
      db = dispatch_db(*location);
    } else {
      auto none = std::make_shared<db::DispatchDb>();
      none->note = location.status().message();
      db = none;
    }
    db::LookupResult hit =
        db::lookup_or_plan(*db, db::lookup_request(running_fingerprint(device), std::string(ours.name()), p, space,
                                                   options.deterministic));
    choice.rejected = hit.rejected;
    // A record measured noisy or on a busy host may be far from what its config does here: the planner's
    // prediction is the better guess, and the reason says which record was passed over and why. Records without
    // quartiles or host load (schema v1) count as clean.
    const db::Quality quality = hit.record ? hit.record->time.quality() : db::Quality{};
    if (hit.record && quality.clean()) {
      choice.config = hit.record->config;
      choice.source = std::string(hit.config_source());
      choice.reason = hit.reason;
    } else if (hit.record) {
      db_reason = fmt::format("the tuning DB's {} record #{} for {} was {}: passed over", hit.config_source(),
                              hit.record->id, hit.record->problem.shape(), quality.why);
    } else {
      db_reason = strip_planner_prefix(hit.reason);
    }
  }

  // 2. The planner's pick for the backend's family; 3. else the backend's heuristic.
  if (choice.source.empty()) {
    std::string why_not_planner;
    if (!options.use_planner) {
      why_not_planner = "planner not used";
    } else if (!planner_serves(space.family)) {
      why_not_planner = fmt::format("the planner does not serve family '{}'", space.family);
    } else {
      PlanPick pick = plan_pick(p, device, space.family, options.deterministic, {});
      if (pick.config) {
        if (Status s = space.check(*pick.config); s) {
          choice.config = *pick.config;
          choice.source = "planner";
          choice.reason = fmt::format("planner: {} ({})", pick.summary, db_reason);
        } else {
          why_not_planner = fmt::format("the planner's pick is not legal for {} here: {}", ours.name(), s.message());
        }
      } else {
        why_not_planner = pick.why_not;
      }
    }
    if (choice.source.empty()) {
      auto h = ours.heuristic(p, device);
      if (!h) return h.status();
      choice.config = *h;
      choice.source = "heuristic";
      choice.reason = fmt::format("heuristic: {}'s own choice; {} ({})", ours.name(), why_not_planner, db_reason);
    }
  }

  // Pins on top of whatever was chosen.
  if (!options.pins.empty()) {
    const std::string pinned_text = pins_text(options.pins);
    auto pinned = space.pin(choice.config, options.pins);
    if (pinned) {
      choice.reason = fmt::format("pinned {} on the {} config ({})", pinned_text, choice.source, choice.reason);
      choice.config = *pinned;
      choice.source = "pinned";
      return choice;
    }
    // Legal values that break a constraint of this base: the planner's best config that has them, if any.
    if (options.use_planner && planner_serves(space.family) && pins_declared(space, options.pins)) {
      PlanPick pick = plan_pick(p, device, space.family, options.deterministic, options.pins);
      if (pick.config && space.check(*pick.config)) {
        choice.reason = fmt::format("pinned {}: the planner's best config with these values ({}), since the {} "
                                    "config with them breaks a constraint ({})",
                                    pinned_text, pick.summary, choice.source, pinned.status().message());
        choice.config = *pick.config;
        choice.source = "pinned";
        return choice;
      }
    }
    return pinned.status();
  }
  return choice;
}

}  // namespace tileforge::dispatch
