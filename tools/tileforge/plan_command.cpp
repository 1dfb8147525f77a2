// The `tileforge plan` verb: options to Problems and a profile, make_plan for each, text or JSON out.
#include "plan_command.hpp"

#include <fmt/format.h>

#include "backends/backend.hpp"
#include "core/envelope.hpp"
#include "core/parse.hpp"
#include "db/keys.hpp"
#include "dispatch/dispatch.hpp"
#include "hw/hw.hpp"
#include "hw/hw_profile.hpp"
#include "plan/explain.hpp"
#include "plan/kernel_family.hpp"
#include "plan/planner.hpp"
#include "plan_db.hpp"

namespace tileforge::cli {

using namespace tileforge::plan;

namespace {

constexpr int kExitOk = 0, kExitFailure = 1, kExitUsage = 2;

int fail(std::ostream& err, const Status& s) {
  err << "tileforge plan: error: " << s.message() << "\n";
  return s.code() == Code::invalid_argument || s.code() == Code::io_error ? kExitUsage : kExitFailure;
}

Expected<int64_t> optional_int(const std::string& text, const char* name, int64_t fallback, int64_t min) {
  if (text.empty()) return fallback;
  auto v = parse_int(text, name);
  if (!v) return v.status();
  if (*v < min) return invalid_argument(fmt::format("{} = {} is out of range (allowed: >= {})", name, *v, min));
  return *v;
}

Expected<std::vector<Problem>> problems_of(const PlanCommandOptions& o) {
  if (o.shapes.empty()) return invalid_argument("--shape is required (MxNxK, repeatable)");
  auto input = parse_dtype(o.dtype.empty() ? "f32" : o.dtype, "--dtype");
  if (!input) return input.status();
  auto output = o.out_dtype.empty() ? Expected<DType>(*input) : parse_dtype(o.out_dtype, "--out-dtype");
  if (!output) return output.status();
  auto accum = parse_dtype(o.accum.empty() ? "f32" : o.accum, "--accum");
  if (!accum) return accum.status();
  auto layouts = parse_layouts(o.layout.empty() ? "RR" : o.layout, "--layout");
  if (!layouts) return layouts.status();
  auto lda = optional_int(o.lda, "--lda", 0, 1);
  if (!lda) return lda.status();
  auto ldb = optional_int(o.ldb, "--ldb", 0, 1);
  if (!ldb) return ldb.status();
  auto ldc = optional_int(o.ldc, "--ldc", 0, 1);
  if (!ldc) return ldc.status();
  auto batch = optional_int(o.batch, "--batch", 1, 1);
  if (!batch) return batch.status();
  std::vector<Problem> out;
  for (const std::string& text : o.shapes) {
    auto shape = parse_shape(text, "--shape");
    if (!shape) return shape.status();
    for (Layout layout : *layouts) {
      Problem p;
      p.m = (*shape)[0];
      p.n = (*shape)[1];
      p.k = (*shape)[2];
      p.batch = *batch;
      p.precision = {*input, *output, *accum};
      p.layout = layout;
      p.lda = *lda;
      p.ldb = *ldb;
      p.ldc = *ldc;
      if (Status s = p.validate(); !s) return s;
      out.push_back(p);
    }
  }
  return out;
}

// --compile: the choice of a served plan compiled for the chip's target; one line, and false when it failed.
bool compile_choice(const Plan& plan, const hw::HwProfile& profile, std::ostream& out) {
  if (!plan.served || plan.ranked.empty()) return true;
  const Config& c = plan.ranked.front().config;
  const KernelFamily* f = find_family(c.family);
  if (!f || !f->compiled_at_run_time()) {
    out << "  compile: family " << c.family << " is built into the library: nothing to compile\n";
    return true;
  }
  // The chip record alone, present or not: the compiler's target comes from it, never from a device.
  Device d;
  d.kind = "profile";
  d.name = profile.name;
  d.profile = profile;
  auto target = f->compile_target(d);
  if (!target) {
    out << "  compile: failed: " << target.status().message() << "\n";
    return false;
  }
  auto r = f->compile_ahead(plan.problem, c, *target, nullptr);
  if (!r) {
    out << "  compile: failed for " << *target << ": " << r.status().message() << "\n";
    return false;
  }
  out << fmt::format("  compile: {} for {}: {}, {} registers per thread\n", c.describe(), *target,
                     r->cache_hit ? "from the kernel cache" : "compiled into the kernel cache", r->registers);
  return true;
}

// The chip to plan for: --profile (present or not), else the device's own; the fingerprint the tuning DB files its
// records under (the running device's, or for a --profile plan the profile's: then records of the same
// architecture are found, db-arch, unless the profile is this CPU's).
struct Target {
  hw::HwProfile profile;
  std::string device_name;  // the device planned for, when it is present (a --profile plan may name no device)
  db::Fingerprint fingerprint;
};

Expected<Target> target_of(const PlanCommandOptions& o) {
  Target t;
  if (!o.profile.empty()) {
    auto p = hw::load_profile(o.profile);
    if (!p) return p.status();
    t.profile = std::move(*p);
    Device d;
    d.kind = t.profile.kind == "cpu" ? "cpu" : "cuda";
    d.profile = t.profile;
    t.fingerprint = db::fingerprint_of(d, {}, d.kind == "cpu" ? dispatch::compiler_id() : std::string());
    return t;
  }
  auto d = open_device(o.device);
  if (!d) return d.status();
  t.profile = d->profile;
  t.device_name = d->name;
  t.fingerprint = dispatch::running_fingerprint(*d);
  return t;
}

Expected<PlanOptions> plan_options_of(const PlanCommandOptions& o) {
  if (o.top < 0) return invalid_argument(fmt::format("--top {} is negative (allowed: 0 or more)", o.top));
  PlanOptions po;
  po.top_n = o.top;
  po.family = o.family;
  po.deterministic = !o.nondeterministic;
  for (const std::string& s : o.sets) {
    auto pin = parse_pin(s, "--set");
    if (!pin) return pin.status();
    po.pins.push_back(*pin);
  }
  auto threads = optional_int(o.threads, "--threads", 0, 0);
  if (!threads) return threads.status();
  // Plans may target another chip, so the bound is the plausible one of any chip, not this host's cores; without
  // it a huge count loops once per thread in the CPU model (issue 18: --threads 100000000 hung).
  if (*threads > int64_t(hw::bounds::threads.max)) {
    return invalid_argument(fmt::format("--threads = {} is out of range (allowed: 0 for all cores, or 1 to {})",
                                        *threads, int64_t(hw::bounds::threads.max)));
  }
  po.threads = int(*threads);
  // The explanation shows ExplainOptions::examples per reason unless --all-rejected: store no more than that.
  po.rejected_examples = o.all_rejected ? SIZE_MAX : std::size_t(ExplainOptions().examples);
  // Devices that are present make their profiles "running"; everything else is a prediction.
  po.running_profiles.push_back(std::string(hw::host_cpu_profile_name()));
  if (auto gpu = open_device("cuda"); gpu) po.running_profiles.push_back(gpu->profile.name);
  return po;
}

// The envelope every verb's JSON shares (schemas/envelope.schema.json): one row per plan. Nothing is measured, so
// the environment is the chip planned for (and the tuning DB read); no date, so the same plan is the same document.
bool print_json(const std::vector<Plan>& plans, const PlanCommandOptions& o, const Target& target, const PlanDb& db,
                const ExplainOptions& eo, std::ostream& out) {
  nlohmann::json doc = envelope<nlohmann::json>("plan");
  doc["environment"] = {
      {"tool_version", std::string(version())},
      {"profile", target.profile.name},
      {"device", target.device_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(target.device_name)}};
  if (db.db) doc["environment"]["db"] = db.path;
  doc["rows"] = nlohmann::json::array();
  bool all_served = true;
  for (const Plan& plan : plans) {
    nlohmann::json row = to_json(plan, eo);
    if (db.db) row["tuned"] = tuned_json(tuned_for(plan, *db.db, target.fingerprint, !o.nondeterministic));
    doc["rows"].push_back(std::move(row));
    all_served = all_served && plan.served;
  }
  out << doc.dump(2) << "\n";
  return all_served;
}

bool print_text(const std::vector<Plan>& plans, const PlanCommandOptions& o, const Target& target, const PlanDb& db,
                const ExplainOptions& eo, std::ostream& out) {
  bool all_served = true;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const Plan& plan = plans[i];
    all_served = all_served && plan.served;
    if (o.explain) {
      if (i > 0) out << "\n";
      out << render_explain(plan, eo);
    } else {
      out << render_brief(plan);
    }
    if (db.db) out << tuned_text(tuned_for(plan, *db.db, target.fingerprint, !o.nondeterministic));
    if (o.compile && !compile_choice(plan, target.profile, out)) all_served = false;
  }
  return all_served;
}

}  // namespace

