// The host-load window: unknown for a window too short to say, and a spinning child process seen as another
// process's use of the machine (Linux).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

#include "measure/host_load.hpp"

namespace tileforge::measure {
namespace {

TEST(HostLoadWindow, TooShortAWindowSaysNothing) {
  const HostLoadWindow w;
  EXPECT_FALSE(w.others_cores().has_value());
}

#if defined(__linux__)
TEST(HostLoadWindow, SeesAnotherProcessSpinning) {
  const HostLoadWindow w;
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Spin for 400 ms of wall time, then leave without running the parent's exit handlers.
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    volatile unsigned long n = 0;
    while (std::chrono::steady_clock::now() < end) n = n + 1;
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const auto others = w.others_cores();
  ASSERT_TRUE(others.has_value());
  // The child had a core to itself for most of the window (the parent slept in waitpid): well above the busy
  // limit even if another test shares the machine and takes part of a core from it.
  EXPECT_GT(*others, kHostBusyCores) << "the child's 400 ms of spinning did not show";
}
#endif

}  // namespace
}  // namespace tileforge::measure
