// quantpath IR: the semantic description of quantization, shared by importers, planner and
// materialize.
//
// Goals: value types that say *what* a layer's numbers are (dtype, scale granularity, symmetry,
// dynamic activations) and *which* rule chose them, with canonical names. Non-goals: physical
// layouts, kernels, devices (those start at materialize), and format-specific field names.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/base.h"

namespace quantpath {

// ---------------------------------------------------------------------------------------------
// Number formats. kBF16, kFP16 and kFP32 are not quantized (IsUnquantized); kBF16 is also the
// weight dtype of a default QuantScheme, which therefore quantizes nothing.
enum class QDType : uint8_t {
  kBF16,
  kFP16,
  kFP32,
  kFP8E4M3,  // OCP e4m3fn: max 448, NaN = 0x7F/0xFF, no infinity
  kFP8E5M2,
  kINT8,
  kINT7,
  kINT6,
  kINT5,
  kINT4,
  kINT3,
  kINT2,
  kNVFP4,  // E2M1 values, E4M3 scale per 16, fp32 global scale
  kMXFP4,  // E2M1 values, E8M0 scale per 32
  kMXFP8,  // E4M3 values, E8M0 scale per 32
  kNF4,    // bitsandbytes normal-float 4
  kFP4,    // bitsandbytes fp4
  kLUTB,   // 3-bit indices into an E4M3 codebook of 8 (UE8M0 exponent) per 8 x 64 tile (vLLM)
};
inline constexpr int kQDTypeCount = 18;

struct QDTypeInfo {
  QDType type;
  std::string_view name;        // the plan --json spelling: "fp8_e4m3", "int4", "nvfp4", …
  std::string_view name_short;  // the scheme-name spelling: "fp8", "int4", "nvfp4", …
  int bits;                     // bits per stored element, scales excluded
  bool is_float;
};
const QDTypeInfo& Info(QDType type);
std::string_view QDTypeName(QDType type);
std::optional<QDType> ParseQDType(std::string_view name);  // accepts QDTypeInfo::name
// Whether `type` is a plain 16- or 32-bit float (bf16, fp16, fp32): the dtypes a layer keeps
// when it is not quantized.
constexpr bool IsUnquantized(QDType type) {
  return type == QDType::kBF16 || type == QDType::kFP16 || type == QDType::kFP32;
}

// Scale granularity.
enum class Granularity : uint8_t {
  kPerTensor,
  kPerChannel,
  kGroup,        // 1-D groups of group_size along K
  kBlock,        // 2-D blocks of block_shape = [rows (N), cols (K)]
  kPerToken,     // activations: one scale per row of X
  kTensorGroup,  // two-level NVFP4 / MX: local group scale + tensor scale
  kAttnHead,     // KV cache
};
std::string_view GranularityName(Granularity g);  // "tensor", "channel", "group", "block", …

// Activation scale computed at run time: false, true, or compressed-tensors' "local".
enum class Dynamic : uint8_t { kStatic, kDynamic, kLocal };

// How the checkpoint stores a quantized tensor: facts the loader needs but kernels do not.
enum class SourceLayout : uint8_t {
  kDense,        // plain tensor (bf16/fp16/fp32 or fp8 without packing)
  kFp8ScaleInv,  // DeepSeek-style fp8: `weight_scale_inv` multiplies the weight
  kFp8Scale,     // fp8 with `weight_scale` (+ `input_scale`)
  kAwqGemm,      // qweight [K, N/8] nibble order 0,2,4,6,1,3,5,7; qzeros; scales
  kAwqGemv,
  kGptqV1,  // qweight [K/pack, N]; qzeros stored minus one; g_idx
  kGptqV2,
  kCtPackQuantized,  // compressed-tensors weight_packed / weight_scale / weight_zero_point
  kCtNaiveQuantized,
  kCtFloatQuantized,
  kCtNvfp4PackQuantized,
  kCtMxfp4PackQuantized,  // weight_packed E2M1 pairs, weight_scale E8M0 bytes
  kModelOptFp8,
  kModelOptNvfp4,
  kModelOptW4A8Awq,
  kBnb4bit,
  kBnb8bit,
  kGptOssMxfp4,  // *_blocks / *_scales
  kModelSlim,
  // w4afp8 routed experts: signed int4 codes two per int8 along K in `weight`, one
  // `weight_scale_inv` per group (vLLM 0.34 maps them onto compressed-tensors' pack-quantized).
  kW4afp8Experts,
};
std::string_view SourceLayoutName(SourceLayout layout);

enum class ZeroPointConvention : uint8_t { kNone, kStored, kStoredMinusOne };

// Loader facts: how the checkpoint stores a tensor, beside what its numbers are. They are part of
// TensorQuant's ==, so two legs agree (the planner compares whole schemes) only when they are
// stored alike too.
struct LoadFacts {
  SourceLayout layout = SourceLayout::kDense;
  ZeroPointConvention zero_point = ZeroPointConvention::kNone;
  bool act_order = false;
  std::optional<QDType> scale_dtype;
  bool double_quant = false;  // bitsandbytes nested quantization of the absmax
  // ModelSlim 4-bit weights: two codes per int8 along the output rows (SGLang's
  // SGLANG_NPU_W4A4_NEW_PACKING, `--modelslim-packing new`) rather than one code per int8.
  bool int4_pairs = false;
  bool operator==(const LoadFacts&) const = default;
};

struct TensorQuant {
  QDType dtype = QDType::kBF16;
  Granularity granularity = Granularity::kPerTensor;
  std::optional<int64_t> group_size;
  std::optional<std::array<int64_t, 2>> block_shape;
  bool symmetric = true;
  Dynamic dynamic = Dynamic::kStatic;
  bool micro_scaled = false;
  LoadFacts load;
  bool operator==(const TensorQuant&) const = default;  // the load facts included
};

struct QuantScheme {
  TensorQuant weight;
  std::optional<TensorQuant> input;  // absent = weight-only (W4A16, …)
  bool online = false;               // quantize from high precision at load time
  // The input (and the weight, so the product is unchanged) rotated in blocks of this many
  // columns by an orthonormal Hadamard matrix before the product; 0 = no rotation.
  int64_t input_hadamard = 0;
  bool operator==(const QuantScheme&) const = default;

