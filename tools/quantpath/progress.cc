// Progress on stderr for the commands that stream a model (load, quantize, convert), and the
// decimal byte counts they report with.
#include <unistd.h>

#include <cstdio>

#include "fmt/format.h"
#include "tools/quantpath/commands.h"

namespace quantpath::cli {

std::string DecimalBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b < 1e3) return fmt::format("{} B", bytes);
  if (b < 1e6) return fmt::format("{:.1f} kB", b / 1e3);
  if (b < 1e9) return fmt::format("{:.2f} MB", b / 1e6);
  return fmt::format("{:.2f} GB", b / 1e9);
}

ProgressLine ProgressPrinter(std::string command, std::string unit) {
  if (isatty(STDERR_FILENO)) {
    return [unit](size_t done, size_t total, const std::string& detail) {
      constexpr size_t kWidth = 30;
      const size_t filled = total ? done * kWidth / total : kWidth;
      std::fprintf(stderr, "\r[%s%s] %zu/%zu %s  %s", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, ' ').c_str(), done, total, unit.c_str(),
                   detail.c_str());
      if (done == total) std::fputc('\n', stderr);
    };
  }
  // Off a terminal (a log, a pipe) one line when the work is done.
  return [command, unit](size_t done, size_t total, const std::string& detail) {
    if (done != total) return;
    std::fprintf(stderr, "%s: 100%% (%zu/%zu %s, %s)\n", command.c_str(), done, total, unit.c_str(),
                 detail.c_str());
  };
}

}  // namespace quantpath::cli
