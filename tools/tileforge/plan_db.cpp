// plan's tuning-DB report: the dispatch layer's DB and lookup, and the cost model's prediction of the tuned config.
#include "plan_db.hpp"

#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "db/keys.hpp"
#include "db/record.hpp"
#include "dispatch/dispatch.hpp"
#include "plan/kernel_family.hpp"

namespace tileforge::cli {

Expected<PlanDb> open_plan_db(const db::LocationRequest& request) {
  PlanDb out;
  const bool explicit_path = !request.path.empty();
  auto where = db::resolve_location(request);
  if (!where) {
    // No home folder to find the default DB in: plans need none.
    if (!explicit_path) return out;
    return where.status();
  }
  if (!where->enabled) return out;
  std::error_code ec;
  if (!std::filesystem::exists(where->path, ec)) {
    if (!explicit_path) return out;
    return invalid_argument(fmt::format("--db {}: no such file (plan reads a tuning DB and never creates one; "
                                        "allowed: an existing DB, such as one `tileforge tune` wrote)",
                                        where->path));
  }
  out.db = dispatch::dispatch_db(*where);
  if (!out.db->store) {
    if (explicit_path) return Status(Code::io_error, fmt::format("--db {}: {}", where->path, out.db->note));
    out.db.reset();  // dispatch said why on stderr; the plans stand without the report
  }
  out.path = where->path;
  return out;
}

namespace {

// The record's own shape with the plan's layout and precision: the measurement and the prediction are of one GEMM.
Problem problem_of_record(const plan::Plan& plan, const db::Record& r) {
  Problem p = db::problem_of(r.problem);
  if (p.validate()) return p.normalized();
  return plan.problem;
}

}  // namespace

TunedReport tuned_for(const plan::Plan& plan, const db::DispatchDb& db, const db::Fingerprint& fingerprint,
                      bool deterministic) {
  TunedReport out;
  const plan::KernelFamily* family = plan::find_family(plan.family);
  if (!plan.served || !family) {
    out.reason = plan.served ? fmt::format("family {} is not registered", plan.family)
                             : "the plan chose no family, so no record applies";
    return out;
  }
  // The request dispatch makes for this problem: the family's current version, records its space refuses skipped,
  // under the plan's determinism policy.
  ParamSpace space = family->candidates(plan.problem, plan.profile, plan.threads).space;
  plan::with_determinism(space, deterministic);
  db::LookupResult hit =
      db::lookup_or_plan(db, db::lookup_request(fingerprint, plan.backend, plan.problem, std::move(space), deterministic));
  out.reason = hit.reason;
  if (!hit.record) return out;
  out.source = std::string(hit.config_source());
  const db::Record& r = *hit.record;
  auto scratch = family->make_scratch();
  out.predicted_s = family->cost(problem_of_record(plan, r), plan.profile, r.config, plan.threads, scratch.get()).seconds;
  for (const plan::Candidate& c : plan.ranked) {
    if (c.config == r.config) out.rank = c.rank;
  }
  out.same_as_choice = plan.choice() && plan.choice()->config == r.config;
  out.record = r;
  return out;
}

std::string tuned_text(const TunedReport& t) {
  if (!t.record) return fmt::format("  tuning DB: no tuned record ({})\n", t.reason);
  const db::Record& r = *t.record;
  const double predicted_ms = t.predicted_s * 1e3;
  std::string out = fmt::format("  tuning DB: {} record #{} for {}, measured {}: {}\n", t.source, r.id,
                                r.problem.shape(), r.created_at, r.config.describe());
  out += fmt::format("    measured {:.4g} ms median ({:.4g} TFLOP/s); predicted {:.4g} ms: measured/predicted {:.2f}\n",
                     r.time.median_ms, r.tflops, predicted_ms, predicted_ms > 0 ? r.time.median_ms / predicted_ms : 0.0);
  out += t.same_as_choice ? "    the planner's choice is this config\n"
         : t.rank > 0     ? fmt::format("    the planner's choice differs (this config ranks {})\n", t.rank)
                          : "    the planner's choice differs (this config is not among its candidates)\n";
  return out;
}

nlohmann::json tuned_json(const TunedReport& t) {
  if (!t.record) return {{"found", false}, {"reason", t.reason}};
  const db::Record& r = *t.record;
  const double predicted_ms = t.predicted_s * 1e3;
  nlohmann::json config = nlohmann::json::parse(db::config_to_json(r.config));
  return {{"found", true},
          {"source", t.source},
          {"reason", t.reason},
          {"record_id", r.id},
          {"shape", r.problem.shape()},
          {"config", config},
          {"median_ms", r.time.median_ms},
          {"tflops", r.tflops},
          {"created_at", r.created_at},
          {"predicted_ms", predicted_ms},
          {"measured_over_predicted", predicted_ms > 0 ? nlohmann::json(r.time.median_ms / predicted_ms) : nullptr},
          {"rank", t.rank > 0 ? nlohmann::json(t.rank) : nullptr},
          {"same_as_choice", t.same_as_choice}};
}

}  // namespace tileforge::cli
