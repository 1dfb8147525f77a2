// Runs a piece of a test in a child process that cannot damage the system: when the test runs as root, the child
// first becomes the user nobody. Tests that write to system devices (/dev/full, /dev/null) use it, so that a
// writer that renamed over the path (as --out did before the output rule) fails instead of replacing the device.
#pragma once

#include <grp.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "support/child_process.hpp"

namespace tileforge::testing {

// What `body` returned, or why the child failed.
inline std::string in_unprivileged_child(const std::function<std::string()>& body) {
  return in_child(
      [] { return getuid() != 0 || (setgroups(0, nullptr) == 0 && setgid(65534) == 0 && setuid(65534) == 0); }, body);
}

}  // namespace tileforge::testing