int plan_command(const PlanCommandOptions& o, std::ostream& out, std::ostream& err) {
  // "table" is what the other verbs call their text form.
  if (o.format != "text" && o.format != "table" && o.format != "json") {
    return fail(err, invalid_argument(fmt::format("--format '{}' is not known (allowed: text, table, json)", o.format)));
  }
  if (o.format == "json" && o.compile) {
    return fail(err, invalid_argument("--compile prints text: use it without --format json"));
  }
  auto problems = problems_of(o);
  if (!problems) return fail(err, problems.status());
  auto po = plan_options_of(o);
  if (!po) return fail(err, po.status());
  auto db = open_plan_db(o.db);
  if (!db) return fail(err, db.status());
  auto target = target_of(o);
  if (!target) return fail(err, target.status());

  std::vector<Plan> plans;
  for (const Problem& p : *problems) {
    auto plan = make_plan(p, target->profile, *po);
    if (!plan) return fail(err, plan.status());
    plans.push_back(std::move(*plan));
  }

  ExplainOptions eo;
  eo.top_n = o.top;
  eo.all_rejected = o.all_rejected;
  const bool all_served = o.format == "json" ? print_json(plans, o, *target, *db, eo, out)
                                             : print_text(plans, o, *target, *db, eo, out);
  return all_served ? kExitOk : kExitFailure;
}

}  // namespace tileforge::cli
