// Each release's methods per platform it was recorded on (tests/data/oracle/releases/<release>/
// platforms/): QUANTIZATION_METHODS in the engine's order (vLLM: layers/quantization/__init__.py;
// SGLang: srt/layers/quantization/__init__.py, whose registry gains methods by platform at
// import), SGLang's AMX method gate, the formats recorded there, and the experts methods whose
// constructors find no kernel on the platform.
#include "src/importers/engine_methods.h"

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "fmt/format.h"

namespace quantpath {
namespace {

// An experts method whose constructor raises on the platform: it has no MoE kernel there.
struct ExpertsRefusal {
  std::string_view method;  // the class, as details name it before any "[…]"
  std::string_view error;
};

struct PlatformMethods {
  Platform platform;
  std::string_view methods;                    // QUANTIZATION_METHODS there
  std::span<const std::string_view> cpu_gate;  // empty: every registered method is accepted
  // The importers whose decisions were recorded there; empty: every one.
  std::span<const std::string_view> recorded = {};
  std::span<const ExpertsRefusal> experts_refused = {};
};

constexpr std::string_view kVllm033Methods =
    "['awq', 'auto_awq', 'fp8', 'fbgemm_fp8', 'fp_quant', 'modelopt', 'modelopt_fp4', "
    "'modelopt_mxfp8', 'modelopt_mixed', 'auto_gptq', 'gptq', 'gptq_marlin', 'awq_marlin', "
    "'humming', 'compressed-tensors', 'experts_int8', 'quark', 'moe_wna16', 'torchao', 'inc', "
    "'mxfp4', 'gpt_oss_mxfp4', 'deepseek_v4_fp8', 'online', 'fp8_per_tensor', 'fp8_per_block', "
    "'fp8_per_channel', 'int8_per_channel_weight_only', 'nvfp4_per_token', 'mxfp8']";
// 0.34 adds w4afp8 and the lut_b_moe / mxfp4_hadamard32 shorthands and drops fp_quant.
constexpr std::string_view kVllm034Methods =
    "['awq', 'auto_awq', 'fp8', 'w4afp8', 'fbgemm_fp8', 'modelopt', 'modelopt_fp4', "
    "'modelopt_mxfp8', 'modelopt_mixed', 'auto_gptq', 'gptq', 'gptq_marlin', 'awq_marlin', "
    "'humming', 'compressed-tensors', 'experts_int8', 'quark', 'moe_wna16', 'torchao', 'inc', "
    "'mxfp4', 'gpt_oss_mxfp4', 'deepseek_v4_fp8', 'online', 'fp8_per_tensor', 'fp8_per_block', "
    "'fp8_per_channel', 'int8_per_channel_weight_only', 'nvfp4_per_token', 'mxfp8', "
    "'lut_b_moe', 'mxfp4_hadamard32']";
// SGLang's base registry; CUDA and the CPU add mxfp4, the CPU then gptq (CPUGPTQConfig), the NPU
// gptq (GPTQAscendConfig) then mxfp4 (W4A4), MPS mlx_q4 and mlx_q8.
#define QP_SGLANG_0523_BASE                                                                  \
  "['fp8', 'mxfp8', 'minimax_m3_nvfp4', 'blockwise_int8', 'modelopt', 'modelopt_fp8', "      \
  "'modelopt_fp4', 'nvfp4_online', 'modelopt_mixed', 'w8a8_int8', 'w8a8_fp8', 'awq', "       \
  "'awq_marlin', 'bitsandbytes', 'gguf', 'gptq_marlin', 'moe_wna16', 'compressed-tensors', " \
  "'w4afp8', 'petit_nvfp4', 'quark', 'quark_mxfp4', 'auto-round', 'auto-round-int8', "       \
  "'modelslim', 'quark_int4fp8_moe', 'humming', 'mxfp_w4a8'"
constexpr std::string_view kSglang0523Cuda = QP_SGLANG_0523_BASE ", 'mxfp4']";
constexpr std::string_view kSglang0523Cpu = QP_SGLANG_0523_BASE ", 'mxfp4', 'gptq']";
constexpr std::string_view kSglang0523Npu = QP_SGLANG_0523_BASE ", 'gptq', 'mxfp4']";
constexpr std::string_view kSglang0523Mps = QP_SGLANG_0523_BASE ", 'mlx_q4', 'mlx_q8']";
#undef QP_SGLANG_0523_BASE

constexpr std::string_view kSglang0523CpuGate[] = {"fp8",  "w8a8_int8", "compressed-tensors", "awq",
                                                   "gptq", "mxfp4",     "auto-round"};

// compressed-tensors' NPU experts schemes are not reproduced yet.
constexpr std::string_view kSglang0523NpuRecorded[] = {
    "modelslim", "gptq", "awq", "fp8", "modelopt", "bitsandbytes", "w8a8_int8", "w8a8_fp8"};

constexpr std::string_view kNoWna16Experts =
    "NotImplementedError: No WNA16 MoE backend supports the deployment configuration.";
// vLLM 0.34 on a CPU: experts kernels exist for unquantized, fp8 and (with AMX) int4 / int8 /
// MXFP4.
constexpr ExpertsRefusal kVllm034CpuAmxExperts[] = {
    {"ModelOptNvFp4FusedMoE",
     "NotImplementedError: No NvFp4 MoE backend supports the deployment configuration."},
    {"CompressedTensorsW4A8Fp8MoEMethod",
     "NotImplementedError: No W4A8 MoE backend supports the deployment configuration: "
     "CutlassExpertsW4A8Fp8: kernel does not support current device cpu; "
     "BatchedHummingGroupedExperts: kernel does not support current device cpu; "
     "HummingGroupedExperts: kernel does not support current device cpu; HummingIndexedExperts: "
     "kernel does not support current device cpu"},
};
constexpr ExpertsRefusal kVllm034CpuExperts[] = {
    kVllm034CpuAmxExperts[0],
    kVllm034CpuAmxExperts[1],
    {"CompressedTensorsWNA16MoEMethod", kNoWna16Experts},
    {"AutoAWQMoEMethod", kNoWna16Experts},
    {"Mxfp4MoEMethod",
     "NotImplementedError: No MXFP4 MoE backend supports the deployment configuration."},
    {"Int8OnlineMoEMethod",
     "NotImplementedError: No Int8 MoE backend supports the deployment configuration "
     "(weight_key=QuantKey(i8,scale(f32,static,per_channel),symmetric), "
     "activation_key=QuantKey(i8,scale(f32,dynamic,per_token),symmetric)). Set "
     "`VLLM_LOGGING_LEVEL=DEBUG` to see per-backend unsupported reasons."},
};
// SGLang 0.5.23 off CUDA has no NVFP4 experts backend.
constexpr ExpertsRefusal kSglang0523OffCudaExperts[] = {
    {"ModelOptNvFp4FusedMoEMethod",
     "ValueError: Current platform does not support NVFP4 quantization with the selected MoE "
     "backend. Please use Blackwell and above, or use moe_runner_backend=marlin on SM80+."},
};

constexpr PlatformMethods kNoEngine[] = {{Platform::kCuda, "", {}}};
constexpr PlatformMethods kVllm033[] = {{Platform::kCuda, kVllm033Methods, {}}};
constexpr PlatformMethods kVllm034[] = {
    {Platform::kCuda, kVllm034Methods, {}},
    {Platform::kCpu, kVllm034Methods, {}, {}, kVllm034CpuExperts},
    {Platform::kCpuAmx, kVllm034Methods, {}, {}, kVllm034CpuAmxExperts},
};
constexpr PlatformMethods kSglang0523[] = {
    {Platform::kCuda, kSglang0523Cuda, {}},
    {Platform::kCpu, kSglang0523Cpu, {}, {}, kSglang0523OffCudaExperts},
    {Platform::kCpuAmx, kSglang0523Cpu, kSglang0523CpuGate, {}, kSglang0523OffCudaExperts},
    {Platform::kNpu, kSglang0523Npu, {}, kSglang0523NpuRecorded, kSglang0523OffCudaExperts},
    {Platform::kMps, kSglang0523Mps, {}, {}, kSglang0523OffCudaExperts},
};

constexpr std::array<DialectRow<std::span<const PlatformMethods>>, 6> kPlatforms = {{
    {DialectId::kNative, kNoEngine},
    {DialectId::kVllmHelpers, kNoEngine},
    {DialectId::kSglangHelpers, kNoEngine},
    {DialectId::kVllm033, kVllm033},
    {DialectId::kVllm034, kVllm034},
    {DialectId::kSglang0523, kSglang0523},
}};
static_assert(CoversEveryDialect(kPlatforms));

const PlatformMethods* Find(const Dialect& dialect, Platform platform) {
  const std::span<const PlatformMethods> rows = RowFor(dialect, kPlatforms);
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const PlatformMethods& r) { return r.platform == platform; });
  return it != rows.end() ? &*it : nullptr;
}

}  // namespace

