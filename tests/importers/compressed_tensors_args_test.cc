// compressed-tensors QuantizationArgs / QuantizationScheme: every validation rule of the library
// (quant_args.py validate_model_after and field validators, quant_scheme.py), the strategy → IR
// mapping, presets and formats.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "src/importers/compressed_tensors.h"

namespace quantpath {
namespace {

Result<ct::Args> Args(std::string_view json) {
  Result<Json> parsed = ParseJson(json, "config.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  return ct::ParseArgs(*parsed, "config.json");
}

void ExpectRejected(std::string_view json, std::string_view needle) {
  Result<ct::Args> a = Args(json);
  ASSERT_FALSE(a.ok()) << json;
  EXPECT_NE(a.status().message().find(needle), std::string::npos) << a.status().message();
}

TEST(CtArgs, DefaultsAreTheLibrarys) {
  Result<ct::Args> a = Args("{}");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->num_bits, 8);
  EXPECT_FALSE(a->is_float);
  EXPECT_TRUE(a->symmetric);
  EXPECT_EQ(a->strategy, ct::Strategy::kTensor);
  EXPECT_TRUE(a->strategy_inferred);
  EXPECT_EQ(a->dynamic, Dynamic::kStatic);
}

TEST(CtArgs, StrategyIsInferredFromGroupSize) {
  EXPECT_EQ(Args(R"({"group_size": 128})")->strategy, ct::Strategy::kGroup);
  EXPECT_EQ(Args(R"({"group_size": -1})")->strategy, ct::Strategy::kChannel);
  EXPECT_EQ(Args(R"({"group_size": null})")->strategy, ct::Strategy::kTensor);
  ExpectRejected(R"({"group_size": 0})", "use group_size > 0");
  ExpectRejected(R"({"group_size": -2})", "invalid group_size -2");
}

TEST(CtArgs, TypeAndStrategyAreCaseInsensitive) {
  Result<ct::Args> a = Args(R"({"type": "FLOAT", "strategy": "Channel"})");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->is_float);
  EXPECT_EQ(a->strategy, ct::Strategy::kChannel);
  ExpectRejected(R"({"type": "fp"})", "type must be \"int\" or \"float\"");
  ExpectRejected(R"({"strategy": "row"})", "unknown strategy \"row\"");
}

TEST(CtArgs, TokenNeedsDynamic) {
  ExpectRejected(R"({"strategy": "token"})", "needs dynamic: true");
  EXPECT_TRUE(Args(R"({"strategy": "token", "dynamic": true})").ok());
}

TEST(CtArgs, GroupStrategiesNeedAPositiveGroupSize) {
  ExpectRejected(R"({"strategy": "group"})", "requires a positive group_size");
  ExpectRejected(R"({"strategy": "tensor_group", "type": "float", "num_bits": 4})",
                 "requires a positive group_size");
  ExpectRejected(R"({"strategy": "channel", "group_size": 64})",
                 "group_size 64 requires strategy \"group\" or \"tensor_group\"");
}

TEST(CtArgs, BlockStrategyAndBlockStructureGoTogether) {
  ExpectRejected(R"({"strategy": "block"})", "requires block_structure");
  ExpectRejected(R"({"strategy": "tensor", "block_structure": [128, 128]})",
                 "block_structure requires strategy \"block\"");
  Result<ct::Args> legacy = Args(R"({"strategy": "block", "block_structure": "64x32"})");
  ASSERT_TRUE(legacy.ok()) << legacy.status().message();
  EXPECT_EQ((*legacy->block_structure)[0], 64);
  EXPECT_EQ((*legacy->block_structure)[1], 32);
  ExpectRejected(R"({"strategy": "block", "block_structure": [128]})", "invalid block_structure");
  ExpectRejected(R"({"strategy": "block", "block_structure": [0, 128]})",
                 "invalid block_structure");
}

TEST(CtArgs, ActOrderAliasesAndRule) {
  EXPECT_EQ(Args(R"({"group_size": 128, "actorder": true})")->actorder, ct::ActOrder::kGroup);
  EXPECT_EQ(Args(R"({"group_size": 128, "actorder": "dynamic"})")->actorder, ct::ActOrder::kGroup);
  EXPECT_EQ(Args(R"({"actorder": "static"})")->actorder, ct::ActOrder::kWeight);
  EXPECT_EQ(Args(R"({"actorder": false})")->actorder, ct::ActOrder::kNone);
  ExpectRejected(R"({"strategy": "channel", "actorder": "group"})",
                 "actorder \"group\" requires strategy");
  ExpectRejected(R"({"actorder": "random"})", "actorder must be");
}

TEST(CtArgs, DynamicNeedsAnActivationStrategyAndLocalNeedsTensorGroup) {
  ExpectRejected(R"({"strategy": "channel", "dynamic": true})",
                 "dynamic quantization needs strategy");
  ExpectRejected(R"({"group_size": 16, "dynamic": "local"})",
                 "\"local\" is only supported for strategy tensor_group");
  Result<ct::Args> local = Args(
      R"({"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16,
          "dynamic": "LOCAL"})");
  ASSERT_TRUE(local.ok()) << local.status().message();
  EXPECT_EQ(local->dynamic, Dynamic::kLocal);
  ExpectRejected(R"({"dynamic": "sometimes"})", "dynamic must be true, false or \"local\"");
}

