// Reading the producers' saved dequantizations (tests/data/producers/*/dequant.safetensors), shared
// by the producer-fixture tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/numeric.h"
#include "quantpath/pipeline.h"
#include "quantpath/specs.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath::testing {

// Every producer-written and documentation-written fixture folder ("producers/ct_llama_fp8_block",
// …), sorted.
inline std::vector<std::string> FixtureFolders() {
  std::vector<std::string> dirs;
  for (const char* folder : {"producers", "documented"}) {
    const std::filesystem::path root = std::filesystem::path(QUANTPATH_TEST_DATA) / folder;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      if (std::filesystem::exists(entry.path() / "config.json")) {
        dirs.push_back(std::string(folder) + "/" + entry.path().filename().string());
      }
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// How fixture `name` is opened: SGLang's own methods (sglang_*) under SGLang, ModelSlim's new
// 4-bit packing (*_new) with that option.
inline Result<OpenOptions> FixtureOptions(std::string_view name, int64_t tp = 1) {
  const bool sglang = name.find("/sglang_") != std::string::npos;
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse(sglang ? "sglang@helpers" : "native",
                                                              "", "cpu", "auto", tp));
  if (name.ends_with("_new"))
    QP_RETURN_IF_ERROR(options.SetFormatOption("modelslim-packing", "new"));
  return options;
}

// A fixture folder as the producer tests read it: the model (held by pointer, since the
// decisions point into its sites), every site's decision, and the saved dequantization.
struct ProducerFolder {
  std::unique_ptr<Model> model;
  std::vector<LayerDecision> layers;
  std::shared_ptr<const SafetensorsFile> saved;
};
inline Result<ProducerFolder> OpenProducerFolder(const std::string& dir,
                                                 std::string_view engine = "native",
                                                 std::string_view modelslim_packing = "") {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse(engine, "", "cpu"));
  QP_RETURN_IF_ERROR(options.SetFormatOption("modelslim-packing", modelslim_packing));
  QP_ASSIGN_OR_RETURN(Model model, OpenModel(dir, options));
  ProducerFolder folder{std::make_unique<Model>(std::move(model)), {}, nullptr};
  QP_ASSIGN_OR_RETURN(folder.layers, DecideAll(*folder.model));
  QP_ASSIGN_OR_RETURN(folder.saved,
                      SafetensorsFile::Open(std::filesystem::path(dir) / "dequant.safetensors"));
  return folder;
}

// `dir` loaded whole (LoadModel, rank 0) under `engine`; the sites' pointers into the Model,
// which ends here, are cleared.
inline Result<ModelLoad> LoadWithEngine(const std::string& dir, std::string_view engine) {
  QP_ASSIGN_OR_RETURN(OpenOptions options, OpenOptions::Parse(engine, "", "cpu"));
  QP_ASSIGN_OR_RETURN(Model model, OpenModel(dir, options));
  QP_ASSIGN_OR_RETURN(ModelLoad load, LoadModel(model, LoadModelOptions{0, {}}));
  for (SiteLoad& site : load.sites) site.site = nullptr;
  return load;
}

// Element i of a saved dequantization (bf16, fp16 or fp32) as float.
inline float SavedValue(const TensorView& view, int64_t i) {
  if (view.info->dtype == StDtype::kF32) {
    float value;
    std::memcpy(&value, view.bytes.data() + 4 * i, 4);
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, view.bytes.data() + 2 * i, 2);
  return view.info->dtype == StDtype::kBF16 ? Bf16ToFloat(bits) : Fp16ToFloat(bits);
}

// Our double rounded to the saved dtype (once: the reference values are exact in fp32).
inline float Rounded(StDtype dtype, double value) {
  const float f = static_cast<float>(value);
  if (dtype == StDtype::kBF16) return Bf16ToFloat(FloatToBf16(f));
  if (dtype == StDtype::kF16) return Fp16ToFloat(FloatToFp16(f));
  return f;
}

// Expects the reference's weight ([rows, cols], the legs' rows stacked in `prefixes` order) to
// equal each leg's saved `<prefix>.weight` [leg rows, cols], rounded to the saved dtype, value
// for value: compared as values, since a zero's sign may differ where a negative scale
// multiplies q − z = 0 (auto-round's symmetric scales may be negative) and the producer adds +0.
inline void ExpectLegsMatchSaved(const SafetensorsFile& saved,
                                 const std::vector<std::string>& prefixes,
                                 const ReferenceLayer& ref) {
  const int64_t k = ref.cols;
  int64_t row = 0;
  for (const std::string& prefix : prefixes) {
    const TensorInfo* info = saved.Find(prefix + ".weight");
    ASSERT_NE(info, nullptr) << prefix;
    ASSERT_EQ(info->shape.size(), 2u) << prefix;
    ASSERT_EQ(info->shape[1], k) << prefix;
    ASSERT_LE(row + info->shape[0], ref.rows) << prefix;
    const TensorView view = saved.View(*info);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < info->shape[0] * k; ++i) {
      if (Rounded(info->dtype, ref.weight[row * k + i]) != SavedValue(view, i)) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0) << prefix << " of " << info->shape[0] * k;
    row += info->shape[0];
  }
  EXPECT_EQ(row, ref.rows);
}

// A copy of fixture folder `src` (every file but its safetensors) whose model.safetensors holds
// `extra`, then the fixture's tensors as `edit` leaves them (a tensor is dropped where it returns
// false): the error tests' corrupted checkpoints.
template <typename Edit>
std::filesystem::path MutatedFixture(const std::filesystem::path& src, Edit edit,
                                     std::vector<TestTensor> extra = {}) {
  const std::filesystem::path dir = FreshDir();
  for (const auto& entry : std::filesystem::directory_iterator(src)) {
    if (entry.path().extension() == ".safetensors") continue;
    std::filesystem::copy_file(entry.path(), dir / entry.path().filename());
  }
  Result<std::shared_ptr<const SafetensorsFile>> file =
      SafetensorsFile::Open(src / "model.safetensors");
  EXPECT_TRUE(file.ok()) << file.status().message();
  std::vector<TestTensor> tensors = std::move(extra);
  if (!file.ok()) return dir;
  for (const TensorInfo& info : (*file)->tensors()) {
    const TensorView view = (*file)->View(info);
    TestTensor t{info.name, std::string(StDtypeName(info.dtype)), info.shape,
                 std::vector<uint8_t>(view.bytes.size())};
    std::memcpy(t.bytes.data(), view.bytes.data(), view.bytes.size());
    if (edit(&t)) tensors.push_back(std::move(t));
  }
  WriteSafetensors(dir / "model.safetensors", tensors);
  return dir;
}

// Why `layer` of `model` does not load ("" and a test failure when it opens or loads).
inline std::string LayerLoadError(const Result<Model>& model, const std::string& layer) {
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return "";
  Result<LoadedLayer> loaded = LoadLayer(*model, layer);
  EXPECT_FALSE(loaded.ok());
  return loaded.ok() ? "" : std::string(loaded.status().message());
}

}  // namespace quantpath::testing