std::string_view RegisteredMethodsText(const Dialect& dialect, Platform platform) {
  const PlatformMethods* row = Find(dialect, platform);
  return row != nullptr ? row->methods : "";
}

Status CheckPlatformReproduced(const Dialect& dialect, Platform platform,
                               std::string_view importer) {
  if (dialect.engine == Engine::kNative) return {};
  if (const PlatformMethods* row = Find(dialect, platform)) {
    if (importer.empty() || row->recorded.empty() ||
        std::find(row->recorded.begin(), row->recorded.end(), importer) != row->recorded.end()) {
      return {};
    }
    return Unsupported(fmt::format(
        "--platform {}: quantpath reproduces {} there for {} only (the formats recorded there); "
        "not {}",
        PlatformName(platform), dialect.name,
        Join(std::vector<std::string>(row->recorded.begin(), row->recorded.end()), ", "),
        importer));
  }
  std::vector<std::string> names;
  for (const PlatformMethods& row : RowFor(dialect, kPlatforms)) {
    names.emplace_back(PlatformName(row.platform));
  }
  return Unsupported(fmt::format(
      "--platform {}: quantpath reproduces {} on {} only (the platforms it was recorded on)",
      PlatformName(platform), dialect.name, Join(names, ", ")));
}

void RefuseExperts(const Dialect& dialect, Platform platform, QuantPlan* plan) {
  const PlatformMethods* row = Find(dialect, platform);
  if (row == nullptr || row->experts_refused.empty()) return;
  for (RuleGroup& group : plan->groups) {
    for (Rule& rule : group.rules) {
      // A rule whose detail names an experts method decides experts only.
      if ((rule.kinds & KindBit(SiteKind::kMoe)) == 0 ||
          rule.action.kind != ActionKind::kQuantize) {
        continue;
      }
      const std::string_view detail = rule.action.detail;
      const std::string_view method = detail.substr(0, detail.find('['));
      for (const ExpertsRefusal& refusal : row->experts_refused) {
        if (refusal.method != method) continue;
        rule.action = {ActionKind::kFail, std::nullopt, std::string(refusal.error), ""};
        break;
      }
    }
  }
}

std::span<const std::string_view> PlatformMethodGate(const Dialect& dialect, Platform platform) {
  const PlatformMethods* row = Find(dialect, platform);
  return row != nullptr ? row->cpu_gate : std::span<const std::string_view>();
}

}  // namespace quantpath
