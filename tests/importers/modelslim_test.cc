// The ModelSlim importer: quant_model_description.json keys, types, aliases, fused legs, MoE w13 /
// w2, ignore and the nested packed_modules_mapping, in the native and SGLang dialects, decided with
// DecideSite on hand-built sites. No published description is in the corpus; the descriptions
// here are synthetic, written after seed 003 and the recorded SGLang cases.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "quantpath/importers.h"
#include "quantpath/planner.h"
#include "src/importers/importer_list.h"

namespace quantpath {
namespace {

Dialect D(std::string_view name) { return *ParseDialect(name); }

ConfigSources Sources(std::string_view description) {
  Result<Json> root = ParseJson(description, "quant_model_description.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"quant_model_description.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

Result<QuantPlan> Build(std::string_view description, std::string_view dialect) {
  return ModelSlimImporter()->BuildPlan(Sources(description), D(dialect));
}

LayerSite Site(std::string path, std::vector<std::string> legs = {},
               SiteKind kind = SiteKind::kLinear) {
  LayerSite s;
  s.path = std::move(path);
  s.kind = kind;
  for (std::string& leg : legs) s.legs.push_back({std::move(leg), 0});
  return s;
}
LayerSite Qkv(std::string layer) {
  return Site(layer + ".self_attn.qkv_proj", {"q_proj", "k_proj", "v_proj"});
}
LayerSite Experts(std::string parent) { return Site(parent, {}, SiteKind::kMoe); }

std::string Kind(const QuantPlan& plan, const LayerSite& site) {
  return std::string(DecisionKindName(DecideSite(plan, site).kind));
}

constexpr std::string_view kMapping =
    R"("packed_modules_mapping": {"model": {"qkv_proj": ["q_proj", "k_proj", "v_proj"],
                                            "gate_up_proj": ["gate_proj", "up_proj"]}})";

// Layer 0 attention with the given q/k/v types, plus o_proj W8A8_DYNAMIC and the mapping.
std::string Attention(std::string_view q, std::string_view k, std::string_view v) {
  return "{\"model.layers.0.self_attn.q_proj.weight\": \"" + std::string(q) +
         "\", \"model.layers.0.self_attn.k_proj.weight\": \"" + std::string(k) +
         "\", \"model.layers.0.self_attn.v_proj.weight\": \"" + std::string(v) +
         "\", \"model.layers.0.self_attn.o_proj.weight\": \"W8A8_DYNAMIC\", "
         "\"model.layers.0.self_attn.o_proj.weight_scale\": \"W8A8_DYNAMIC\", " +
         std::string(kMapping) + "}";
}

TEST(ModelSlimTypes, EveryTypeHasItsScheme) {
  struct Case {
    std::string_view type;
    QDType weight;
    QDType input;
    Dynamic dynamic;
  };
  for (const Case& c : {Case{"W8A8", QDType::kINT8, QDType::kINT8, Dynamic::kStatic},
                        Case{"W8A8_DYNAMIC", QDType::kINT8, QDType::kINT8, Dynamic::kDynamic},
                        Case{"W4A4_DYNAMIC", QDType::kINT4, QDType::kINT4, Dynamic::kDynamic},
                        Case{"W4A8_DYNAMIC", QDType::kINT4, QDType::kINT8, Dynamic::kDynamic},
                        Case{"W8A8_MXFP8", QDType::kMXFP8, QDType::kMXFP8, Dynamic::kDynamic},
                        Case{"W4A8_MXFP", QDType::kMXFP4, QDType::kMXFP8, Dynamic::kDynamic},
                        Case{"W4A4_MXFP4", QDType::kMXFP4, QDType::kMXFP4, Dynamic::kDynamic}}) {
    Result<QuantPlan> plan = Build(
        "{\"model.layers.0.mlp.down_proj.weight\": \"" + std::string(c.type) + "\"}", "native");
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    Decision d = DecideSite(*plan, Site("model.layers.0.mlp.down_proj"));
    ASSERT_EQ(d.kind, DecisionKind::kQuantized) << c.type;
    EXPECT_EQ(d.scheme->weight.dtype, c.weight) << c.type;
    EXPECT_EQ(d.scheme->input->dtype, c.input) << c.type;
    EXPECT_EQ(d.scheme->input->dynamic, c.dynamic) << c.type;
    EXPECT_EQ(d.scheme->weight.load.layout, SourceLayout::kModelSlim) << c.type;
  }
  Result<QuantPlan> grouped = Build(
      R"({"group_size": 256, "model.layers.0.mlp.down_proj.weight": "W4A8_DYNAMIC"})", "native");
  EXPECT_EQ(*DecideSite(*grouped, Site("model.layers.0.mlp.down_proj")).scheme->weight.group_size,
            256);
  Result<QuantPlan> unknown =
      Build(R"({"model.layers.0.mlp.down_proj.weight": "W2A16"})", "native");
  Decision d = DecideSite(*unknown, Site("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_NE(d.detail.find("quant_model_description.json#/model.layers.0.mlp.down_proj.weight"),
            std::string::npos)
      << d.detail;
}

TEST(ModelSlimNative, FusedLegsAndMissingKeys) {
  Result<QuantPlan> same = Build(Attention("W8A8", "W8A8", "W8A8"), "native");
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(Kind(*same, Qkv("model.layers.0")), "quantized");
  Result<QuantPlan> floats = Build(Attention("FLOAT", "FLOAT", "FLOAT"), "native");
  EXPECT_EQ(Kind(*floats, Qkv("model.layers.0")), "unquantized");
  Result<QuantPlan> mixed =
      Build(Attention("W4A4_DYNAMIC", "W8A8_DYNAMIC", "W8A8_DYNAMIC"), "native");
  EXPECT_EQ(Kind(*mixed, Qkv("model.layers.0")), "error");
  Decision missing = DecideSite(*same, Site("model.layers.0.mlp.down_proj"));
  EXPECT_EQ(missing.kind, DecisionKind::kError);
  EXPECT_NE(missing.detail.find("no \"model.layers.0.mlp.down_proj.weight\" entry"),
            std::string::npos);
  EXPECT_EQ(Kind(*same, Site("lm_head", {}, SiteKind::kLmHead)), "error");
}

TEST(ModelSlimNative, AliasesForMoeBlocksAndLanguageModel) {
  constexpr std::string_view kKeys = R"({
    "model.layers.0.block_sparse_moe.shared_experts.down_proj.weight": "W8A8_DYNAMIC",
    "model.language_model.layers.0.self_attn.o_proj.weight": "W4A4_DYNAMIC",
    "model.layers.1.mlp.down_proj.weight": "FLOAT"})";
  Result<QuantPlan> native = Build(kKeys, "native");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(Kind(*native, Site("model.layers.0.mlp.shared_experts.down_proj")), "quantized");
  EXPECT_EQ(Kind(*native, Site("model.layers.0.self_attn.o_proj")), "quantized");
  EXPECT_EQ(Kind(*native, Site("model.language_model.layers.1.mlp.down_proj")), "unquantized");
  EXPECT_EQ(Kind(*native, Site("model.layers.1.block_sparse_moe.down_proj")), "unquantized");
  // SGLang @b39fe43c has no aliases: the keys are looked up verbatim.
  Result<QuantPlan> sglang = Build(kKeys, "sglang@helpers");
  Decision d = DecideSite(*sglang, Site("model.layers.0.mlp.shared_experts.down_proj"));
  EXPECT_EQ(d.kind, DecisionKind::kError);
  EXPECT_EQ(d.detail, "NotImplementedError: No modelslim compatible scheme was found.");
}

