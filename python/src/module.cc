// quantpath._quantpath: the pipeline stage for Python, thin. Plans, explanations and checks come
// back as the CLI's JSON text (report stage), which quantpath/__init__.py parses, so the two cannot
// disagree; a loaded layer keeps its parameters, which NumPy sees without a copy.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <string>

#include "python/src/bindings.h"
#include "quantpath/pipeline.h"
#include "quantpath/report.h"
#include "quantpath/version.h"

namespace nb = nanobind;

namespace quantpath::python {
namespace {

std::string PlanJson(const std::string& folder, const OpenArgs& args) {
  const Model model = Unwrap(OpenModel(folder, Options(args)));
  const std::vector<LayerDecision> layers = Unwrap(DecideAll(model));
  return ToJson(PlanToJson(model, layers), 1);
}

std::string ExplainJson(const std::string& folder, const std::string& layer, const OpenArgs& args) {
  const Model model = Unwrap(OpenModel(folder, Options(args)));
  const ExplainedLayer explained = Unwrap(DecideLayer(model, layer));
  return ToJson(ExplainToJson(model, layer, explained), 1);
}

std::string CheckJson(const std::string& folder, const OpenArgs& args, const std::string& reads) {
  CheckReading reading;
  reading.reads = reads == "headers"      ? CheckReads::kHeaders
                  : reads == "every-byte" ? CheckReads::kEveryByte
                                          : CheckReads::kValues;
  const CheckReport report = Unwrap(CheckFolder(folder, Options(args), reading));
  return ToJson(CheckToJson(report, folder, args.engine));
}

}  // namespace
}  // namespace quantpath::python

NB_MODULE(_quantpath, m) {
  using namespace quantpath::python;
  m.doc() = "quantpath's pipeline: plan, explain, check and load layers of a model folder";
  m.attr("__version__") = std::string(quantpath::kVersion);
  m.attr("library_version") = std::string(quantpath::LibraryVersion());
  nb::exception<Error>(m, "Error", PyExc_ValueError);
  BindOpenArgs(m);
  m.def("plan_json", &PlanJson, nb::arg("folder"), nb::arg("args"),
        "`plan --json` of `folder`, as text");
  m.def("explain_json", &ExplainJson, nb::arg("folder"), nb::arg("layer"), nb::arg("args"),
        "`explain --json` of one layer, as text");
  m.def("check_json", &CheckJson, nb::arg("folder"), nb::arg("args"), nb::arg("reads"),
        "`check --json` of `folder`, as text; reads: \"headers\", \"values\" or \"every-byte\"");
  BindLayers(m);
}