TEST(CtArgs, ExtraFieldsAndTorchDtypesAreChecked) {
  ExpectRejected(R"({"bits": 4})", "QuantizationArgs has no field \"bits\"");
  ExpectRejected(R"({"scale_dtype": "torch.float7"})", "unknown torch dtype \"torch.float7\"");
  Result<ct::Args> a = Args(R"({"scale_dtype": "torch.float8_e4m3fn", "zp_dtype": "int8",
                                "observer": "mse", "observer_kwargs": {}})");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(*a->scale_dtype, "float8_e4m3fn");
  EXPECT_EQ(*a->observer, "mse");
  EXPECT_NE(ct::ArgsExtras(*a).find("observer mse"), std::string::npos);
  ExpectRejected(R"({"observer_kwargs": []})", "observer_kwargs must be an object");
  ExpectRejected(R"({"num_bits": 0})", "num_bits must be positive");
}

TEST(CtArgs, ErrorsNameTheFileAndPointer) {
  Result<Json> parsed =
      ParseJson(R"({"quantization_config": {"w": {"strategy": "token"}}})", "config.json");
  ASSERT_TRUE(parsed.ok());
  Result<ct::Args> a =
      ct::ParseArgs(*parsed->Find("quantization_config")->Find("w"), "config.json");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("config.json#/quantization_config/w"), std::string::npos)
      << a.status().message();
}

TensorQuant Tensor(std::string_view json, SourceLayout layout = SourceLayout::kDense) {
  Result<ct::Args> a = Args(json);
  EXPECT_TRUE(a.ok()) << a.status().message();
  Result<TensorQuant> t = ct::ToTensorQuant(*a, layout);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : TensorQuant{};
}

