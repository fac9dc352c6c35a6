// load_layer and the Layer it returns: the canonical parameters as zero-copy NumPy views (the
// Layer object owns them and stays alive while a view does) and Forward on the dispatcher's kernel.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <tuple>
#include <vector>

#include "python/src/bindings.h"

namespace nb = nanobind;

namespace quantpath::python {
namespace {

// A loaded layer on its own: the Model it came from is gone, so the site's name is kept here.
// Held through a pointer: LoadedLayer is move-only, which its members do not all declare.
struct Layer {
  std::unique_ptr<const LoadedLayer> loaded;
  std::string path;
};

using ParamView = nb::ndarray<nb::numpy, const uint8_t, nb::ndim<2>>;
// slot, element type, rows, cols, the tensor's bytes as uint8 [rows, row bytes]
using ParamEntry = std::tuple<std::string, std::string, int64_t, int64_t, ParamView>;

// What a slot's bytes hold, for quantpath/__init__.py to view them as (docs/spec_ids.md has the
// layouts): a QDType name, or "int32" (act-order g_idx: [2, K], the permutation and each column's
// group), "e8m0" (MX scales: biased exponents), "uint8" (integer families' codes, unsigned), or
// "packed" (codes under 8 bits, packed along each row, low bits first).
std::string ElementType(const SpecKey& key, Slot slot, const ParamTensor& tensor) {
  if (slot == Slot::kGIdx) return "int32";
  if (slot == Slot::kWeightScale &&
      (key.family == SpecFamily("mxfp4_block") || key.family == SpecFamily("mxfp8_block"))) {
    return "e8m0";
  }
  if (Info(tensor.dtype()).bits < 8) return "packed";
  const bool unsigned_codes = key.family == SpecFamily("int_group") ||
                              key.family == SpecFamily("int_channel") ||
                              key.family == SpecFamily("int_tensor");
  if (unsigned_codes && (slot == Slot::kWeight || slot == Slot::kWeightZero)) return "uint8";
  return std::string(QDTypeName(tensor.dtype()));
}

std::vector<ParamEntry> Parameters(nb::handle self) {
  const LoadedLayer& layer = *nb::cast<const Layer&>(self).loaded;
  const LinearParams& params = layer.linear.params();
  std::vector<ParamEntry> entries;
  for (size_t i = 0; i < kSlotCount; ++i) {
    const Slot slot = static_cast<Slot>(i);
    const ParamTensor& tensor = params.tensor(slot);
    if (tensor.empty()) continue;
    const size_t shape[2] = {static_cast<size_t>(tensor.rows()),
                             static_cast<size_t>(tensor.row_bytes())};
    entries.emplace_back(std::string(SlotName(slot)), ElementType(layer.key, slot, tensor),
                         tensor.rows(), tensor.cols(),
                         ParamView(reinterpret_cast<const uint8_t*>(tensor.raw()), 2, shape, self));
  }
  return entries;
}

template <typename T>
using Input = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Output = nb::ndarray<nb::numpy, float, nb::ndim<2>>;

// y [M, N] fp32 = x [M, K] · Wᵀ (+ bias), x fp32 or bf16 (as its uint16 bits); the GIL is released
// while the kernel runs.
template <typename T>
Output Forward(const Layer& self, Input<T> x, QDType dtype) {
  const LoadedLayer& layer = *self.loaded;
  const int64_t m = static_cast<int64_t>(x.shape(0));
  const int64_t n = layer.linear.out_features();
  float* y = new float[static_cast<size_t>(m * n)];
  nb::capsule owner(y, [](void* p) noexcept { delete[] static_cast<float*>(p); });
  Status status;
  {
    nb::gil_scoped_release release;
    status = layer.linear.Forward({dtype, x.data(), m, static_cast<int64_t>(x.shape(1))},
                                  {QDType::kFP32, y, m, n});
  }
  Check(status);
  const size_t shape[2] = {static_cast<size_t>(m), static_cast<size_t>(n)};
  return Output(y, 2, shape, owner);
}

std::string KernelName(const Layer& self, int64_t m, const std::string& input) {
  const LoadedLayer& layer = *self.loaded;
  const QDType in = input == "bf16" ? QDType::kBF16 : QDType::kFP32;
  if (input != "bf16" && input != "fp32") throw Error("input: expected fp32 or bf16, got " + input);
  return std::string(Unwrap(layer.linear.KernelFor(m, in, QDType::kFP32))->name());
}

Layer Load(const std::string& folder, const std::string& path, int64_t rank, const OpenArgs& args) {
  const Model model = Unwrap(OpenModel(folder, Options(args)));
  LoadedLayer loaded = Unwrap(LoadLayer(model, path, static_cast<int>(rank)));
  std::string site = loaded.resolved.site->path;
  loaded.resolved.site = nullptr;  // it points into `model`
  return Layer{std::make_unique<const LoadedLayer>(std::move(loaded)), std::move(site)};
}

}  // namespace

OpenOptions Options(const OpenArgs& args) {
  OpenOptions options =
      Unwrap(OpenOptions::Parse(args.engine, args.quantization, args.device, args.dtype, args.tp,
                                args.speculative, args.platform));
  Check(options.SetFormatOption("modelslim-packing", args.modelslim_packing));
  Check(options.SetOnline(args.online));
  options.int8_activations = args.int8_activations;
  return options;
}

void BindOpenArgs(nb::module_& m) {
  nb::class_<OpenArgs>(m, "OpenArgs")
      .def(nb::init<>())
      .def_rw("engine", &OpenArgs::engine)
      .def_rw("quantization", &OpenArgs::quantization)
      .def_rw("online", &OpenArgs::online)
      .def_rw("device", &OpenArgs::device)
      .def_rw("dtype", &OpenArgs::dtype)
      .def_rw("tp", &OpenArgs::tp)
      .def_rw("speculative", &OpenArgs::speculative)
      .def_rw("platform", &OpenArgs::platform)
      .def_rw("modelslim_packing", &OpenArgs::modelslim_packing)
      .def_rw("int8_activations", &OpenArgs::int8_activations);
}

void BindLayers(nb::module_& m) {
  nb::class_<Layer>(m, "LoadedLayer")
      .def_ro("path", &Layer::path)
      .def_prop_ro("spec_id", [](const Layer& l) { return l.loaded->key.ToId(); })
      .def_prop_ro("scheme", [](const Layer& l) { return l.loaded->scheme.CanonicalName(); })
      .def_prop_ro("in_features", [](const Layer& l) { return l.loaded->linear.in_features(); })
      .def_prop_ro("out_features", [](const Layer& l) { return l.loaded->linear.out_features(); })
      .def("parameters", &Parameters,
           "(slot, element type, rows, cols, bytes as uint8 [rows, row bytes]) per tensor held")
      .def("kernel", &KernelName, nb::arg("m"), nb::arg("input") = "fp32",
           "The kernel Forward uses for m rows of fp32 or bf16 input")
      .def(
          "forward_fp32",
          [](const Layer& l, Input<float> x) { return Forward(l, x, QDType::kFP32); }, nb::arg("x"))
      .def(
          "forward_bf16",
          [](const Layer& l, Input<uint16_t> x) { return Forward(l, x, QDType::kBF16); },
          nb::arg("x"));
  m.def("load_layer", &Load, nb::arg("folder"), nb::arg("path"), nb::arg("rank"), nb::arg("args"),
        "Loads one layer (rank `rank` of args.tp) through its spec");
}

}  // namespace quantpath::python
