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
  return [command, unit, last_tenth = size_t{0}](size_t done, size_t total,
                                                 const std::string& detail) mutable {
    const size_t tenth = total ? done * 10 / total : 10;
    if (tenth == last_tenth) return;
    last_tenth = tenth;
    std::fprintf(stderr, "%s: %zu%% (%zu/%zu %s, %s)\n", command.c_str(), tenth * 10, done, total,
                 unit.c_str(), detail.c_str());
  };
}

}  // namespace quantpath::cli
