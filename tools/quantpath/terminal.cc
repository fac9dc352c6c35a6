// What stdout is: a terminal's width ($COLUMNS first, as shells export it, then the terminal's
// own), and whether to colour (a terminal, and NO_COLOR unset or empty: https://no-color.org).
#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

#include "tools/quantpath/commands.h"

namespace quantpath::cli {

TableStyle StdoutStyle(bool wide) {
  TableStyle style;
  style.wide = wide;
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  if (const char* columns = std::getenv("COLUMNS"); columns != nullptr) {
    const std::string_view text(columns);
    int width = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), width);
    if (error == std::errc() && end == text.data() + text.size() && width > 0) style.width = width;
  }
  winsize size{};
  if (style.width == 0 && terminal && ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0) {
    style.width = size.ws_col;
  }
  const char* no_color = std::getenv("NO_COLOR");
  style.colour = terminal && (no_color == nullptr || *no_color == '\0');
  return style;
}

}  // namespace quantpath::cli
