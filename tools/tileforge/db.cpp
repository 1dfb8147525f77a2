// `tileforge db`: its subcommands declared, and the record checks only this build can make installed at start-up.
#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "db/store.hpp"
#include "db_verbs.hpp"
#include "hw/hw.hpp"
#include "options.hpp"
#include "plan/candidates.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cli {
namespace {

using namespace db_verb;

// ---- what this build knows: the tuning DB's checks of names and parameters -------------------------------------

// The device kind of a backend's fingerprints (db::Fingerprint::kind): "cpu" for the CPU backend, "gpu" for every
// accelerator backend. A backend this build has families for but does not compile (cuda without the toolkit) is
// judged by its name.
std::string kind_of_backend(std::string_view backend) {
  if (const Backend* b = find_backend(backend)) return b->device_kind() == "cpu" ? "cpu" : "gpu";
  return backend == "cpu" ? "cpu" : "gpu";
}

// A compiled-in chip profile standing for a record's chip, to check its parameters on: for a GPU, the profile that
// names it (match_names) with the same arch, since its limits (shared memory, registers) decide what is legal; for
// a CPU, one of the same arch (the CPU families' spaces depend on the problem alone). nullptr when none: the
// parameters are then checked only on the running device, by dispatch, before a record is used.
const hw::HwProfile* profile_for(const db::Fingerprint& f) {
  static const std::vector<hw::HwProfile> builtin = [] {
    std::vector<hw::HwProfile> out;
    for (const std::string& name : hw::builtin_profile_names())
      if (auto p = hw::load_profile(name)) out.push_back(std::move(*p));
    return out;
  }();
  for (const hw::HwProfile& p : builtin) {
    if (p.kind != f.kind || p.arch != f.arch) continue;
    if (f.kind == "cpu" || std::find(p.match_names.begin(), p.match_names.end(), f.name) != p.match_names.end()) {
      return &p;
    }
  }
  return nullptr;
}

// A problem of the record's signature: tight leading dimensions rounded up to its alignment class, so that the
// family's space sees the vector widths the record was tuned with (a tight 66-wide f32 problem has class 8, a
// record of class 16 came from a padded one).
Problem problem_for(const db::Signature& s) {
  Problem p = db::problem_of(s);
  const Problem tight = p.normalized();
  auto up = [](int64_t v, int64_t step) { return (v + step - 1) / step * step; };
  const int64_t in_step = std::max<int64_t>(1, s.align / int64_t(size_of(s.input)));
  const int64_t out_step = std::max<int64_t>(1, s.align / int64_t(size_of(s.output)));
  p.lda = up(tight.lda, in_step);
  p.ldb = up(tight.ldb, in_step);
  p.ldc = up(tight.ldc, out_step);
  return p;
}

// The family's space for a problem on a profile, kept: `db list` checks every record, many of one shape.
ParamSpace space_for(const plan::KernelFamily& family, const Problem& p, const hw::HwProfile& profile, int cores) {
  static std::mutex mu;
  static std::map<std::string, ParamSpace> cache;
  const std::string key = fmt::format("{}|{}|{}|{}", family.name(), p.describe(), profile.name, cores);
  std::lock_guard lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, family.candidates(p, profile, family.plans_threads() ? std::max(1, cores) : 0).space)
             .first;
  }
  return it->second;
}

// The checks the DB layer cannot make itself (it sits below the family registry): a backend and device kind this
// build knows, a registered family of that backend that takes the problem, and, for the family's current version
// on a chip with a compiled-in profile, parameters its space allows.
std::optional<db::FieldError> check_against_build(const db::Record& r) {
  std::set<std::string> backends;
  for (const plan::KernelFamily* f : plan::families()) backends.insert(std::string(f->backend()));
  if (!backends.count(r.backend)) {
    return db::FieldError{"backend", fmt::format("'{}' is not a tileforge backend (allowed: {})", r.backend,
                                                 fmt::join(backends, ", "))};
  }
  if (const std::string kind = kind_of_backend(r.backend); r.device.kind != kind) {
    return db::FieldError{"device.kind", fmt::format("is {}; backend {} runs on {} devices", r.device.kind,
                                                     r.backend, kind)};
  }
  const plan::KernelFamily* family = plan::find_family(r.family());
  if (!family) {
    return db::FieldError{"config.family", fmt::format("'{}' is not a kernel family of this build (allowed: {})",
                                                       r.family(), fmt::join(plan::family_names(), ", "))};
  }
  if (family->backend() != r.backend) {
    return db::FieldError{"config.family", fmt::format("{} runs on backend {}, not {}", r.family(),
                                                       family->backend(), r.backend)};
  }
  // Parameters mean what the family's current version declares; a record of another version is stale (never
  // dispatched; `db prune --stale-versions` removes it), not invalid.
  if (r.family_version != family->version()) return std::nullopt;
  const Problem p = problem_for(r.problem);
  if (const plan::SupportGap gap = family->supports(p); !gap.empty()) {
    return db::FieldError{"problem", fmt::format("{} does not take it: {}", r.family(), gap.why)};
  }
  const hw::HwProfile* profile = profile_for(r.device);
  if (!profile) return std::nullopt;  // limits of a chip without a compiled-in profile: checked where it runs
  if (Status legal = space_for(*family, p, *profile, r.device.cores).check(r.config); !legal) {
    return db::FieldError{"config", fmt::format("{} (the {} space for {} on {})", legal.message(), r.family(),
                                                r.problem.shape(), profile->name)};
  }
  return std::nullopt;
}

