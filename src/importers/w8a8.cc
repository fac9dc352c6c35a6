// SGLang's own W8A8 methods: `quant_method: "w8a8_int8"` (W8A8Int8Config) and
// `quant_method: "w8a8_fp8"` (W8A8Fp8Config), also chosen with `--quantization w8a8_int8|w8a8_fp8`
// over a compressed-tensors checkpoint (SGLang's ModelConfig lists both as compatible with
// "compressed-tensors"; the config dict is then read by these classes, not by compressed-tensors).
//
// Goals: SGLang 0.5.23 w8a8_int8.py / w8a8_fp8.py as the reference; the other dialects reject the
// method, since neither vLLM nor transformers has it. Non-goals: the CPU (AMX) and ROCm (fnuz)
// paths, which change kernels, not decisions.
//
// Fields read:
//   - w8a8_int8: `ignore` (SGLang compressed-tensors should_ignore_layer, before the layer type is
//     looked at) and `is_dynamic` (read by the config and used by nothing: W8A8Int8LinearMethod
//     always quantizes activations per token at run time, and the MoE method passes no input
//     scales, so quantpath plans dynamic activations whatever it says and notes a false value).
//   - w8a8_fp8: `quant_method` only. There is no skip list: every LinearBase and FusedMoE is
//     quantized (a compressed-tensors `ignore` is not read).
// Schemes: w8a8_int8 → int8 weights per output channel (`weight` + `weight_scale` [N, 1], the
// compressed-tensors int-quantized layout), int8 activations per token, dynamic, symmetric.
// w8a8_fp8 → fp8 e4m3 weights per output channel (`weight_scale` [N, 1]), fp8 activations per
// token, dynamic (CUTLASS on the capability-9.0 device the cases assume). A quant_method that
// contains neither "compressed-tensors" nor "w8a8_fp8" (e.g. "compressed_tensors", which
// SGLang accepts as compatible) means a bf16 checkpoint quantized per channel at load.
#include <array>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "quantpath/importers.h"
#include "src/importers/common.h"
#include "src/importers/gptq_family.h"

namespace quantpath {
namespace {

enum class W8a8Kind : uint8_t { kInt8, kFp8 };

// What a dialect does with the method: SGLang reads it; the others have no such method.
struct W8a8Dialect {
  bool supported;
  ShouldIgnoreSemantics ignore;  // w8a8_int8's `ignore` (SGLang rows only)
};

constexpr std::string_view kSuffixWords =
    "the name, or a dotted suffix of it (check_equal_or_regex_match)";
constexpr std::string_view kSubstringWords = "case-insensitive substring";

constexpr std::array<DialectRow<W8a8Dialect>, 5> kDialects = {{
    {DialectId::kNative, {false, {}}},
    {DialectId::kVllmHelpers, {false, {}}},
    // sglang@helpers: the code the recorded compressed-tensors cases came from (@4e75f468): plain
    // entries are case-insensitive substrings, and the text still says "vLLM".
    {DialectId::kSglangHelpers,
     {true,
      {MatchKind::kSubstringIgnoreCase, kSubstringWords,
       "ValueError: Found a different quantization schemes for {legs} in {prefix}. vLLM requires "
       "all to use the same scheme."}}},
    {DialectId::kVllm033, {false, {}}},
    {DialectId::kSglang0523,
     {true,
      {MatchKind::kDottedSuffix, kSuffixWords,
       "ValueError: Found different quantization schemes for {legs} in {prefix}. SGLang requires "
       "all to use the same scheme."}}},
}};
static_assert(CoversEveryDialect(kDialects));

// Per-method facts: names, engine classes, and the keys read.
struct W8a8Method {
  W8a8Kind kind;
  std::string_view name;
  std::string_view config_class;
  std::string_view linear_detail;
  std::string_view moe_detail;
};
constexpr W8a8Method kInt8{W8a8Kind::kInt8, "w8a8_int8", "W8A8Int8Config", "W8A8Int8LinearMethod",
                           "W8A8Int8MoEMethod"};
constexpr W8a8Method kFp8{W8a8Kind::kFp8, "w8a8_fp8", "W8A8Fp8Config", "W8A8Fp8LinearMethod",
                          "W8A8FP8MoEMethod"};

TensorQuant PerChannelWeight(QDType dtype, SourceLayout layout) {
  TensorQuant w;
  w.dtype = dtype;
  w.granularity = Granularity::kPerChannel;
  w.load.layout = layout;
  return w;
}

TensorQuant DynamicPerToken(QDType dtype) {
  TensorQuant in;
  in.dtype = dtype;
  in.granularity = Granularity::kPerToken;
  in.dynamic = Dynamic::kDynamic;
  return in;
}

// w8a8_int8's `is_dynamic` and `ignore`: the ignore group, with a note on is_dynamic.
Result<std::vector<RuleGroup>> Int8Groups(const Json& q, const std::string& file,
                                          const W8a8Dialect& row, std::vector<std::string>* notes) {
  // Neither engine class validates is_dynamic; any value other than true is worth a note.
  if (const Json* dynamic = q.Find("is_dynamic");
      dynamic != nullptr && !(dynamic->is_bool() && dynamic->bool_value())) {
    notes->push_back(
        fmt::format("{}: is_dynamic {} is read and unused: SGLang's W8A8Int8LinearMethod quantizes "
                    "activations per token at run time and the MoE method loads no input scales",
                    Where(file, *dynamic), ToJson(*dynamic)));
  }
  // W8A8Int8Config: quant_config.get("ignore", []), None counting as empty.
  QP_ASSIGN_OR_RETURN(auto entries, ReadEntryList(q, "ignore", file));
  SkipList list{"ignore", entries ? std::move(*entries) : std::vector<ListEntry>()};
  // should_ignore_layer runs before the layer type is looked at, so it decides every kind.
  return SglangShouldIgnoreGroups(list, row.ignore, {{kAllKinds, "UnquantizedLinearMethod"}});
}

class W8a8ImporterImpl : public Importer {
 public:
  explicit W8a8ImporterImpl(const W8a8Method& method) : method_(method) {}

