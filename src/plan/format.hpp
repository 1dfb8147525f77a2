// Number formatting shared by the decision log and the explain renderer: times, bytes, rates, shares.
#pragma once

#include <cmath>
#include <string>

#include <fmt/format.h>

namespace tileforge::plan::fmtx {

inline std::string time(double s) {
  if (!std::isfinite(s)) return "n/a";
  if (s >= 1.0) return fmt::format("{:.3g} s", s);
  if (s >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (s >= 1e-6) return fmt::format("{:.4g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}

inline std::string bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.4g} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.4g} KB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

inline std::string rate(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }

inline std::string pct(double share) { return fmt::format("{:.1f}%", share * 100.0); }

// "+3.2%", "-1.0%", "+0.0%"
inline std::string delta(double d) { return fmt::format("{:+.1f}%", d * 100.0); }

inline std::string tflops(double flops, double seconds) {
  if (seconds <= 0 || !std::isfinite(seconds)) return "n/a";
  const double t = flops / seconds / 1e12;
  return t >= 1 ? fmt::format("{:.1f} TFLOP/s", t) : fmt::format("{:.1f} GFLOP/s", t * 1e3);
}

// A peak given in TFLOP/s: "312 TFLOP/s", "200.4 GFLOP/s".
inline std::string peak(double tflops) {
  return tflops >= 1 ? fmt::format("{:.5g} TFLOP/s", tflops) : fmt::format("{:.4g} GFLOP/s", tflops * 1e3);
}

}  // namespace tileforge::plan::fmtx