// NOTE: installed when the tool starts, before any verb opens a DB, so that tune's writes, imports and every read
// (dispatch included) apply the same rules.
const bool kRulesInstalled = [] {
  db::set_record_rules(check_against_build);
  return true;
}();

void add_filter_options(CLI::App& app, FilterArgs& f) {
  // Checked against the DB's names once it is open (a record imported from a newer build may name more).
  app.add_option("--device", f.device, "only records of fingerprints whose hash starts with this")
      ->type_name("HASH")
      ->check(check::non_empty());
  app.add_option("--backend", f.backend, "only records of this backend (cpu, cuda)")
      ->type_name("NAME")
      ->check(check::non_empty());
  app.add_option("--family", f.family, "only records of this kernel family (sm80, cpu-avx2, ...)")
      ->type_name("NAME")
      ->check(check::non_empty());
}

}  // namespace

Command add_db_command(CLI::App& parent) {
  auto args = std::make_shared<Args>();
  CLI::App* app = parent.add_subcommand(
      "db", "List, show, export, import, check and prune the tuning DB's records (the DB: --db PATH, else "
            "$TILEFORGE_DB, else $XDG_CACHE_HOME/tileforge/tune.db or ~/.cache/tileforge/tune.db)");
  // No require_subcommand: a bare `tileforge db` is answered below with the subcommands named.
  app->require_subcommand(0, 1);

  CLI::App* list = app->add_subcommand("list", "The records, one line each, and the device fingerprints they hold");
  add_db_options(*list, args->list.db, false);
  add_filter_options(*list, args->list.filter);
  add_output_options(*list, args->list.output, {"table", "json"}, kOutInsteadOfStdout);

  CLI::App* show = app->add_subcommand("show", "One record with every field");
  show->add_option("ID", args->show.id, "the record's id, as db list shows it")->required();
  add_db_options(*show, args->show.db, false);
  add_output_options(*show, args->show.output, {"text", "json"}, kOutInsteadOfStdout);

  CLI::App* exp = app->add_subcommand(
      "export", "The records as JSON (for db import elsewhere) or as Triton triton.Config lists");
  add_db_options(*exp, args->exp.db, false);
  add_filter_options(*exp, args->exp.filter);
  add_output_options(*exp, args->exp.output, {"json", "triton"}, kOutInsteadOfStdout);

  CLI::App* imp = app->add_subcommand(
      "import", "Merge a JSON export into the DB (created when missing): per key the faster record wins");
  imp->add_option("FILE", args->imp.file, "a file written by db export")->required()->check(check::existing_file());
  add_db_options(*imp, args->imp.db, false);
  imp->add_flag("--force", args->imp.force, "the file's records replace stored ones even when slower");
  add_output_options(*imp, args->imp.output, {"text", "table", "json"}, kOutInsteadOfStdout);

  CLI::App* prune = app->add_subcommand(
      "prune", "Delete records: every criterion given must hold (fingerprints left without records go too)");
  add_db_options(*prune, args->prune.db, false);
  prune->add_option("--older-than", args->prune.older_than,
                    "records created before this UTC time (YYYY-MM-DDTHH:MM:SSZ) or longer ago than an age (30d, 12h)")
      ->type_name("TIME|AGE")
      ->check(check::non_empty());
  prune->add_option("--device", args->prune.device, "records of this fingerprint (its hash, or a unique prefix)")
      ->type_name("HASH")
      ->check(check::non_empty());
  prune->add_flag("--stale-versions", args->prune.stale_versions,
                  "records of a kernel family version older than the one this build runs (never dispatched)");
  prune->add_flag("--invalid", args->prune.invalid,
                  "every record `db check` reports as invalid (alone: no other criterion)");
  prune->add_flag("--dry-run", args->prune.dry_run, "say what would go; delete nothing");
  add_output_options(*prune, args->prune.output, {"text", "table", "json"}, kOutInsteadOfStdout);

  CLI::App* check = app->add_subcommand(
      "check", "Validate every record; list the invalid ones (exit 1 when there are any)");
  add_db_options(*check, args->check.db, false);
  add_output_options(*check, args->check.output, {"text", "json"}, kOutInsteadOfStdout);

  return {app, [args, list, show, exp, imp, prune, check]() -> int {
            if (list->parsed()) return run_list(args->list);
            if (show->parsed()) return run_show(args->show);
            if (exp->parsed()) return run_export(args->exp);
            if (imp->parsed()) return run_import(args->imp);
            if (prune->parsed()) return run_prune(args->prune);
            if (check->parsed()) return run_check(args->check);
            return fail("db", invalid_argument("a subcommand is required (allowed: list, show, export, import, "
                                               "check, prune; run 'tileforge db --help')"));
          }};
}

}  // namespace tileforge::cli