  std::string_view name() const override { return method_.name; }

  // `--quantization w8a8_fp8` without a description: W8A8Fp8Config() (get_config_filenames() ==
  // []) is not fp8-serialized, so W8A8Fp8LinearMethod quantizes every layer per output channel at
  // load (per_token_group_quant_fp8 over the row where CUTLASS runs). W8A8Int8Config needs its
  // description.
  Result<std::optional<QuantPlan>> PlanWithoutDescription(const ConfigSources&,
                                                          const Dialect& dialect) const override {
    if (method_.kind != W8a8Kind::kFp8 || !RowFor(dialect, kDialects).supported) {
      return std::optional<QuantPlan>();
    }
    QuantScheme scheme;
    scheme.weight = PerChannelWeight(QDType::kFP8E4M3, SourceLayout::kDense);
    scheme.input = DynamicPerToken(QDType::kFP8E4M3);
    scheme.online = true;
    QuantPlan plan;
    plan.quant_method = std::string(method_.name);
    plan.dialect = dialect;
    SetActions(scheme, &plan);
    return std::optional<QuantPlan>(std::move(plan));
  }
  // SGLang's compatible_quantization_methods: w8a8 may be forced over a compressed-tensors
  // checkpoint.
  std::vector<std::string_view> forced_over() const override { return {"compressed-tensors"}; }

  bool Detect(const ConfigSources& sources) const override {
    // get_config_filenames() == []: only an embedded description names the method.
    std::optional<Located> embedded = sources.Embedded();
    if (!embedded || !embedded->value->is_object()) return false;
    return QuantMethod(*embedded->value) == method_.name;
  }

  Result<QuantPlan> BuildPlan(const ConfigSources& sources, const Dialect& dialect) const override {
    QP_ASSIGN_OR_RETURN(Located embedded, EmbeddedObject(sources, method_.name));
    const std::string& file = embedded.where.file;
    const Json& q = *embedded.value;
    const W8a8Dialect& row = RowFor(dialect, kDialects);
    if (!row.supported) {
      return Unsupported(fmt::format(
          "{}: {} is a quantization method of SGLang only ({}); {} has no such method. Plan it "
          "with --engine sglang@0.5.23",
          Where(file, q), method_.name, method_.config_class,
          dialect.engine == Engine::kVllm ? "vLLM" : "transformers (the native dialect)"));
    }
    QuantPlan plan;
    plan.quant_method = std::string(method_.name);
    plan.dialect = dialect;
    plan.sources.push_back(embedded.where);

    QuantScheme scheme;
    if (method_.kind == W8a8Kind::kInt8) {
      scheme.weight = PerChannelWeight(QDType::kINT8, SourceLayout::kCtNaiveQuantized);
      scheme.input = DynamicPerToken(QDType::kINT8);
      QP_ASSIGN_OR_RETURN(plan.groups, Int8Groups(q, file, row, &plan.notes));
    } else {
      // W8A8Fp8Config.from_config: the checkpoint holds fp8 weights exactly when quant_method
      // contains one of these; otherwise bf16 weights are quantized per channel at load.
      std::string method = QuantMethod(q).value_or("");
      bool serialized = method.find("compressed-tensors") != std::string::npos ||
                        method.find("w8a8_fp8") != std::string::npos;
      scheme.weight = PerChannelWeight(QDType::kFP8E4M3,
                                       serialized ? SourceLayout::kFp8Scale : SourceLayout::kDense);
      scheme.input = DynamicPerToken(QDType::kFP8E4M3);
      scheme.online = !serialized;
      if (const Json* ignore = q.FindNonNull("ignore")) {
        plan.notes.push_back(
            fmt::format("{}: not read (W8A8Fp8Config has no skip list)", Where(file, *ignore)));
      }
    }
    SetActions(scheme, &plan);
    return plan;
  }

 private:
  // Every linear layer and FusedMoE quantized with `scheme`. ParallelLMHead is not a LinearBase
  // and attention gets no method (None); the MoE router is built without a quantization config.
  void SetActions(const QuantScheme& scheme, QuantPlan* plan) const {
    plan->default_action = {
        ActionKind::kQuantize, scheme,
        fmt::format("{} quantizes every linear layer and FusedMoE", method_.config_class),
        fmt::format("{} ({} for experts)", method_.linear_detail, method_.moe_detail)};
    plan->linear = KindPolicy::kRules;
    plan->moe = KindPolicy::kRules;
    plan->lm_head = KindPolicy::kUnquantized;
    plan->router = KindPolicy::kUnquantized;
    plan->embedding = KindPolicy::kUnquantized;
  }

  const W8a8Method& method_;
};

}  // namespace

const Importer* W8a8Int8Importer() {
  static const W8a8ImporterImpl importer(kInt8);
  return &importer;
}

const Importer* W8a8Fp8Importer() {
  static const W8a8ImporterImpl importer(kFp8);
  return &importer;
}

}  // namespace quantpath
