// ConfigSources: which files are read, where the embedded description is found (and which wins),
// error messages that name the file, document order, and provenance pointers.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "quantpath/sources.h"

namespace quantpath {
namespace {

namespace fs = std::filesystem;

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

std::string Corpus(std::string_view folder) {
  return std::string(QUANTPATH_TEST_DATA) + "/corpus/" + std::string(folder);
}

// A folder under the temp directory, removed on destruction.
class TempFolder {
 public:
  TempFolder() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("quantpath-sources-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  void Write(std::string_view name, std::string_view text) const {
    std::ofstream out(path_ / name, std::ios::binary);
    out << text;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Sources whose config.json is `text`.
ConfigSources FromConfigJson(std::string_view text) {
  Result<Json> root = ParseJson(text, "config.json");
  EXPECT_TRUE(root.ok()) << root.status().message();
  std::vector<SourceFile> files;
  files.push_back({"config.json", {}, root.ok() ? *root : Json::Object()});
  return ConfigSources::FromMemory(std::move(files));
}

std::string EmbeddedWhere(const ConfigSources& sources) {
  std::optional<Located> e = sources.Embedded();
  return e ? e->where.ToString() : "(none)";
}

// ---------------------------------------------------------------------------------------------
// Which embedded description wins.

TEST(Embedded, QuantizationConfigBeatsCompressionConfig) {
  ConfigSources s = FromConfigJson(
      R"({"compression_config": {"quant_method": "compressed-tensors"},
          "quantization_config": {"quant_method": "fp8"}})");
  EXPECT_EQ(EmbeddedWhere(s), "config.json#/quantization_config");
  EXPECT_EQ(s.Embedded()->value->Find("quant_method")->string_value(), "fp8");
}

TEST(Embedded, CompressionConfigWhenQuantizationConfigIsAbsentOrNull) {
  for (
      std::string_view text :
      {R"({"compression_config": {"quant_method": "compressed-tensors"}})",
       R"({"quantization_config": null, "compression_config": {"quant_method": "compressed-tensors"}})"}) {
    ConfigSources s = FromConfigJson(text);
    EXPECT_EQ(EmbeddedWhere(s), "config.json#/compression_config") << text;
  }
}

TEST(Embedded, TopLevelBeatsNestedTextConfig) {
  ConfigSources s = FromConfigJson(
      R"({"text_config": {"quantization_config": {"quant_method": "awq"}},
          "quantization_config": {"quant_method": "fp8"}})");
  EXPECT_EQ(EmbeddedWhere(s), "config.json#/quantization_config");
}

TEST(Embedded, NestedTextConfigWhenTheTopLevelHasNone) {
  ConfigSources s = FromConfigJson(
      R"({"architectures": ["Qwen3VLForConditionalGeneration"],
          "text_config": {"hidden_size": 8, "quantization_config": {"quant_method": "fp8"}}})");
  EXPECT_EQ(EmbeddedWhere(s), "config.json#/text_config/quantization_config");
}

TEST(Embedded, TextConfigBeatsOtherSubConfigsWhateverTheirOrder) {
  ConfigSources s = FromConfigJson(
      R"({"llm_config": {"quantization_config": {"quant_method": "gptq"}},
          "text_config": {"quantization_config": {"quant_method": "fp8"}}})");
  EXPECT_EQ(EmbeddedWhere(s), "config.json#/text_config/quantization_config");
}

TEST(Embedded, OtherSubConfigsInDocumentOrder) {
  ConfigSources s = FromConfigJson(
      R"({"vision_config": {"hidden_size": 4},
          "llm_config": {"quantization_config": {"quant_method": "gptq"}},
          "thinker_config": {"quantization_config": {"quant_method": "awq"}}})");
  EXPECT_EQ(EmbeddedWhere(s), "config.json#/llm_config/quantization_config");
  // A null in a sub-config is "not given": the next one is used.
  ConfigSources n = FromConfigJson(
      R"({"llm_config": {"quantization_config": null},
          "thinker_config": {"quantization_config": {"quant_method": "awq"}}})");
  EXPECT_EQ(EmbeddedWhere(n), "config.json#/thinker_config/quantization_config");
}