  // "w8a8-fp8-block128x128-dyn", "w4a16-int4-g128-asym", "w4a4-nvfp4", …
  std::string CanonicalName() const;
  bool quantized() const { return !IsUnquantized(weight.dtype); }
};

// ---------------------------------------------------------------------------------------------
// Layer sites as the planner sees them.
enum class SiteKind : uint8_t { kLinear, kLmHead, kEmbedding, kRouter, kMoe, kAttention };
std::string_view SiteKindName(SiteKind kind);  // "linear", "lm_head", …
std::optional<SiteKind> ParseSiteKind(std::string_view name);
using SiteKindSet = uint32_t;
constexpr SiteKindSet KindBit(SiteKind k) { return 1u << static_cast<unsigned>(k); }
inline constexpr SiteKindSet kAllKinds = 0x3F;

// How a layer is split across tensor-parallel ranks (a site's TpStyle, models.h; an allocation's,
// specs.h).
enum class Parallel : uint8_t {
  kReplicated,  // every rank holds the whole weight
  kColumn,      // output rows split: each fused leg is split into tp_size equal slices (or as
                // AllocationRequest::rank_leg_rows says)
  kRow,         // input columns split into tp_size equal slices; the bias lives on rank 0
};

// ---------------------------------------------------------------------------------------------
// Dialects: whose string semantics an importer reproduces.
enum class Engine : uint8_t { kNative, kVllm, kSglang };
enum class RegexFlavor : uint8_t { kPythonRe, kPythonRegexModule };
// The platform the engine runs on (--platform): which methods it registers and which kernel path
// (scheme) a layer gets. quantpath's own device is DeviceCaps (--device), a separate choice.
enum class Platform : uint8_t {
  kCuda,    // an NVIDIA GPU of compute capability 9.0, as every cuda recording assumes
  kCpu,     // x86 without AMX (SGLang: SGLANG_USE_CPU_ENGINE=1)
  kCpuAmx,  // x86 with AMX tiles and the engine's AMX kernels
  kNpu,     // Ascend (SGLang)
  kMps,     // Apple silicon (SGLang)
};
inline constexpr std::string_view kPlatformNames[] = {"cuda", "cpu", "cpu-amx", "npu", "mps"};
constexpr std::string_view PlatformName(Platform p) {
  return kPlatformNames[static_cast<size_t>(p)];
}
std::optional<Platform> ParsePlatform(std::string_view name);

// How the engine is started beyond the folder, where that changes decisions: the tensor-parallel
// size (per-rank shapes meet block and packing checks), the dtype the model is built in (methods
// that refuse it), whether speculative decoding builds the MTP / draft layers, and the platform.
struct Launch {
  int64_t tp_size = 1;                  // --tp (the engines' --tensor-parallel-size)
  std::optional<QDType> dtype;          // --dtype; nullopt is `auto`: the config's torch_dtype
  bool speculative = false;             // --speculative
  Platform platform = Platform::kCuda;  // --platform
};
inline constexpr int64_t kMaxTpSize = 4096;
// From the command line: `dtype` is `auto` or one the engines accept for --dtype (bfloat16,
// float16/half, float32/float); `tp_size` in [1, kMaxTpSize]; `platform` a kPlatformNames entry.
// An error names the option and says what is accepted.
Result<Launch> ParseLaunch(std::string_view dtype, int64_t tp_size, bool speculative,
                           std::string_view platform = "cuda");

// Which code of an engine a dialect reproduces: quantpath's own reading, the engines' helper
// functions as recorded at several commits (tests/data/oracle/cases/), or one PyPI release.
enum class DialectLine : uint8_t { kNative, kHelpers, kRelease };

// A dialect's row in the one dialect table (kDialectTable below; its lookups are in
// src/ir/dialects.cc). Releases of one engine are ordered by `rank`; per-dialect facts elsewhere
// are rows keyed by the dialect they hold from (DialectRow below), so adding a release is its row
// here plus the facts that changed.
enum class DialectId : uint8_t {
  kNative,
  kVllmHelpers,    // vllm@helpers
  kSglangHelpers,  // sglang@helpers
  kVllm033,        // vllm@0.33
  kSglang0523,     // sglang@0.5.23
  kVllm034,        // vllm@0.34
};
struct Dialect {
  DialectId id = DialectId::kNative;
  Engine engine = Engine::kNative;
  std::string_view name = "native";
  RegexFlavor regex = RegexFlavor::kPythonRe;
  DialectLine line = DialectLine::kNative;
  std::string_view version;  // the release ("0.33", "0.5.23"); empty off the release line
  uint8_t rank = 0;          // order among its engine's releases, from 1; 0 off the release line
  constexpr bool is_release() const { return line == DialectLine::kRelease; }
  constexpr size_t index() const { return static_cast<size_t>(id); }
};
inline constexpr Dialect kDialectTable[] = {
    {DialectId::kNative, Engine::kNative, "native", RegexFlavor::kPythonRe, DialectLine::kNative,
     "", 0},
    {DialectId::kVllmHelpers, Engine::kVllm, "vllm@helpers", RegexFlavor::kPythonRegexModule,
     DialectLine::kHelpers, "", 0},
    {DialectId::kSglangHelpers, Engine::kSglang, "sglang@helpers", RegexFlavor::kPythonRe,
     DialectLine::kHelpers, "", 0},
    {DialectId::kVllm033, Engine::kVllm, "vllm@0.33", RegexFlavor::kPythonRegexModule,
     DialectLine::kRelease, "0.33", 1},
    {DialectId::kSglang0523, Engine::kSglang, "sglang@0.5.23", RegexFlavor::kPythonRe,
     DialectLine::kRelease, "0.5.23", 1},
    {DialectId::kVllm034, Engine::kVllm, "vllm@0.34", RegexFlavor::kPythonRegexModule,
     DialectLine::kRelease, "0.34", 2},
};
inline constexpr size_t kDialectCount = std::size(kDialectTable);

// The row of `id` in the dialect table.
constexpr const Dialect& DialectAt(DialectId id) { return kDialectTable[static_cast<size_t>(id)]; }
// Whether `dialect` is the release `since` or a later release of the same engine: the rule
// "holds since vllm@0.33".
constexpr bool Since(const Dialect& dialect, DialectId since) {
  const Dialect& from = DialectAt(since);
  return dialect.is_release() && from.is_release() && dialect.engine == from.engine &&
         dialect.rank >= from.rank;
}
// The newest release of `engine` quantpath reproduces (native for kNative).
const Dialect& NewestRelease(Engine engine);
// "native", a table name ("vllm@helpers", "vllm@0.34"), a full release version ("vllm@0.34.0"),
// or an engine's bare name ("vllm", "sglang"): its newest release.
std::optional<Dialect> ParseDialect(std::string_view name);
// Every table name, in table order.
std::vector<std::string_view> DialectNames();
// What the command line accepts for --engine: "native", the engines' bare names (their newest
// releases), then the other table names.
std::vector<std::string_view> DialectChoices();
// The dialect of `engine`'s release `version` ("0.33.0" is vllm@0.33's), or nullopt where
// quantpath reproduces no such release.
std::optional<Dialect> ReleaseDialect(Engine engine, std::string_view version);

// A per-dialect fact: `row` holds for the dialect `since` and, when that is a release, for every
// later release of its engine until a row for a later release replaces it. Native and the helper
// dialects inherit nothing.
template <typename Row>
struct DialectRow {
  DialectId since;
  Row row;
};
// Whether a row for `since` holds for `dialect`.
constexpr bool RowHolds(DialectId since, const Dialect& dialect) {
  return since == dialect.id || Since(dialect, since);
}
// The row of `rows` that holds for `dialect`, or nullptr.
template <typename Row, size_t N>
constexpr const Row* FindDialectRow(const Dialect& dialect,
                                    const std::array<DialectRow<Row>, N>& rows) {
  const Row* found = nullptr;
  uint8_t found_rank = 0;
  for (const DialectRow<Row>& r : rows) {
    if (r.since == dialect.id) return &r.row;
    const Dialect& from = DialectAt(r.since);
    if (Since(dialect, r.since) && from.rank > found_rank) {
      found = &r.row;
      found_rank = from.rank;
    }
  }
  return found;
}
// Whether every dialect finds a row: a table for which this holds needs no row for a new release
// that changes nothing (a static_assert beside constexpr tables; RowFor checks the others).
template <typename Row, size_t N>
constexpr bool CoversEveryDialect(const std::array<DialectRow<Row>, N>& rows) {
  for (const Dialect& d : kDialectTable) {
    if (FindDialectRow(d, rows) == nullptr) return false;
  }
  return true;
}
[[noreturn]] void DialectRowMissing(const Dialect& dialect);
// The row that holds for `dialect`. A table without one is a defect of quantpath, reported and
// aborted on (the table tests walk every dialect through every importer).
template <typename Row, size_t N>
const Row& RowFor(const Dialect& dialect, const std::array<DialectRow<Row>, N>& rows) {
  const Row* row = FindDialectRow(dialect, rows);
  if (row == nullptr) DialectRowMissing(dialect);
  return *row;
}

// ---------------------------------------------------------------------------------------------
// HF→engine module-name mappers: how an engine renames the Hugging Face module names a
// quantization config lists into its own execution names (vLLM's and SGLang's WeightsMapper, as
// the model class declares it). Only renames: the engines apply no stacking and no deletion to
// config lists (vLLM passes `get_rename_mapper()`).
enum class NameRewriteKind : uint8_t {
  kSubstring,  // the first occurrence of `from` anywhere in the name
  kPrefix,     // a name starting with `from`
  kSuffix,     // a name ending with `from`
};
struct NameRewrite {
  NameRewriteKind kind = NameRewriteKind::kPrefix;
  std::string from;
  std::string to;
  bool operator==(const NameRewrite&) const = default;
};
// How an engine walks the rules of one kind (substring rules first, then prefix, then suffix).
enum class NameRewriteOrder : uint8_t {
  kEveryInOrder,      // vLLM: every matching rule, in declaration order, each on the last result
  kLongestMatchOnly,  // SGLang: only the matching rule with the longest `from`
};
struct NameMapper {
  std::string name;                // e.g. "Qwen2_5_VLForConditionalGeneration.hf_to_vllm_mapper"
  std::vector<NameRewrite> rules;  // declaration order
  NameRewriteOrder order = NameRewriteOrder::kEveryInOrder;
  bool operator==(const NameMapper&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Matchers: pure functions on module paths.
enum class MatchKind : uint8_t {
  kExact,                // path == pattern
  kLeadingPath,          // pattern is a dotted prefix of path, or one of its segments (bnb)
  kDottedSuffix,         // path == pattern or path ends with "." + pattern
  kSubstring,            // pattern in path
  kReverseSubstring,     // path in pattern
  kSubstringIgnoreCase,  // lower(pattern) in lower(path)
  kRegexMatch,           // Python re.match (anchored at the start only)
  kRegexFullMatch,       // Python re.fullmatch
  kGlob,                 // fnmatch, '*' crosses dots
  kGlobAnySegment,       // fnmatch against any single dotted segment
  kClassName,            // pattern is a case-insensitive substring of the engine class name
};
std::string_view MatchKindName(MatchKind kind);

class CompiledRegex;  // base/pyregex.h
class Glob;           // src/ir/glob.h

class Matcher {
 public:
  // Regex kinds compile `pattern` (Python syntax of `flavor`); a pattern Python would reject is an
  // error naming it.
  static Result<Matcher> Create(MatchKind kind, std::string pattern,
                                RegexFlavor flavor = RegexFlavor::kPythonRe);
  MatchKind kind() const { return kind_; }
  const std::string& pattern() const { return pattern_; }
  RegexFlavor flavor() const { return flavor_; }
  // Whether the matcher hits. `module_class` is only read by kClassName. A regex hitting its match
  // limit is an error naming the pattern, never a silent miss.
  Result<bool> Matches(std::string_view path, std::string_view module_class = {}) const;

 private:
  MatchKind kind_ = MatchKind::kExact;
  RegexFlavor flavor_ = RegexFlavor::kPythonRe;
  std::string pattern_;
  std::string folded_pattern_;  // lower-cased once, for the case-insensitive kinds
  std::shared_ptr<const CompiledRegex> regex_;
  std::shared_ptr<const Glob> glob_;  // the glob kinds, read once
};

// ---------------------------------------------------------------------------------------------
// Plans: what an importer produces.

enum class ActionKind : uint8_t { kQuantize, kSkip, kFail };
// Placeholders the planner expands in kFail messages and in RuleGroup::disagree_message, so that
// an engine's error text can name the site it was raised for.
inline constexpr std::string_view kSitePathPlaceholder = "{prefix}";  // the site's path
// The site's leg names as a Python list literal: ['q_proj', 'k_proj', 'v_proj'].
inline constexpr std::string_view kLegNamesPlaceholder = "{legs}";
struct Action {
  ActionKind kind = ActionKind::kSkip;
  std::optional<QuantScheme> scheme;  // kQuantize only
  SharedText message;                 // why, in words; the error text for kFail (placeholders)
  SharedText detail;                  // engine-facing detail (method class, matched target)
};

struct Rule {
  Matcher matcher;
  SiteKindSet kinds = kAllKinds;  // the site kinds this rule may decide
  Action action;
  Provenance source;
};

class RuleIndex;   // src/ir/rule_index.h
struct RuleTexts;  // the planner's: each rule's decision text
struct PlanTexts;  // the planner's: the texts of the decisions no rule makes

// How a fused site (legs) is resolved within a rule group.
enum class FusedPolicy : uint8_t {
  kLegsMustAgree,      // every leg resolved separately; disagreement is an error naming them
  kFusedNameThenLegs,  // the fused path first; if no rule hits it, the legs must agree
  kFusedNameOnly,      // only the execution path is matched
  kAllLegsFirstRule,   // every leg must hit some rule; the first leg's rule decides
};

struct RuleGroup {
  std::string name;         // "ignore", "targets", "dynamic", "exclude", …
  std::vector<Rule> rules;  // first hit wins
  FusedPolicy fused = FusedPolicy::kLegsMustAgree;
  // Error text when legs disagree (format-specific). With a placeholder it is the whole message
  // (an engine's own text); without, the planner appends the path and each leg's outcome.
  std::string disagree_message;
  // MoE sites are matched through expert 0's projections ("<path>.0.gate_proj", …) under
  // `fused`, as engines that look experts up by their checkpoint names do; otherwise by the
  // site's own path.
  bool moe_through_expert_legs = false;
  BuiltOnce<RuleIndex> index{};  // the planner's screen over `rules`
  BuiltOnce<RuleTexts> texts{};  // the planner's decision text of each rule
};

// What happens to site kinds the rules do not reach.
enum class KindPolicy : uint8_t {
  kUnquantized,  // never quantized (router gates, embeddings, most LM heads)
  kRules,        // rule groups apply, then the default action
  kRulesOnly,    // quantized only when a rule hits explicitly; otherwise unquantized
};

// A problem of the whole model rather than of one layer: the engine fails loading it whatever
// the layers decide (it does not detect the method, builds every layer unquantized and then meets
// the packed tensors).
inline constexpr std::string_view kTensorPlaceholder = "{tensor}";
struct ModelFinding {
  // The checkpoint tensor the load fails on ("model.layers.0.self_attn.q_proj.qweight"); empty
  // until named.
  std::string tensor;
  // Where `tensor` came from: the folder's index or shard headers, or the format's layout when the
  // folder lists no tensors (the planner then names it from the sites, NameFindingTensors).
  bool tensor_listed = false;
  std::string implied_suffix;  // the packed tensor's suffix the layout implies ("qweight")
  std::string message;         // the whole text; kTensorPlaceholder stands for `tensor`
};

// A check an engine's method runs when it creates a quantized layer's weights, on the per-rank
// shape: the pipeline splits the site as its linear class does under Launch::tp_size
// (column-parallel: output rows; row-parallel: input columns; replicated: nothing; QKV: by heads,
// a KV head replicated when there are fewer KV heads than ranks; MoE: the experts' intermediate
// size) and the dimension must be a multiple of `multiple`.
enum class ShapeDim : uint8_t {
  kInput,            // K per rank
  kOutputLegs,       // N per rank of each leg (the whole N when not fused)
  kMoeIntermediate,  // an expert's intermediate size per rank
};
enum class CheckWhen : uint8_t {
  kAlways,
  kTpAbove1,      // whenever tp > 1
  kSplit,         // tp > 1 and the layer's class splits the dimension ("required by row parallel")
  kSplitOrFused,  // kSplit, or the site has fused legs ("or enabling merged weights")
};
inline constexpr std::string_view kSizePlaceholder = "{size}";
struct ShapeCheck {
  ShapeDim dim = ShapeDim::kInput;
  int64_t multiple = 1;
  SiteKindSet kinds = KindBit(SiteKind::kLinear);
  CheckWhen when = CheckWhen::kSplit;
  bool last_leg_exempt_unsplit = false;  // a fused layer tp does not split may end ragged (vLLM)
  // vLLM's column-parallel classes allow a merged layer whose partition is not a multiple of this
  // (allow_fp8_block_shape_mismatch): the check is then not run; 0 = no exemption.
  int64_t ragged_merged_column_exempt = 0;
  std::string message;  // the engine's text; kSizePlaceholder is the per-rank size found
};

struct QuantPlan {
  std::string quant_method;  // as the files name it: "fp8", "gptq", "compressed-tensors", …
  std::string importer;      // the importer that built the plan
  Dialect dialect;
  std::vector<Provenance> sources;  // the config values the plan was built from
  std::vector<RuleGroup> groups;    // evaluated in order; the first hit of any group decides
  Action default_action;            // for sites no rule reached
  KindPolicy linear = KindPolicy::kRules;
  KindPolicy lm_head = KindPolicy::kUnquantized;
  KindPolicy moe = KindPolicy::kRules;
  KindPolicy router = KindPolicy::kUnquantized;
  KindPolicy embedding = KindPolicy::kUnquantized;
  std::optional<QuantScheme> kv_cache;  // attention sites
  // Block-wise quantizers (GPTQ, AWQ as their tools export): only linear sites inside the decoder
  // blocks are quantized — the model's own blocks when empty, else those under this block name
  // (GPTQ's block_name_to_quantize).
  std::optional<std::string> blocks_only;
  // When set, decides every attention site instead of kv_cache alone: engines that attach their
  // KV-cache method without a KV scheme (kQuantize, scheme possibly empty), or that reject the KV
  // scheme when the attention layer is built (kFail).
  std::optional<Action> attention;
  // The attention classes `attention` reaches (the engine's isinstance test: vLLM's fp8 tests
  // `Attention`, which MLAAttention does not derive from); empty = every class. An attention site
  // of another class gets no KV-cache method.
  std::vector<std::string> attention_classes;

  std::vector<std::string> notes;    // fields read and shown that change no decision, warnings
  std::vector<ModelFinding> errors;  // the engine fails loading the model (plan exits 1)
  // The engine's name for the method it runs (its `quantization`, e.g. "awq_marlin") and the model
  // dtypes that method accepts (get_supported_act_dtypes); empty where the dialect checks none.
  std::string engine_method;
  std::vector<QDType> act_dtypes;
  // Run on every site decided quantized, first failure wins (the site then errors).
  std::vector<ShapeCheck> shape_checks;
  BuiltOnce<PlanTexts> texts{};  // the planner's decision texts of the kind policies and defaults

  // Calls `apply` on the scheme of the default action and of every rule: the schemes a linear,
  // head or expert site can take.
  template <typename Fn>
  void ForEachScheme(Fn&& apply) {
    if (default_action.scheme) apply(*default_action.scheme);
    for (RuleGroup& group : groups) {
      for (Rule& rule : group.rules) {
        if (rule.action.scheme) apply(*rule.action.scheme);
      }
    }
  }

  // The attention action for a site built as `module_class` (empty: unknown, taken as reached),
  // or nullptr when there is none or it does not reach that class.
  const Action* AttentionFor(std::string_view module_class) const {
    if (!attention) return nullptr;
    if (attention_classes.empty() || module_class.empty()) return &*attention;
    for (const std::string& c : attention_classes) {
      if (c == module_class) return &*attention;
    }
    return nullptr;
  }
};

}  // namespace quantpath
