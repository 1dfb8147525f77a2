// Runs a piece of a test in a child process that cannot damage the system: when the test runs as root, the child
// first becomes the user nobody. Tests that write to system devices (/dev/full, /dev/null) use it, so that a
// writer that renamed over the path (as --out did before the output rule) fails instead of replacing the device.
#pragma once

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

namespace tileforge::testing {

// What `body` returned, or why the child failed.
inline std::string in_unprivileged_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    if (getuid() == 0 && (setgroups(0, nullptr) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    const std::string result = body();
    const bool sent = write(fds[1], result.data(), result.size()) == ssize_t(result.size());
    _exit(sent ? 0 : 4);
  }
  close(fds[1]);
  std::string result;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) result.append(buf, std::size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed: wait status " + std::to_string(status);
  return result;
}

}  // namespace tileforge::testing