TEST(Embedded, NoneWithoutADescription) {
  EXPECT_FALSE(FromConfigJson(R"({"architectures": ["LlamaForCausalLM"]})").Embedded());
  EXPECT_FALSE(FromConfigJson(R"({"quantization_config": null})").Embedded());
  EXPECT_FALSE(FromConfigJson(R"({"text_config": null})").Embedded());
}

TEST(Embedded, OnlyConfigJsonEmbeds) {
  // A standalone file is a whole description, never an "embedded" one.
  Result<Json> root = ParseJson(R"({"quantization_config": {"bits": 4}})", "quant_config.json");
  ASSERT_TRUE(root.ok());
  std::vector<SourceFile> files;
  files.push_back({"quant_config.json", {}, *root});
  ConfigSources s = ConfigSources::FromMemory(std::move(files));
  EXPECT_EQ(s.config(), nullptr);
  EXPECT_FALSE(s.Embedded());
  EXPECT_NE(s.File("quant_config.json"), nullptr);
}

// ---------------------------------------------------------------------------------------------
// Files found in a folder.

TEST(Load, RealFolderWithEmbeddedAndStandaloneDescriptions) {
  Result<ConfigSources> s = ConfigSources::Load(Corpus("TheBloke__Llama-2-13B-chat-GPTQ"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->FileNames(), (std::vector<std::string>{"config.json", "quantize_config.json"}));
  ASSERT_NE(s->config(), nullptr);
  EXPECT_EQ(EmbeddedWhere(*s), "config.json#/quantization_config");
  const SourceFile* standalone = s->File("quantize_config.json");
  ASSERT_NE(standalone, nullptr);
  EXPECT_EQ(standalone->root.Find("bits")->int_value(), 4);
  EXPECT_EQ(standalone->path.filename(), "quantize_config.json");
}

TEST(Load, RealFolderWithOnlyAStandaloneDescription) {
  Result<ConfigSources> s = ConfigSources::Load(Corpus("TheBloke__WizardCoder-15B-1.0-GPTQ"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_FALSE(s->Embedded());
  ASSERT_NE(s->File("quantize_config.json"), nullptr);
  EXPECT_TRUE(s->File("quantize_config.json")->root.Find("model_file_base_name")->is_null());
}

TEST(Load, RealFolderWithoutConfigJson) {
  Result<ConfigSources> s =
      ConfigSources::Load(Corpus("Weni__ZeroShot-Agents-Llama3-4.0.24-DPO-AWQ"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->config(), nullptr);
  EXPECT_EQ(s->text_config(), nullptr);
  EXPECT_FALSE(s->Embedded());
  EXPECT_EQ(s->FileNames(), (std::vector<std::string>{"quant_config.json"}));
}

TEST(Load, StandaloneFilesComeInTheDocumentedOrder) {
  TempFolder dir;
  // Written in reverse order; listed config.json first, then kStandaloneConfigFiles' order.
  dir.Write("quant_model_description.json", R"({"model.layers.0.mlp.down_proj.weight": "W8A8"})");
  dir.Write("hf_quant_config.json", R"({"quantization": {"quant_algo": "FP8"}})");
  dir.Write("quantization_config.json", R"({"bits": 4})");
  dir.Write("quant_config.json", R"({"w_bit": 4})");
  dir.Write("quantize_config.json", R"({"bits": 4})");
  dir.Write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  dir.Write("adapter_config.json", R"({"r": 8})");  // not a quantization file: not read
  Result<ConfigSources> s = ConfigSources::Load(dir.path());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->FileNames(),
            (std::vector<std::string>{"config.json", "quantize_config.json", "quant_config.json",
                                      "quantization_config.json", "hf_quant_config.json",
                                      "quant_model_description.json"}));
  EXPECT_EQ(s->dir(), dir.path());
  EXPECT_EQ(s->File("adapter_config.json"), nullptr);
}

TEST(Load, InvalidJsonNamesTheFile) {
  TempFolder dir;
  dir.Write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
  dir.Write("quantize_config.json", R"({"bits": 4,)");
  Result<ConfigSources> s = ConfigSources::Load(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(s.status().message(), "quantize_config.json")) << s.status().message();
  EXPECT_TRUE(Contains(s.status().message(), "not valid JSON")) << s.status().message();
}

TEST(Load, PythonNonFiniteNumbersNameFileAndPointer) {
  TempFolder dir;
  dir.Write("config.json", R"({"quantization_config": {"quant_method": "fp8", "scale": NaN}})");
  Result<ConfigSources> s = ConfigSources::Load(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "config.json#/quantization_config/scale"))
      << s.status().message();
}

TEST(Load, DuplicateKeysNameFileAndPointer) {
  TempFolder dir;
  dir.Write("hf_quant_config.json",
            R"({"quantization": {"quant_algo": "FP8", "quant_algo": "NVFP4"}})");
  Result<ConfigSources> s = ConfigSources::Load(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "hf_quant_config.json#/quantization/quant_algo"))
      << s.status().message();
}

TEST(Load, TopLevelMustBeAnObject) {
  TempFolder dir;
  dir.Write("config.json", R"([{"quant_method": "fp8"}])");
  Result<ConfigSources> s = ConfigSources::Load(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.status().message(), "config.json")) << s.status().message();
  EXPECT_TRUE(Contains(s.status().message(), "found array")) << s.status().message();
}

