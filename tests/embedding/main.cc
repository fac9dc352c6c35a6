// embed MODEL_DIR [LAYER]: the README's embedding example, built against an installed quantpath:
// opens the folder, decides every layer, loads one and runs one Forward through the process's
// default dispatcher. Prints the version, the layer count, the spec and the kernel; exits 1 when
// any step fails, the headers and the library disagree on the version, or an output is not finite.
// LAYER defaults to model.layers.0.self_attn.qkv_proj.
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "quantpath/pipeline.h"
#include "quantpath/version.h"

namespace {

int Fail(const std::string& what, const std::string& message) {
  std::cerr << "embed: " << what << ": " << message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: embed MODEL_DIR [LAYER]\n";
    return 2;
  }
  const std::string dir = argv[1];
  const std::string path = argc == 3 ? argv[2] : "model.layers.0.self_attn.qkv_proj";
  if (quantpath::LibraryVersion() != quantpath::kVersion) {
    return Fail("version", "headers " + std::string(quantpath::kVersion) + ", library " +
                               std::string(quantpath::LibraryVersion()));
  }

  quantpath::Result<quantpath::Model> model = quantpath::OpenModel(dir, {});  // native, cpu
  if (!model.ok()) return Fail(dir, model.status().message());
  quantpath::Result<std::vector<quantpath::LayerDecision>> layers = quantpath::DecideAll(*model);
  if (!layers.ok()) return Fail(dir, layers.status().message());
  if (quantpath::CountErrors(*layers) != 0) return Fail(dir, "a layer decided error");

  quantpath::Result<quantpath::LoadedLayer> layer = quantpath::LoadLayer(*model, path);
  if (!layer.ok()) return Fail(path, layer.status().message());
  const quantpath::Linear& linear = layer->linear;
  const int64_t m = 2;
  std::vector<float> x(static_cast<size_t>(m * linear.in_features()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) / 7.0f - 0.5f;
  quantpath::Result<std::vector<float>> y = linear.Forward(x, m);
  if (!y.ok()) return Fail(path, y.status().message());
  quantpath::Result<const quantpath::LinearKernel*> kernel =
      linear.KernelFor(m, quantpath::QDType::kFP32, quantpath::QDType::kFP32);
  if (!kernel.ok()) return Fail(path, kernel.status().message());
  if (y->size() != static_cast<size_t>(m * linear.out_features())) {
    return Fail(path, "Forward produced the wrong number of values");
  }
  bool any_nonzero = false;
  for (float v : *y) {
    if (!std::isfinite(v)) return Fail(path, "Forward produced a non-finite value");
    any_nonzero = any_nonzero || v != 0.0f;
  }
  if (!any_nonzero) return Fail(path, "Forward produced only zeros");
  if ((*kernel)->name().empty()) return Fail(path, "the kernel has no name");
  std::cout << "quantpath " << quantpath::LibraryVersion() << ": " << layers->size() << " layers; "
            << path << " " << layer->key.ToId() << " " << (*kernel)->name() << " [" << m << ", "
            << linear.out_features() << "]\n";
  return 0;
}
