// Where the tuning DB lives: --db PATH, then TILEFORGE_DB, then the embedded default under the user's cache.
#pragma once

#include <functional>
#include <string>

#include "core/expected.hpp"

namespace tileforge::db {

// What the caller asked for: an explicit path (the CLI's --db), or no DB at all (--no-db).
struct LocationRequest {
  std::string path;       // empty: not given
  bool disabled = false;  // --no-db: wins over everything
};

struct Location {
  bool enabled = true;
  std::string path;       // absolute or as given; empty when disabled
  std::string origin;     // "--no-db", "--db", "TILEFORGE_DB", "$XDG_CACHE_HOME", "$HOME/.cache"
  std::string describe() const;  // "/home/u/.cache/tileforge/tune.db (from $HOME/.cache)" or "disabled (--no-db)"
};

// Reads an environment variable; nullptr when unset. Tests pass their own.
using Getenv = std::function<const char*(const char*)>;

// --no-db, else --db PATH, else $TILEFORGE_DB (when set and not empty), else $XDG_CACHE_HOME/tileforge/tune.db
// (when set to an absolute path, as the XDG spec requires), else $HOME/.cache/tileforge/tune.db (HOME from the
// environment, else the password database). Fails only when no home directory can be found.
Expected<Location> resolve_location(const LocationRequest& request = {}, const Getenv& getenv = nullptr);

// Creates every missing directory above `path` (mode 0755, as mkdir -p).
Status create_parent_dirs(const std::string& path);

}  // namespace tileforge::db