TEST(Load, ExcerptOnlyFolderSaysWhy) {
  Result<ConfigSources> s = ConfigSources::Load(Corpus("nvidia__Llama-3.1-405B-Instruct-FP8"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), ErrorCode::kInvalidInput);
  EXPECT_TRUE(Contains(s.status().message(), "holds only excerpts (hf_quant_config.excerpt.json)"))
      << s.status().message();
}

TEST(Load, EmptyOrMissingFolder) {
  TempFolder dir;
  Result<ConfigSources> empty = ConfigSources::Load(dir.path());
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(empty.status().message(), "no config.json"));
  EXPECT_TRUE(Contains(empty.status().message(), "quantize_config.json"));
  Result<ConfigSources> missing = ConfigSources::Load(dir.path() / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  EXPECT_TRUE(Contains(missing.status().message(), "not a model folder"));
}

// ---------------------------------------------------------------------------------------------
// Document order and provenance.

std::vector<std::string> Keys(const Json& object) {
  std::vector<std::string> keys;
  for (const Json::Member& m : object.members()) keys.push_back(m.first);
  return keys;
}

TEST(Order, KeysKeepTheirDocumentOrderInEachFile) {
  // The same description twice: sorted keys in config.json, insertion order in the standalone
  // file (see SOURCES.md).
  Result<ConfigSources> s = ConfigSources::Load(Corpus("KeshavArvindh__phi-2-GPTQ-optimum"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<std::string> embedded = Keys(*s->Embedded()->value);
  std::vector<std::string> standalone = Keys(s->File("quantize_config.json")->root);
  ASSERT_GE(embedded.size(), 3u);
  EXPECT_EQ(embedded[0], "batch_size");
  EXPECT_EQ(embedded[1], "bits");
  EXPECT_EQ(embedded[2], "block_name_to_quantize");
  EXPECT_EQ(standalone.front(), "bits");
  EXPECT_EQ(standalone[1], "dataset");
  EXPECT_EQ(standalone.back(), "quant_method");
}

TEST(Order, UnsortedKeysStayUnsorted) {
  ConfigSources s = FromConfigJson(
      R"({"quantization_config": {"z": 1, "dynamic": {"-:b": {}, "+:a": {}}, "a": 2}})");
  EXPECT_EQ(Keys(*s.Embedded()->value), (std::vector<std::string>{"z", "dynamic", "a"}));
  EXPECT_EQ(Keys(*s.Embedded()->value->Find("dynamic")), (std::vector<std::string>{"-:b", "+:a"}));
}

TEST(Provenance, PointersNameEveryValue) {
  ConfigSources s = FromConfigJson(
      R"({"text_config": {"quantization_config": {"ignore": ["lm_head", "re:.*gate$"],
                                                  "a/b": {"~x": 1}}}})");
  std::optional<Located> e = s.Embedded();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->where.file, "config.json");
  EXPECT_EQ(e->where.pointer, "/text_config/quantization_config");
  const Json& second = e->value->Find("ignore")->items()[1];
  EXPECT_EQ(Where(e->where.file, second), "config.json#/text_config/quantization_config/ignore/1");
  // RFC 6901 escapes: "/" → "~1", "~" → "~0".
  const Json* escaped = e->value->Find("a/b")->Find("~x");
  EXPECT_EQ(escaped->pointer(), "/text_config/quantization_config/a~1b/~0x");
}