TEST(CtArgs, EveryStrategyMapsToItsGranularity) {
  EXPECT_EQ(Tensor(R"({"type": "float"})").granularity, Granularity::kPerTensor);
  EXPECT_EQ(Tensor(R"({"type": "float", "strategy": "channel"})").granularity,
            Granularity::kPerChannel);
  TensorQuant g = Tensor(R"({"num_bits": 4, "group_size": 128})");
  EXPECT_EQ(g.granularity, Granularity::kGroup);
  EXPECT_EQ(*g.group_size, 128);
  EXPECT_EQ(g.dtype, QDType::kINT4);
  TensorQuant b = Tensor(R"({"type": "float", "strategy": "block", "block_structure": [128, 64]})");
  EXPECT_EQ(b.granularity, Granularity::kBlock);
  EXPECT_EQ((*b.block_shape)[1], 64);
  EXPECT_EQ(Tensor(R"({"strategy": "token", "dynamic": true})").granularity,
            Granularity::kPerToken);
  TensorQuant nv = Tensor(R"({"num_bits": 4, "type": "float", "strategy": "tensor_group",
                              "group_size": 16})");
  EXPECT_EQ(nv.dtype, QDType::kNVFP4);
  EXPECT_EQ(nv.granularity, Granularity::kTensorGroup);
  EXPECT_TRUE(nv.micro_scaled);
  EXPECT_EQ(Tensor(R"({"type": "float", "strategy": "attn_head"})").granularity,
            Granularity::kAttnHead);
}

TEST(CtArgs, FloatWidthsAndMicroscaling) {
  EXPECT_EQ(Tensor(R"({"type": "float"})").dtype, QDType::kFP8E4M3);
  EXPECT_EQ(Tensor(R"({"num_bits": 4, "type": "float", "group_size": 32})").dtype, QDType::kMXFP4);
  EXPECT_EQ(
      Tensor(R"({"num_bits": 8, "type": "float", "group_size": 32, "scale_dtype": "uint8"})").dtype,
      QDType::kMXFP8);
  EXPECT_EQ(Tensor(R"({"num_bits": 8, "type": "float", "group_size": 32})").dtype,
            QDType::kFP8E4M3);
  Result<TensorQuant> fp4 =
      ct::ToTensorQuant(*Args(R"({"num_bits": 4, "type": "float"})"), SourceLayout::kDense);
  EXPECT_FALSE(fp4.ok());
  Result<TensorQuant> int16 = ct::ToTensorQuant(*Args(R"({"num_bits": 16})"), SourceLayout::kDense);
  ASSERT_FALSE(int16.ok());
  EXPECT_EQ(int16.status().code(), ErrorCode::kUnsupported);
}

TEST(CtArgs, LoadFactsFollowTheFormatAndArgs) {
  TensorQuant asym = Tensor(R"({"num_bits": 4, "group_size": 128, "symmetric": false,
                                "actorder": "group"})",
                            SourceLayout::kCtPackQuantized);
  EXPECT_EQ(asym.load.layout, SourceLayout::kCtPackQuantized);
  EXPECT_EQ(asym.load.zero_point, ZeroPointConvention::kStored);
  EXPECT_TRUE(asym.load.act_order);
  TensorQuant weight_order = Tensor(R"({"num_bits": 4, "group_size": 128, "actorder": "weight"})",
                                    SourceLayout::kCtPackQuantized);
  EXPECT_FALSE(weight_order.load.act_order);  // "weight" only changes calibration
  TensorQuant scaled = Tensor(R"({"num_bits": 4, "type": "float", "strategy": "tensor_group",
                                  "group_size": 16, "scale_dtype": "float8_e4m3fn"})",
                              SourceLayout::kCtNvfp4PackQuantized);
  EXPECT_EQ(scaled.load.scale_dtype, QDType::kFP8E4M3);
}

TEST(CtFormats, KnownFormatsAndInference) {
  EXPECT_EQ(ct::FindFormat("pack-quantized")->layout, SourceLayout::kCtPackQuantized);
  EXPECT_EQ(ct::FindFormat("int-quantized")->layout, SourceLayout::kCtNaiveQuantized);
  EXPECT_EQ(ct::FindFormat("float-quantized")->layout, SourceLayout::kCtFloatQuantized);
  EXPECT_EQ(ct::FindFormat("nvfp4-pack-quantized")->layout, SourceLayout::kCtNvfp4PackQuantized);
  EXPECT_EQ(ct::FindFormat("mxfp4-pack-quantized")->layout, SourceLayout::kCtMxfp4PackQuantized);
  EXPECT_EQ(ct::FindFormat("mxfp8-quantized")->layout, SourceLayout::kCtFloatQuantized);
  EXPECT_FALSE(ct::FindFormat("marlin-24")->modelled);
  EXPECT_EQ(ct::FindFormat("zip-quantized"), nullptr);
  EXPECT_EQ(ct::InferFormat(*Args(R"({"num_bits": 4, "group_size": 128})")), "pack-quantized");
  EXPECT_EQ(ct::InferFormat(*Args(R"({"num_bits": 8})")), "int-quantized");
  EXPECT_EQ(ct::InferFormat(*Args(R"({"type": "float"})")), "float-quantized");
}

