// The Python answers for regular expressions and matchers (tests/data/patterns/python_answers.json,
// written by Python's re and regex modules), parsed once for the tests that hold quantpath to them.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "quantpath/base.h"

namespace quantpath {

inline const Json& PythonAnswers() {
  static const Json* answers = [] {
    auto parsed = ReadJsonFile(QUANTPATH_TEST_DATA "/patterns/python_answers.json");
    if (!parsed.ok()) {
      ADD_FAILURE() << parsed.status().message();
      return new Json();
    }
    return new Json(std::move(*parsed));
  }();
  return *answers;
}

}  // namespace quantpath
