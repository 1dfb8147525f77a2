// `tileforge plan`'s tuning-DB report: what the DB holds for each planned problem, beside the planner's choice.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/expected.hpp"
#include "db/location.hpp"
#include "db/store.hpp"
#include "plan/planner.hpp"

namespace tileforge::cli {

// The DB plan reads: opened read-only through dispatch's cache, so plan never creates, migrates or writes a file.
struct PlanDb {
  std::shared_ptr<const db::DispatchDb> db;  // null: no report (--no-db, or the default DB does not exist)
  std::string path;
};

// --db PATH that does not exist, or a DB that cannot be read, is refused naming the path; the default DB
// ($TILEFORGE_DB or the user's cache) is skipped without a word when it does not exist (dispatch warns when it is
// unreadable).
Expected<PlanDb> open_plan_db(const db::LocationRequest& request);

// What the DB holds for one plan, found by the lookup dispatch makes (db-exact, db-bucket, db-arch).
struct TunedReport {
  std::optional<db::Record> record;  // none: "no tuned record"
  std::string source;                // "db-exact", "db-bucket", "db-arch"
  std::string reason;                // the lookup's one line
  double predicted_s = 0;            // the plan's cost model for the record's config and shape on this profile
  int rank = 0;                      // the config's rank in the plan's list (0: not in it)
  bool same_as_choice = false;       // the planner chose this config
};

// `fingerprint`: the running device's (plan for a present device) or the profile's (a prediction: the lookup then
// finds records of the same architecture only). `deterministic`: the policy the plan was made under (--nondeterministic
// reads the records of configs that sum by float atomics too, as dispatch does).
TunedReport tuned_for(const plan::Plan& plan, const db::DispatchDb& db, const db::Fingerprint& fingerprint,
                      bool deterministic = true);

// Two or three indented lines for the text report.
std::string tuned_text(const TunedReport& report);
// The row's "tuned" object: null fields where there is no record (TFLOP/s and milliseconds, as every verb's JSON).
nlohmann::json tuned_json(const TunedReport& report);

}  // namespace tileforge::cli