constexpr std::string_view kMoe = R"({
  "model.layers.1.mlp.experts.0.gate_proj.weight": "W4A8_DYNAMIC",
  "model.layers.1.mlp.experts.0.up_proj.weight": "W4A8_DYNAMIC",
  "model.layers.1.mlp.experts.0.down_proj.weight": "W8A8_DYNAMIC",
  "model.layers.1.mlp.experts.1.gate_proj.weight": "W4A8_DYNAMIC",
  "model.layers.1.mlp.experts.1.up_proj.weight": "W8A8_DYNAMIC",
  "model.layers.1.mlp.experts.1.down_proj.weight": "W8A8_DYNAMIC",
  "model.layers.2.mlp.experts.0.gate_proj.weight": "W8A8_DYNAMIC",
  "model.layers.2.mlp.experts.0.up_proj.weight": "W4A8_DYNAMIC",
  "model.layers.2.mlp.experts.0.down_proj.weight": "W8A8_DYNAMIC",
  "model.layers.3.block_sparse_moe.experts.0.w1.weight": "W8A8_DYNAMIC",
  "model.layers.3.block_sparse_moe.experts.0.w3.weight": "W8A8_DYNAMIC",
  "model.layers.3.block_sparse_moe.experts.0.w2.weight": "W8A8_DYNAMIC",
  "model.layers.4.mlp.experts.0.gate_proj.weight": "FLOAT",
  "model.layers.4.mlp.experts.0.up_proj.weight": "FLOAT",
  "model.layers.4.mlp.experts.0.down_proj.weight": "FLOAT"})";

