// Resolving the tuning DB's path from flags, environment and the user's cache directory.
#include "db/location.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

namespace tileforge::db {

std::string Location::describe() const {
  if (!enabled) return fmt::format("disabled ({})", origin);
  return fmt::format("{} (from {})", path, origin);
}

Expected<Location> resolve_location(const LocationRequest& request, const Getenv& getenv_fn) {
  auto env = [&](const char* name) -> std::string {
    const char* v = getenv_fn ? getenv_fn(name) : std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (request.disabled) return Location{false, {}, "--no-db"};
  if (!request.path.empty()) return Location{true, request.path, "--db"};
  if (std::string p = env("TILEFORGE_DB"); !p.empty()) return Location{true, p, "TILEFORGE_DB"};
  // The XDG spec says a relative $XDG_CACHE_HOME is invalid and must be ignored.
  if (std::string x = env("XDG_CACHE_HOME"); !x.empty() && x[0] == '/') {
    return Location{true, (std::filesystem::path(x) / "tileforge" / "tune.db").string(), "$XDG_CACHE_HOME"};
  }
  std::string home = env("HOME");
  if (home.empty()) {
    if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_dir) home = pw->pw_dir;
  }
  if (home.empty()) {
    return not_available(
        "no place for the tuning DB: HOME and XDG_CACHE_HOME are unset and the user has no home directory "
        "(pass --db PATH, set TILEFORGE_DB, or pass --no-db)");
  }
  return Location{true, (std::filesystem::path(home) / ".cache" / "tileforge" / "tune.db").string(), "$HOME/.cache"};
}

Status create_parent_dirs(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return {};
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  if (ec) {
    return {Code::io_error, fmt::format("cannot create the directory {} for the tuning DB: {} (pass --db PATH "
                                        "elsewhere, or --no-db)",
                                        parent.string(), ec.message())};
  }
  return {};
}

}  // namespace tileforge::db
