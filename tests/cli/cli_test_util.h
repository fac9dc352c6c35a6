// Runs the quantpath binary and captures what it prints.
#pragma once

#include <sys/wait.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>

#include "quantpath/base.h"

namespace quantpath::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
};

// Runs `quantpath <args>` from the source tree (stderr discarded unless `with_stderr`).
inline CommandResult RunCli(const std::string& args, bool with_stderr = false) {
  std::string command = std::string("cd ") + QUANTPATH_SOURCE_DIR + " && " + QUANTPATH_CLI + " " +
                        args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.out.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

// Parses a command's JSON output; a parse failure fails the test and yields null.
inline Json ParseOrDie(const std::string& text) {
  Result<Json> j = ParseJson(text, "stdout");
  EXPECT_TRUE(j.ok()) << j.status().message() << "\n" << text.substr(0, 2000);
  return j.ok() ? *j : Json();
}

}  // namespace quantpath::testing