TEST(Provenance, StandaloneFilePointersAreRootedInThatFile) {
  Result<ConfigSources> s = ConfigSources::Load(Corpus("KeshavArvindh__phi-2-GPTQ-optimum"));
  ASSERT_TRUE(s.ok()) << s.status().message();
  const Json& blocks =
      *s->File("quantize_config.json")->root.Find("module_name_preceding_first_block");
  EXPECT_EQ(Where("quantize_config.json", blocks.items()[1]),
            "quantize_config.json#/module_name_preceding_first_block/1");
  EXPECT_EQ(blocks.items()[1].string_value(), "model.embed_dropout");
}

TEST(Provenance, TypedAccessErrorsNameThePointer) {
  ConfigSources s = FromConfigJson(R"({"quantization_config": {"bits": "4"}})");
  Result<std::optional<int64_t>> bits = OptionalInt(*s.Embedded()->value, "bits", "config.json");
  ASSERT_FALSE(bits.ok());
  EXPECT_TRUE(Contains(bits.status().message(), "config.json#/quantization_config/bits"))
      << bits.status().message();
}

// ---------------------------------------------------------------------------------------------
// Accessors.

TEST(Accessors, TextConfigFallsBackToTheRoot) {
  ConfigSources nested = FromConfigJson(R"({"text_config": {"hidden_size": 8}, "hidden_size": 4})");
  EXPECT_EQ(nested.text_config()->Find("hidden_size")->int_value(), 8);
  ConfigSources flat = FromConfigJson(R"({"hidden_size": 4, "text_config": null})");
  EXPECT_EQ(flat.text_config()->Find("hidden_size")->int_value(), 4);
}

TEST(Accessors, CheckpointQuantizedParams) {
  ConfigSources s = FromConfigJson(R"({})");
  EXPECT_FALSE(s.checkpoint_quantized_params().has_value());
  s.set_checkpoint_quantized_params({"model.layers.0.mlp.down_proj.qweight"});
  ASSERT_TRUE(s.checkpoint_quantized_params().has_value());
  EXPECT_EQ(s.checkpoint_quantized_params()->size(), 1u);
}

// A config file that is not a regular file is an error naming it, not a missing file (config.json)
// or a skipped one (quantize_config.json); a FIFO is refused without waiting for a writer.
TEST(Load, SpecialConfigFilesAreErrorsNamingThem) {
  {
    TempFolder dir;
    ASSERT_EQ(mkfifo((dir.path() / "config.json").c_str(), 0600), 0);
    Result<ConfigSources> sources = ConfigSources::Load(dir.path());
    ASSERT_FALSE(sources.ok());
    EXPECT_NE(sources.status().message().find("config.json: not a regular file"), std::string::npos)
        << sources.status().message();
  }
  {
    TempFolder dir;
    dir.Write("config.json", R"({"architectures": ["LlamaForCausalLM"]})");
    fs::create_symlink("/dev/zero", dir.path() / "quantize_config.json");
    Result<ConfigSources> sources = ConfigSources::Load(dir.path());
    ASSERT_FALSE(sources.ok());
    EXPECT_NE(sources.status().message().find("quantize_config.json: not a regular file"),
              std::string::npos)
        << sources.status().message();
  }
  {
    TempFolder dir;
    fs::create_symlink(dir.path() / "gone.json", dir.path() / "config.json");
    Result<ConfigSources> sources = ConfigSources::Load(dir.path());
    ASSERT_FALSE(sources.ok());
    EXPECT_NE(sources.status().message().find("config.json: cannot open for reading"),
              std::string::npos)
        << sources.status().message();
  }
}

}  // namespace
}  // namespace quantpath