TEST(ModelSlimMoe, W13MustAgreeNamingBothKeys) {
  Result<QuantPlan> native = Build(kMoe, "native");
  ASSERT_TRUE(native.ok()) << native.status().message();
  // Expert 1 disagrees with expert 0 on up_proj: native reads every expert.
  Decision one = DecideSite(*native, Experts("model.layers.1.mlp.experts"));
  EXPECT_EQ(one.kind, DecisionKind::kError);
  EXPECT_NE(one.detail.find("\"model.layers.1.mlp.experts.0.gate_proj.weight\" is W4A8_DYNAMIC"),
            std::string::npos)
      << one.detail;
  EXPECT_NE(one.detail.find("\"model.layers.1.mlp.experts.1.up_proj.weight\" is W8A8_DYNAMIC"),
            std::string::npos)
      << one.detail;
  EXPECT_EQ(Kind(*native, Experts("model.layers.2.mlp.experts")), "error");
  EXPECT_EQ(Kind(*native, Experts("model.layers.3.mlp.experts")), "quantized");  // w1/w3 + alias
  EXPECT_EQ(Kind(*native, Experts("model.layers.4.mlp.experts")), "unquantized");
  EXPECT_EQ(Kind(*native, Experts("model.layers.9.mlp.experts")), "error");

  Result<QuantPlan> sglang = Build(kMoe, "sglang@helpers");
  ASSERT_TRUE(sglang.ok()) << sglang.status().message();
  Decision first = DecideSite(*sglang, Experts("model.layers.1.mlp.experts"));
  ASSERT_EQ(first.kind, DecisionKind::kQuantized);  // SGLang reads expert 0 only
  EXPECT_EQ(first.detail, "ModelSlimFusedMoEMethod[W13=W4A8_DYNAMIC W2=W8A8_DYNAMIC]");
  EXPECT_EQ(DecideSite(*sglang, Experts("model.layers.2.mlp.experts")).detail,
            "ValueError: Mismatched ModelSlim quantization for W13 in layer "
            "model.layers.2.mlp.experts: {'model.layers.2.mlp.experts.0.gate_proj.weight': "
            "'W8A8_DYNAMIC', 'model.layers.2.mlp.experts.0.up_proj.weight': 'W4A8_DYNAMIC'}");
  EXPECT_EQ(DecideSite(*sglang, Experts("model.layers.4.mlp.experts")).detail,
            "ValueError: Unsupported ModelSlim MoE schemes for layer model.layers.4.mlp.experts: "
            "W13='FLOAT', W2='FLOAT'");
  EXPECT_EQ(DecideSite(*sglang, Experts("model.layers.9.mlp.experts")).detail,
            "ValueError: Missing ModelSlim MoE quantization description for layer "
            "model.layers.9.mlp.experts: (gate_proj/up_proj=missing, down_proj=missing); "
            "(w1/w3=missing, w2=missing)");
}

