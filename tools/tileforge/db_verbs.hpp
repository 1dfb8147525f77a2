// Internals the `tileforge db` files share (tools/tileforge/db*.cpp only): subcommand arguments and shared helpers.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/location.hpp"
#include "db/store.hpp"
#include "options.hpp"

namespace tileforge::cli::db_verb {

using ojson = nlohmann::ordered_json;

struct FilterArgs {
  std::string device, backend, family;
};

struct ListArgs {
  DbArgs db;
  FilterArgs filter;
  OutputArgs output;  // table or json
};

struct ShowArgs {
  DbArgs db;
  std::string id;
  OutputArgs output;  // text or json
};

struct ExportArgs {
  DbArgs db;
  FilterArgs filter;
  OutputArgs output;  // json or triton
};

struct ImportArgs {
  DbArgs db;
  std::string file;
  bool force = false;
  OutputArgs output;  // text, table or json
};

struct PruneArgs {
  DbArgs db;
  std::string older_than, device;
  bool stale_versions = false;
  bool invalid = false;
  bool dry_run = false;
  OutputArgs output;  // text, table or json
};

struct CheckArgs {
  DbArgs db;
  OutputArgs output;  // text or json
};

struct Args {
  ListArgs list;
  ShowArgs show;
  ExportArgs exp;
  ImportArgs imp;
  PruneArgs prune;
  CheckArgs check;
};

// ---- the subcommands (db_read.cpp, db_write.cpp) -----------------------------------------------------------------

int run_list(const ListArgs& a);
int run_show(const ShowArgs& a);
int run_export(const ExportArgs& a);
int run_check(const CheckArgs& a);
int run_import(const ImportArgs& a);
int run_prune(const PruneArgs& a);

// ---- shared by them (db_common.cpp) --------------------------------------------------------------------------

// Where the DB is: --db, else $TILEFORGE_DB, else the user's cache folder.
Expected<db::Location> location_from(const DbArgs& args);
bool file_exists(const std::string& path);
// "no tuning DB at PATH yet (from ORIGIN); ..." for the subcommands that find none.
std::string no_db_yet(const db::Location& where);
// Opens an existing DB for reading. For writing first, so that an older schema is migrated (as the store's message
// promises every `db` command does); a file this user may only read is still listed.
Expected<db::Store> open_existing(const db::Location& where);
// 1 to 16 hex digits, lowered: a fingerprint hash or a prefix of one, as `db list` prints them.
Expected<std::string> hash_prefix(const std::string& text, const char* name);

// Every record of the DB, to check names against; empty when the DB does not exist.
struct Opened {
  std::optional<db::Store> store;
  std::vector<db::Record> all;
  std::vector<db::InvalidRow> skipped;  // invalid rows, left out of `all`
};

// What `db list` and `db export` work on: where the DB is, whether it exists, and its records the filter keeps.
struct Selection {
  db::Location where;
  Opened opened;
  std::vector<db::Record> records;
};
Expected<Selection> select_records(const DbArgs& db, const FilterArgs& filter);

// A record's parameters as "NAME=VALUE ..." (the CONFIG column).
std::string params_text(const Config& c);
// Whether this build dispatches the record's family version: "current", or why not.
std::string version_note(const db::Record& r, const std::map<std::string, int64_t>& current);
// The SPREAD column of `db list`: (q3 - q1) / median, "-" where the quartiles are unknown, marked where dispatch
// passes the record over.
std::string spread_text(const db::Timing& t);
// One record as the JSON export writes it, with its id and device hash first.
ojson record_json(const db::Record& r);
// The envelope every verb's JSON shares (schemas/envelope.schema.json): the DB read is the environment of a db verb.
ojson envelope(std::string_view verb, const db::Location& where, bool exists);

}  // namespace tileforge::cli::db_verb