Result<ct::Group> Group(std::string_view name, std::string_view json, bool native = true) {
  Result<Json> parsed = ParseJson(json, "config.json");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  ct::GroupReading reading;
  if (!native) reading = {false, false, true, false};
  return ct::ParseGroup(std::string(name), *parsed, "config.json", reading);
}

TEST(CtGroups, SchemeValidation) {
  EXPECT_FALSE(Group("g", R"({"weights": {}})").ok());  // no targets
  Result<ct::Group> channel_input =
      Group("g", R"({"targets": ["Linear"], "input_activations": {"strategy": "channel"}})");
  ASSERT_FALSE(channel_input.ok());
  EXPECT_NE(channel_input.status().message().find("not supported for activation quantization"),
            std::string::npos);
  EXPECT_FALSE(Group("g", R"({"targets": ["Linear"], "input_activations":
                              {"group_size": 128, "actorder": "group"}})")
                   .ok());
  EXPECT_FALSE(Group("g", R"({"targets": ["Linear"], "output_activations":
                              {"actorder": "weight"}})")
                   .ok());
  Result<ct::Group> mixed = Group("g", R"({"targets": ["Linear"], "format": "mixed-precision"})");
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("mixed-precision"), std::string::npos);
  EXPECT_FALSE(Group("g", R"({"targets": ["Linear"], "weight": {}})").ok());  // extra field
}

TEST(CtGroups, PresetsExpandInTheLibraryOnly) {
  Result<ct::Group> w4 = Group("W4A16", R"(["Linear"])");
  ASSERT_TRUE(w4.ok()) << w4.status().message();
  EXPECT_TRUE(w4->preset);
  EXPECT_EQ(w4->targets[0].value, "Linear");
  EXPECT_EQ(w4->weights->num_bits, 4);
  EXPECT_EQ(*w4->weights->group_size, 128);
  EXPECT_FALSE(w4->input.has_value());
  Result<ct::Group> fp8 = Group("fp8_dynamic", R"(["re:.*proj$"])");
  ASSERT_TRUE(fp8.ok()) << fp8.status().message();
  EXPECT_EQ(fp8->input->strategy, ct::Strategy::kToken);
  EXPECT_TRUE(Group("W4A8", R"(["Linear"])")->input.has_value());
  EXPECT_FALSE(Group("W8A4", R"(["Linear"])").ok());  // weight bits above activation bits
  EXPECT_FALSE(Group("group_0", R"(["Linear"])").ok());
  EXPECT_FALSE(Group("W4A16", R"(["Linear"])", /*native=*/false).ok());
}

TEST(CtGroups, EnginesNeedWeights) {
  Result<ct::Group> no_weights =
      Group("g", R"({"targets": ["Linear"], "input_activations": {"type": "float"}})", false);
  ASSERT_FALSE(no_weights.ok());
  EXPECT_NE(no_weights.status().message().find("has no weights"), std::string::npos);
  Result<ct::Group> input_only =
      Group("g", R"({"targets": ["Linear"], "input_activations": {"type": "float"}})");
  ASSERT_TRUE(input_only.ok()) << input_only.status().message();
  EXPECT_FALSE(input_only->weights.has_value());
}

}  // namespace
}  // namespace quantpath
