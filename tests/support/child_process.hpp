// Pieces of a test run in a forked child: `in_child` runs a setup and a body there and brings the body's result back
// through a pipe; `hold_files_to` makes the calling process see a full disk (its files held to a size).
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace tileforge::testing {

// Holds every file this process writes to `max_bytes` (RLIMIT_FSIZE, SIGXFSZ ignored): a write past it fails with
// EFBIG, as on a full disk, without root or a small filesystem. Async-signal-safe, so a child forked from a process
// with other threads may call it. False when the limit could not be set.
inline bool hold_files_to(uint64_t max_bytes) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  struct rlimit limit {};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = rlim_t(max_bytes);
  return ::sigaction(SIGXFSZ, &ignore, nullptr) == 0 && ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
}

// What `body` returned in a forked child after `setup` (false fails the child), or why the child failed.
inline std::string in_child(const std::function<bool()>& setup, const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    if (!setup()) _exit(3);
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