TEST(ModelSlimSglang, FirstShardLookupAndFloatAgreement) {
  Result<QuantPlan> w4 = Build(Attention("W4A4_DYNAMIC", "W8A8", "W8A8"), "sglang@helpers");
  ASSERT_TRUE(w4.ok()) << w4.status().message();
  Decision d = DecideSite(*w4, Qkv("model.layers.0"));
  ASSERT_EQ(d.kind, DecisionKind::kQuantized);  // other shards' types are never compared
  EXPECT_EQ(d.detail,
            "ModelSlimLinearMethod[ModelSlimW4A4Int4 key=model.layers.0.self_attn.q_proj.weight]");
  Result<QuantPlan> partial = Build(Attention("FLOAT", "W8A8", "W8A8"), "sglang@helpers");
  EXPECT_EQ(DecideSite(*partial, Qkv("model.layers.0")).detail,
            "ValueError: Detected some but not all shards of model.layers.0.self_attn.qkv_proj "
            "are quantized. All shards of fused layers to have the same precision.");
  Result<QuantPlan> mx =
      Build(Attention("W8A8_MXFP8", "W8A8_MXFP8", "W8A8_MXFP8"), "sglang@helpers");
  EXPECT_EQ(Kind(*mx, Qkv("model.layers.0")), "error");  // not in the recorded version's table
  EXPECT_EQ(Kind(*mx, Site("lm_head", {}, SiteKind::kLmHead)), "unquantized");
}

TEST(ModelSlimSglang, MappingSectionsComeFromTheDescription) {
  constexpr std::string_view kVisual = R"({
    "model.visual.blocks.0.attn.q.weight": "W8A8_DYNAMIC",
    "model.visual.blocks.0.attn.k.weight": "W8A8_DYNAMIC",
    "model.visual.blocks.0.attn.v.weight": "W8A8_DYNAMIC",
    "model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC",
    "packed_modules_mapping": {"visual": {"qkv": ["q", "k", "v"]}}})";
  Result<QuantPlan> plan = Build(kVisual, "sglang@helpers");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // The site has no legs of its own: the description's visual section fuses q, k, v.
  EXPECT_EQ(Kind(*plan, Site("model.visual.blocks.0.attn.qkv")), "quantized");
  // No "model" section: qkv_proj is looked up as itself and has no key.
  EXPECT_EQ(Kind(*plan, Qkv("model.layers.0")), "error");
  Result<QuantPlan> flat = Build(
      R"({"model.layers.0.self_attn.q_proj.weight": "W8A8_DYNAMIC",
          "packed_modules_mapping": {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}})",
      "sglang@helpers");
  EXPECT_EQ(Kind(*flat, Qkv("model.layers.0")), "error");
}

TEST(ModelSlimIgnore, CaseInsensitiveSubstringsAndRegexes) {
  std::string text = Attention("W8A8", "W8A8", "W8A8");
  text.insert(1, R"("ignore": ["O_PROJ", "re:.*k_proj"], )");
  for (std::string_view dialect : {"native", "sglang@helpers"}) {
    Result<QuantPlan> plan = Build(text, dialect);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_EQ(Kind(*plan, Site("model.layers.0.self_attn.o_proj")), "unquantized") << dialect;
  }
  // SGLang hands should_ignore_layer the nested mapping, so the fused site is checked as itself;
  // native resolves its legs, and k_proj alone is ignored.
  EXPECT_EQ(Kind(*Build(text, "sglang@helpers"), Qkv("model.layers.0")), "quantized");
  EXPECT_EQ(Kind(*Build(text, "native"), Qkv("model.layers.0")), "error");
}

TEST(ModelSlimDetect, TheDescriptionFile) {
  const Importer* importer = ModelSlimImporter();
  EXPECT_TRUE(importer->Detect(Sources("{}")));
  std::vector<SourceFile> files;
  files.push_back({"config.json",
                   {},
                   *ParseJson(R"({"quantization_config":
      {"quant_method": "fp8"}})",
                              "config.json")});
  files.push_back({"quant_model_description.json", {}, Json::Object()});
  EXPECT_FALSE(importer->Detect(ConfigSources::FromMemory(std::move(files))));
  EXPECT_FALSE(Build("{}", "vllm@helpers").ok());
  EXPECT_FALSE(Build(R"({"a.weight": 8})", "native").ok());
}

}  // namespace
}  // namespace quantpath
