// What the module's files share: the options every call takes (as the CLI spells them), errors
// as Python exceptions, and the layer classes.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "quantpath/pipeline.h"

namespace quantpath::python {

// quantpath.Error (a ValueError): a Status's message, word for word as the CLI prints it.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) throw Error(result.status().message());
  return std::move(*result);
}
inline void Check(const Status& status) {
  if (!status.ok()) throw Error(status.message());
}

// The options of plan, explain, check and load, with the CLI's spellings and defaults.
struct OpenArgs {
  std::string engine = "native";
  std::string quantization;
  std::string online;
  std::string device = "cpu";
  std::string dtype = "auto";
  int64_t tp = 1;
  bool speculative = false;
  std::string platform = "cuda";
  std::string modelslim_packing;
  bool int8_activations = false;
};
OpenOptions Options(const OpenArgs& args);

void BindOpenArgs(nanobind::module_& m);
void BindLayers(nanobind::module_& m);

}  // namespace quantpath::python
