// What the export tests share: the producer fixtures, output folders, and reading tensors back.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "quantpath/checkpoint.h"
#include "quantpath/export.h"
#include "quantpath/materialize.h"
#include "quantpath/pipeline.h"
#include "tests/specs/test_checkpoint.h"

namespace quantpath::testing {

inline std::filesystem::path Producer(const std::string& folder) {
  return std::filesystem::path(QUANTPATH_TEST_DATA) / "producers" / folder;
}

// Every tensor of a folder's weights: name → (dtype, shape, bytes).
struct StoredTensor {
  StDtype dtype = StDtype::kU8;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};
inline std::map<std::string, StoredTensor> ReadAll(const std::filesystem::path& dir) {
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.status().message();
  std::map<std::string, StoredTensor> out;
  if (!checkpoint.ok()) return out;
  for (const std::string& name : checkpoint->TensorNames()) {
    Result<TensorView> v = checkpoint->Get(name);
    EXPECT_TRUE(v.ok()) << v.status().message();
    if (!v.ok()) continue;
    out[name] = {v->info->dtype, v->info->shape, {v->bytes.begin(), v->bytes.end()}};
  }
  return out;
}

// The tensors of one safetensors file.
inline std::map<std::string, StoredTensor> ReadFile(const std::filesystem::path& file) {
  Result<std::shared_ptr<const SafetensorsFile>> f = SafetensorsFile::Open(file);
  EXPECT_TRUE(f.ok()) << f.status().message();
  std::map<std::string, StoredTensor> out;
  if (!f.ok()) return out;
  for (const TensorInfo& info : (*f)->tensors()) {
    TensorView v = (*f)->View(info);
    out[info.name] = {info.dtype, info.shape, {v.bytes.begin(), v.bytes.end()}};
  }
  return out;
}

// ConvertCheckpoint of `in` into `out` in format `to`.
inline Result<ExportReport> Convert(const std::filesystem::path& in,
                                    const std::filesystem::path& out, CheckpointFormat to,
                                    bool lossy = false) {
  ConvertOptions options;
  options.to = to;
  options.lossy = lossy;
  return ConvertCheckpoint(in.string(), out.string(), options);
}

// `check` of a written folder as `engine` loads it: no errors.
inline void ExpectCheckClean(const std::filesystem::path& dir, const std::string& engine) {
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
  ASSERT_TRUE(options.ok()) << options.status().message();
  Result<CheckReport> report = CheckFolder(dir.string(), *options);
  ASSERT_TRUE(report.ok()) << engine << ": " << report.status().message();
  for (const Finding& f : report->findings) {
    EXPECT_FALSE(f.error) << engine << ": " << f.message;
  }
  EXPECT_EQ(report->errors, 0) << engine;
}

// Each site's decision as `engine` decides the written folder: path → scheme name, or
// "unquantized".
inline std::map<std::string, std::string> Decisions(const std::filesystem::path& dir,
                                                    const std::string& engine) {
  std::map<std::string, std::string> out;
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
  EXPECT_TRUE(options.ok());
  if (!options.ok()) return out;
  Result<Model> model = OpenModel(dir.string(), *options);
  EXPECT_TRUE(model.ok()) << engine << ": " << model.status().message();
  if (!model.ok()) return out;
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  EXPECT_TRUE(layers.ok()) << layers.status().message();
  if (!layers.ok()) return out;
  for (const LayerDecision& d : *layers) {
    if (d.site->kind == SiteKind::kAttention) continue;
    out[d.site->checkpoint_path] = d.decision.kind == DecisionKind::kQuantized
                                       ? d.decision.scheme->CanonicalName()
                                       : std::string(DecisionKindName(d.decision.kind));
  }
  return out;
}

// Every quantized projection's fp64 reference dequantization (NVFP4 experts sharing one input
// global with the same projection of every expert), by module prefix, as `engine` reads the
// folder.
inline std::map<std::string, std::vector<double>> Dequantized(const std::filesystem::path& dir,
                                                              const std::string& engine) {
  std::map<std::string, std::vector<double>> out;
  Result<OpenOptions> options = OpenOptions::Parse(engine, "", "cpu");
  Result<Model> model = OpenModel(dir.string(), *options);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Checkpoint> checkpoint = Checkpoint::Open(dir);
  if (!model.ok() || !checkpoint.ok()) return out;
  Result<std::vector<LayerDecision>> layers = DecideAll(*model);
  EXPECT_TRUE(layers.ok());
  for (const LayerDecision& d : *layers) {
    if (d.decision.kind != DecisionKind::kQuantized || d.site->kind == SiteKind::kAttention) {
      continue;
    }
    if (d.site->kind != SiteKind::kMoe) {
      for (const std::string& prefix : LegPrefixes(*d.site)) {
        Result<ReferenceLayer> ref =
            DequantizeReference(*checkpoint, *d.decision.scheme, prefix, {prefix}, false);
        EXPECT_TRUE(ref.ok()) << ref.status().message();
        if (ref.ok()) out[prefix] = ref->weight;
      }
      continue;
    }
    for (size_t leg = 0; leg < d.site->legs.size(); ++leg) {
      std::vector<std::string> peers;  // the projection in every expert
      for (int64_t e = 0; e < d.site->experts; ++e) peers.push_back(d.site->ExpertLegPath(e, leg));
      for (const std::string& prefix : peers) {
        Result<ReferenceLayer> ref = DequantizeExpertReference(*checkpoint, *d.decision.scheme,
                                                               prefix, prefix, peers, false);
        EXPECT_TRUE(ref.ok()) << ref.status().message();
        if (ref.ok()) out[prefix] = ref->weight;
      }
    }
  }
  return out;
}

}  // namespace quantpath::testing
